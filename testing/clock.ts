/**
 * Time control the queue's guards honour. Every guard compares stored times with the database's
 * clock (`statement_timestamp()`, `now()`): a job is due when `run_at <= now()`, a lease is
 * expired when `lease_until <= now()`. A JavaScript fake timer moves neither, and the database's
 * clock cannot be moved, so `advance(db, ms)` moves the stored times instead: every time in
 * Leasehold's tables becomes `ms` earlier, which to every guard is the same as `ms` passing.
 *
 * What it shifts (the list is checked against the catalog by clock.test.ts, so a migration that
 * adds a time column fails that test until the column is placed in one of the two lists):
 * - the jobs' run_at, claim_at, lease_until, expires_at, created_at, started_at, finished_at,
 *   updated_at. The ready rows of ready jobs follow through the trigger `jobs_ready_row` (it
 *   rewrites a ready job's row when its run_at or claim_at changes), so they are not updated
 *   here; ready rows of no ready job (normally none) are shifted directly;
 * - the lease rows' deadlines and times of claim, and the worker leases (their start and
 *   deadline), in the same statement, so the reaper (which walks lease rows by deadline and
 *   locks the worker leases that ran out) finds a lease that expired; the trigger
 *   `jobs_lease_moved_earlier` then finds every lease row already at or before its jobs'
 *   deadlines and changes nothing;
 * - the attempt history, dedupe keys (their window ends sooner), receipts and their claims, kinds, workers
 *   (their last_seen_at: a worker not seen for a while looks stale), queues, users, the audit
 *   log; the per-minute rollup and a queue's history (minutes, hours) are rebuilt on their earlier
 *   minutes and hours.
 * It does not shift the migrations journal, the application's own tables, or times inside
 * payloads, nor anything inserted after the call (a job enqueued after `advance` with
 * `delayMs: 3_600_000` is still an hour away).
 *
 * One statement, so it is atomic and runs in the caller's transaction when given one. Call it
 * between the steps of a test, not while a worker runs: an attempt in flight keeps the lease
 * deadline it read, in memory.
 */
import { runText, type Executor } from '../db/queue/executor.ts';
import { LeaseholdInputError } from '../db/queue/errors.ts';

/** Most one call may advance: ten years. */
export const MAX_ADVANCE_MS = 10 * 365 * 24 * 3600 * 1000;

/** Every time column in schema `leasehold` that `advance` shifts, by table (tests compare with the catalog). */
export const SHIFTED_COLUMNS: Readonly<Record<string, readonly string[]>> = {
  jobs: ['run_at', 'claim_at', 'lease_until', 'expires_at', 'created_at', 'started_at', 'finished_at', 'updated_at'],
  ready_jobs: ['claim_at', 'run_at'],
  leases: ['lease_until', 'created_at'],
  worker_leases: ['since', 'lease_until'],
  job_attempts: ['started_at', 'ended_at'],
  dedupe_keys: ['created_at', 'expires_at'],
  receipts: ['created_at'],
  receipt_claims: ['claimed_at'],
  kinds: ['first_seen_at', 'last_seen_at', 'live_at'],
  workers: ['started_at', 'last_seen_at'],
  queues: ['paused_at', 'created_at', 'updated_at'],
  users: ['created_at', 'updated_at'],
  audit_log: ['at'],
  kind_redactions: ['added_at'],
  kind_search_paths: ['added_at'],
  finished_rollup: ['minute'],
  // A queue's history (db/queue/queue-history.ts): rebuilt on earlier minutes and hours, as the rollup.
  queue_minutes: ['minute'],
  queue_hours: ['hour'],
  // A rate's window and a RateLimitedError's pause are queue time; the declared and set times move along.
  limits: ['declared_at', 'set_at', 'paused_until'],
  limit_starts: ['at'],
  // A grouped job's ready row, and its group's turn (db/schema-groups.ts).
  grouped_ready_jobs: ['claim_at', 'run_at'],
  ready_groups: ['turn_at', 'idle_since'],
  // When an admin or operator last changed a group's limits: moves along, as a limit's set_at.
  group_limits: ['set_at'],
  // A schedule's ticks are queue time: advanced, the ticks of the advanced time are due (the
  // missed-tick policy says which run), and its tick records move with its jobs.
  schedules: ['ticks_after', 'next_tick_at', 'last_tick_at', 'declared_at', 'created_at', 'updated_at'],
  schedule_ticks: ['tick_at', 'at'],
  // When a uniqueness key was last taken: moves with its holder's created_at.
  unique_keys: ['taken_at'],
  // A result's and a progress report's times move with their job.
  job_results: ['stored_at'],
  job_progress: ['updated_at'],
};

/**
 * Time columns deliberately left alone, not queue time: when migrations were applied, the
 * dashboard's sign-in state (failed guesses and session versions are security bookkeeping a
 * test of the queue's clock has no business moving), and when an admin set an alert threshold.
 */
export const UNSHIFTED_COLUMNS: Readonly<Record<string, readonly string[]>> = {
  migrations: ['applied_at'],
  sign_in_throttle: ['first_failure_at', 'last_failure_at', 'blocked_until', 'audit_minute'],
  session_versions: ['updated_at'],
  // When an admin set a backlog-alert threshold: shown beside it, read by nothing that runs jobs.
  queue_alerts: ['set_at'],
};

/** A CTE shifting the rows of a ready table (`ready_jobs`, `grouped_ready_jobs`) whose job is not ready with them. */
const strayReady = (name: string, table: string) => `${name} AS (
    UPDATE leasehold.${table} r SET claim_at = r.claim_at - d.by, run_at = r.run_at - d.by FROM d
    WHERE NOT EXISTS (
      SELECT 1 FROM leasehold.jobs j
      WHERE j.id = r.id AND j.state = 'ready' AND j.queue = r.queue AND j.claim_at = r.claim_at
    )
    RETURNING 1
  )`;

/**
 * A queue's history table (queue_minutes, queue_hours): taken out and put back on the earlier
 * whole minute or hour (its key and CHECK), summing outcomes and keeping the highest sample.
 */
const historyShift = (table: 'minutes' | 'hours', column: 'minute' | 'hour') => `${table}_out AS (
    DELETE FROM leasehold.queue_${table} RETURNING *
  ),
  ${table}_in AS (
    INSERT INTO leasehold.queue_${table} (${column}, queue, done, dead, cancelled, failed_attempts,
      ready, scheduled, retrying, running, lease_expired, oldest_ready_seconds)
    SELECT date_bin('1 ${column}', o.${column} - d.by, '2000-01-01 00:00:00+00'::timestamptz), o.queue, sum(o.done),
      sum(o.dead), sum(o.cancelled), sum(o.failed_attempts), max(o.ready), max(o.scheduled), max(o.retrying),
      max(o.running), max(o.lease_expired), max(o.oldest_ready_seconds)
    FROM ${table}_out o, d
    GROUP BY 1, 2
    RETURNING 1
  )`;

const SHIFT = `
  WITH d AS (SELECT make_interval(secs => $1::float8 / 1000) AS by),
  leases AS (
    UPDATE leasehold.leases l SET lease_until = l.lease_until - d.by, created_at = l.created_at - d.by FROM d RETURNING 1
  ),
  worker_leases AS (
    UPDATE leasehold.worker_leases w SET since = w.since - d.by, lease_until = w.lease_until - d.by FROM d RETURNING 1
  ),
  -- Ready rows of no ready job; the others move with their jobs, through the trigger.
  ${strayReady('stray_ready', 'ready_jobs')},
  ${strayReady('stray_grouped', 'grouped_ready_jobs')},
  ready_groups AS (
    UPDATE leasehold.ready_groups g SET turn_at = g.turn_at - d.by, idle_since = g.idle_since - d.by FROM d RETURNING 1
  ),
  jobs AS (
    UPDATE leasehold.jobs j SET
      run_at = j.run_at - d.by, claim_at = j.claim_at - d.by, lease_until = j.lease_until - d.by,
      expires_at = j.expires_at - d.by, created_at = j.created_at - d.by, started_at = j.started_at - d.by,
      finished_at = j.finished_at - d.by, updated_at = j.updated_at - d.by
    FROM d RETURNING 1
  ),
  attempts AS (
    UPDATE leasehold.job_attempts a SET started_at = a.started_at - d.by, ended_at = a.ended_at - d.by FROM d RETURNING 1
  ),
  dedupe AS (
    UPDATE leasehold.dedupe_keys k SET created_at = k.created_at - d.by, expires_at = k.expires_at - d.by FROM d RETURNING 1
  ),
  receipts AS (UPDATE leasehold.receipts r SET created_at = r.created_at - d.by FROM d RETURNING 1),
  receipt_claims AS (
    UPDATE leasehold.receipt_claims c SET claimed_at = c.claimed_at - d.by FROM d RETURNING 1
  ),
  kinds AS (
    UPDATE leasehold.kinds k SET first_seen_at = k.first_seen_at - d.by, last_seen_at = k.last_seen_at - d.by,
      live_at = k.live_at - d.by FROM d
    RETURNING 1
  ),
  workers AS (
    UPDATE leasehold.workers w SET started_at = w.started_at - d.by, last_seen_at = w.last_seen_at - d.by FROM d
    RETURNING 1
  ),
  queues AS (
    UPDATE leasehold.queues q SET paused_at = q.paused_at - d.by, created_at = q.created_at - d.by,
                                  updated_at = q.updated_at - d.by FROM d
    RETURNING 1
  ),
  users AS (
    UPDATE leasehold.users u SET created_at = u.created_at - d.by, updated_at = u.updated_at - d.by FROM d RETURNING 1
  ),
  audit AS (UPDATE leasehold.audit_log a SET at = a.at - d.by FROM d RETURNING 1),
  redactions AS (UPDATE leasehold.kind_redactions r SET added_at = r.added_at - d.by FROM d RETURNING 1),
  search_paths AS (UPDATE leasehold.kind_search_paths r SET added_at = r.added_at - d.by FROM d RETURNING 1),
  limits AS (
    UPDATE leasehold.limits m SET declared_at = m.declared_at - d.by, set_at = m.set_at - d.by,
      paused_until = m.paused_until - d.by FROM d
    RETURNING 1
  ),
  limit_starts AS (UPDATE leasehold.limit_starts s SET at = s.at - d.by FROM d RETURNING 1),
  group_limits AS (UPDATE leasehold.group_limits g SET set_at = g.set_at - d.by FROM d RETURNING 1),
  unique_keys AS (UPDATE leasehold.unique_keys u SET taken_at = u.taken_at - d.by FROM d RETURNING 1),
  job_results AS (UPDATE leasehold.job_results r SET stored_at = r.stored_at - d.by FROM d RETURNING 1),
  job_progress AS (UPDATE leasehold.job_progress p SET updated_at = p.updated_at - d.by FROM d RETURNING 1),
  -- ticks_after stays whole milliseconds: the pass hands it back as a JavaScript Date.
  schedules AS (
    UPDATE leasehold.schedules s SET ticks_after = date_trunc('milliseconds', s.ticks_after - d.by),
      next_tick_at = s.next_tick_at - d.by, last_tick_at = s.last_tick_at - d.by, declared_at = s.declared_at - d.by,
      created_at = s.created_at - d.by, updated_at = s.updated_at - d.by FROM d
    RETURNING 1
  ),
  -- A tick's key is (schedule, tick): taken out and put back shifted, as the rollup's minutes.
  ticks_out AS (DELETE FROM leasehold.schedule_ticks RETURNING *),
  ticks_in AS (
    INSERT INTO leasehold.schedule_ticks (schedule, tick_at, outcome, job_id, missed_count, at)
    SELECT o.schedule, o.tick_at - d.by, o.outcome, o.job_id, o.missed_count, o.at - d.by FROM ticks_out o, d
    RETURNING 1
  ),
  -- The rollup's key is its minute: shifting rows one by one would collide with their
  -- neighbours, and a shifted minute must still be a whole minute. So the rows are taken out
  -- and put back summed on their earlier minutes (the GROUP BY reads every deleted row first).
  rollup_out AS (DELETE FROM leasehold.finished_rollup RETURNING *),
  rollup_in AS (
    INSERT INTO leasehold.finished_rollup (minute, queue, kind, state, attempts, shard, jobs)
    SELECT date_trunc('minute', o.minute - d.by), o.queue, o.kind, o.state, o.attempts, o.shard, sum(o.jobs)::int
    FROM rollup_out o, d
    GROUP BY 1, 2, 3, 4, 5, 6
    RETURNING 1
  ),
  ${historyShift('minutes', 'minute')},
  ${historyShift('hours', 'hour')}
  SELECT (SELECT count(*) FROM jobs)::int AS jobs, (SELECT count(*) FROM leases)::int AS leases,
         (SELECT count(*) FROM attempts) + (SELECT count(*) FROM dedupe) + (SELECT count(*) FROM receipts)
         + (SELECT count(*) FROM receipt_claims) + (SELECT count(*) FROM kinds) + (SELECT count(*) FROM workers) + (SELECT count(*) FROM queues)
         + (SELECT count(*) FROM users) + (SELECT count(*) FROM audit) + (SELECT count(*) FROM redactions) + (SELECT count(*) FROM search_paths)
         + (SELECT count(*) FROM limits) + (SELECT count(*) FROM limit_starts) + (SELECT count(*) FROM group_limits)
         + (SELECT count(*) FROM schedules) + (SELECT count(*) FROM ticks_in) + (SELECT count(*) FROM unique_keys)
         + (SELECT count(*) FROM job_results) + (SELECT count(*) FROM job_progress)
         + (SELECT count(*) FROM rollup_in) + (SELECT count(*) FROM minutes_in) + (SELECT count(*) FROM hours_in)
         + (SELECT count(*) FROM stray_ready) + (SELECT count(*) FROM worker_leases) AS others`;

export interface AdvanceResult {
  /** Jobs whose times moved (every job in the database). */
  jobs: number;
  /** Lease rows whose deadlines moved. */
  leases: number;
}

/**
 * Makes `ms` milliseconds pass for Leasehold's guards: every time stored in its tables becomes
 * `ms` earlier, so a job scheduled an hour out is due after `advance(db, 3_600_000)`, a retry's
 * backoff is over, a lease expires, a max age is reached. `ms` is a number from 0 to ten years.
 */
export async function advance(executor: Executor, ms: number): Promise<AdvanceResult> {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0 || ms > MAX_ADVANCE_MS) {
    throw new LeaseholdInputError('advance', [
      `ms: a number of milliseconds from 0 to ${MAX_ADVANCE_MS} (ten years), got ${String(ms)}`,
    ]);
  }
  const [row] = await runText<{ jobs: number; leases: number }>(executor, SHIFT, [ms]);
  return { jobs: row?.jobs ?? 0, leases: row?.leases ?? 0 };
}
