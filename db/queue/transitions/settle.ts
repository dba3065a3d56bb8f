/**
 * The settlements of an attempt that holds its lease: the batch acknowledgement (running →
 * done), a failure (running → ready | dead | cancelled), a release (running → ready) and the
 * heartbeat (the deadline only). db/queue/transitions.ts is the face; only it imports this one.
 */
import { sql, type SQL } from 'drizzle-orm';
import { noAttemptsLeftSql } from '../attempt-cap.ts';
import { recordAttempts } from '../history.ts';
import { END_LEASE, leaseCountdown, leaseHeld, rollup, workerLeaseCovers } from './guards.ts';

// ---------------------------------------------------------------------------------------------
// running → done: the batch acknowledgement

/** The channel a job enqueued `awaitable` is announced on when it ends (payload: ids joined by commas). */
export const JOB_ENDED_CHANNEL = 'leasehold_job_ended';

const STORE_RESULTS = `,
  stored_results AS (
    INSERT INTO leasehold.job_results AS r (job_id, attempt, result, marker, bytes, stored_at)
    SELECT d.id, d.attempts, x.result, x.marker, x.bytes, statement_timestamp()
    FROM done d JOIN jsonb_to_recordset($3::jsonb) AS x(id uuid, result jsonb, marker text, bytes int) ON x.id = d.id
    ON CONFLICT (job_id) DO UPDATE SET attempt = excluded.attempt, result = excluded.result, marker = excluded.marker,
                                       bytes = excluded.bytes, stored_at = excluded.stored_at
    RETURNING 1
  )`;

/** A SELECT CTE runs only when read: the acknowledgement's filter reads it once (a one-time filter). */
const NOTIFIED = '(SELECT n FROM ended_notified) IS NOT NULL AND ';

/** One NOTIFY per 200 ended awaitable jobs of `cte` (payload under NOTIFY's 8,000 bytes). */
const NOTIFY_ENDED = (cte: string, awaitable: string) => `,
  ended_notified AS (
    SELECT count(pg_notify('${JOB_ENDED_CHANNEL}', ids)) AS n FROM (
      SELECT string_agg(e.id::text, ',') AS ids
      FROM (SELECT c.id, (row_number() OVER ()) / 200 AS part FROM ${cte} c WHERE c.id = ANY(${awaitable})) e
      GROUP BY e.part
    ) parts
  )`;

/**
 * Completes the jobs `$1` leased under token `$2` whose lease still holds; returns the ids it
 * did not complete (normally none: reading back a thousand completed ids cost more client CPU
 * than the UPDATE cost the database). Found by primary key; the update is HOT (no index names
 * a column it sets), and the lease row is counted down once per statement.
 */
export const COMPLETE_MANY = completeManyText(false, false);

/**
 * COMPLETE_MANY with what some completed attempts return (`results`: $3, a JSON array of
 * `{ id, result, marker, bytes }`, stored in `job_results` for the jobs this statement completed,
 * so a job is done with its result or not done) and a wake-up for the jobs enqueued `awaitable`
 * (`notify`: $4 their ids, $3 without results; one NOTIFY on JOB_ENDED_CHANNEL per 200 ids, payload the ids joined
 * by commas). Without either, the text is COMPLETE_MANY's, byte for byte.
 */
export function completeManyText(results: boolean, notify: boolean): string {
  return `
  WITH done AS (
    UPDATE leasehold.jobs j SET state = 'done', ${END_LEASE},
                      finished_at = statement_timestamp(), updated_at = statement_timestamp()
    WHERE j.id = ANY($1::uuid[]) AND ${leaseHeld('j', '$2::uuid')}
    RETURNING j.id, j.queue, j.kind, j.state, j.attempts, $2::uuid AS token
  ),${leaseCountdown('done', '$2::uuid')},${rollup('done')}${results ? STORE_RESULTS : ''}${notify ? NOTIFY_ENDED('done', results ? '$4::uuid[]' : '$3::uuid[]') : ''}
  SELECT w.id FROM unnest($1::uuid[]) AS w(id) WHERE ${notify ? NOTIFIED : ''}NOT EXISTS (SELECT 1 FROM done d WHERE d.id = w.id)`;
}

// ---------------------------------------------------------------------------------------------
// running → ready | dead | cancelled: a failed attempt

/**
 * Ends the attempt (`id`, `token`) as failed: `ready` after `delaySeconds` when `retry` and
 * attempts and max age allow, else `endState` (class `expired` when only the max age stood
 * in the way). The budget is decided here, in the guarded row: the charged attempts
 * (`attempts - released`) against `least(max_attempts, cap)`, `cap` being the handler's
 * (the worker passes min(job's, handler's)); spent, the error gets noAttemptsLeft's sentence.
 *
 * @internal
 */
export function failStatement(p: {
  id: string;
  token: string;
  retry: boolean;
  /** The attempt cap besides the job's own max_attempts (the handler's). */
  cap: number;
  delaySeconds: number;
  endState: 'dead' | 'cancelled';
  failureClass: string;
  error: string;
  /** The attempt's error detail as JSON text, or null (written to its job_attempts row only). */
  detail: string | null;
}): SQL {
  const next = sql`(statement_timestamp() + make_interval(secs => ${p.delaySeconds}::float8))`;
  const expired = sql`(${p.retry}::boolean AND coalesce(j.expires_at <= ${next}, false))`;
  const cap = sql`least(j.max_attempts, ${p.cap}::int)`;
  const spent = sql`(j.attempts - j.released >= ${cap})`;
  const retrying = sql`(${p.retry}::boolean AND NOT ${spent} AND NOT coalesce(j.expires_at <= ${next}, false))`;
  return sql`
    WITH settled AS (
      UPDATE leasehold.jobs j SET
        state = CASE WHEN ${retrying} THEN 'ready' ELSE ${p.endState}::text END,
        failure_class = CASE WHEN ${expired} AND NOT ${spent} THEN 'expired' ELSE ${p.failureClass} END,
        last_error = CASE WHEN ${p.retry}::boolean AND ${spent} THEN ${p.error} || '; ' || ${noAttemptsLeftSql(sql`j.attempts - j.released`, cap)}
                          WHEN ${expired} THEN ${p.error} || ' (max age reached: not retried)' ELSE ${p.error} END,
        run_at = CASE WHEN ${retrying} THEN ${next} ELSE j.run_at END,
        claim_at = CASE WHEN ${retrying} THEN ${next} - (j.run_at - j.claim_at) ELSE j.claim_at END,
        ${sql.raw(END_LEASE)},
        finished_at = CASE WHEN ${retrying} THEN NULL ELSE statement_timestamp() END,
        updated_at = statement_timestamp()
      FROM (SELECT ${p.token}::uuid AS token) t
      WHERE j.id = ${p.id}::uuid AND ${sql.raw(leaseHeld('j', 't.token'))}
      RETURNING j.id, j.attempts, j.queue, j.kind, j.worker_id, j.started_at, j.state, j.failure_class, j.run_at, t.token,
                j.options->'awaitable' = 'true'::jsonb AS awaitable
    ),
    history AS (${recordAttempts('failed', sql`s.token`, sql`s.failure_class`, sql`${p.error}`, sql`${p.detail}::jsonb`)}),
    ${sql.raw(leaseCountdown('settled'))},${sql.raw(rollup('settled'))},
    -- A job enqueued awaitable that ended here wakes its waiters (waitForJob).
    ended AS (SELECT count(pg_notify('${sql.raw(JOB_ENDED_CHANNEL)}', id::text)) AS n FROM settled WHERE state <> 'ready' AND awaitable)
    SELECT state, failure_class, run_at, (SELECT n FROM ended) AS notified FROM settled`;
}

// ---------------------------------------------------------------------------------------------
// running → ready: a release (graceful shutdown)

/**
 * What a release and a snooze set alike: `ready` after `delaySeconds`, the attempt not charged
 * (`released` grows by one), the sort key moved with the run time.
 */
function handedBack(delaySeconds: number): SQL {
  const at = sql`statement_timestamp() + make_interval(secs => ${delaySeconds}::float8)`;
  return sql`
        state = 'ready',
        released = j.released + 1,
        run_at = ${at},
        claim_at = ${at} - (j.run_at - j.claim_at),`;
}

/**
 * Gives the job back: `ready` after `delaySeconds`, the attempt not charged (`released` grows
 * by one, so the budget `attempts - released` is what it was before the claim, while the
 * attempt number, the fence, still only grows). Never refused for the budget: the job was
 * ready with an attempt left when it was claimed, so it still has that attempt.
 *
 * @internal
 */
export function releaseStatement(p: { id: string; token: string; delaySeconds: number; reason: string }): SQL {
  return sql`
    WITH settled AS (
      UPDATE leasehold.jobs j SET${handedBack(p.delaySeconds)}
        ${sql.raw(END_LEASE)}, updated_at = statement_timestamp()
      FROM (SELECT ${p.token}::uuid AS token) t
      WHERE j.id = ${p.id}::uuid AND ${sql.raw(leaseHeld('j', 't.token'))}
      RETURNING j.id, j.attempts, j.queue, j.kind, j.worker_id, j.started_at, t.token
    ),
    history AS (${recordAttempts('released', sql`s.token`, sql`NULL`, sql`${p.reason}`)}),
    ${sql.raw(leaseCountdown('settled'))}
    SELECT id FROM settled`;
}

// ---------------------------------------------------------------------------------------------
// running → ready: a snooze (docs/jobs.md, "Snooze")

/**
 * The handler asked to wait `ms` without spending the attempt: `ready` after `ms`, `released`
 * grows by one (the budget `attempts - released` is what it was before the claim), and the
 * job's snooze counters (`options.snoozes`, `options.snoozedMs`) grow, which the back-off
 * exponent leaves out. Refused, and nothing written, when the snooze would pass the cap
 * (`maxCount` snoozes, `maxTotalMs` in all): `held` is then true with no row settled, and the
 * caller fails the attempt instead (snoozeIfLeaseHeld's `snooze_cap`). `held` false: the lease
 * was lost.
 *
 * @internal
 */
export function snoozeStatement(p: {
  id: string;
  token: string;
  ms: number;
  maxCount: number;
  maxTotalMs: number;
}): SQL {
  const snoozes = sql`coalesce((j.options->>'snoozes')::int, 0)`;
  const snoozedMs = sql`coalesce((j.options->>'snoozedMs')::bigint, 0)`;
  return sql`
    WITH settled AS (
      UPDATE leasehold.jobs j SET${handedBack(p.ms / 1000)}
        options = coalesce(j.options, '{}'::jsonb)
                  || jsonb_build_object('snoozes', ${snoozes} + 1, 'snoozedMs', ${snoozedMs} + ${p.ms}::bigint),
        ${sql.raw(END_LEASE)}, updated_at = statement_timestamp()
      FROM (SELECT ${p.token}::uuid AS token) t
      WHERE j.id = ${p.id}::uuid AND ${sql.raw(leaseHeld('j', 't.token'))}
        AND ${snoozes} < ${p.maxCount}::int AND ${snoozedMs} + ${p.ms}::bigint <= ${p.maxTotalMs}::bigint
      RETURNING j.id, j.attempts, j.queue, j.kind, j.worker_id, j.started_at, t.token
    ),
    history AS (${recordAttempts('snoozed', sql`s.token`, sql`NULL`, sql`${`snoozed for ${p.ms} ms`}`)}),
    ${sql.raw(leaseCountdown('settled'))}
    SELECT (SELECT count(*) FROM settled)::int AS snoozed,
           EXISTS (SELECT 1 FROM leasehold.jobs j, (SELECT ${p.token}::uuid AS token) t
                   WHERE j.id = ${p.id}::uuid AND ${sql.raw(leaseHeld('j', 't.token'))}) AS held,
           (SELECT jsonb_build_object('snoozes', ${snoozes}, 'snoozedMs', ${snoozedMs}) FROM leasehold.jobs j WHERE j.id = ${p.id}::uuid) AS counters`;
}

// ---------------------------------------------------------------------------------------------
// running → running: heartbeats (the lease deadline only; no state change)

/**
 * Extends the leases of (`ids`[i], `tokens`[i]) still held to now() + `leaseSeconds`. A HOT
 * update of the job rows only: the lease row keeps its earlier deadline, which the reaper
 * moves when it reaches it (`greatest()`: a heartbeat never shortens a lease).
 *
 * Why this shape: a plain `UPDATE … FROM unnest(…)` over all of a worker's leases waits on any
 * one row another transaction has locked (an application's `SELECT … FOR UPDATE`, a psql
 * session, a bulk cancel), up to the statement timeout, and meanwhile none of the other leases
 * is renewed: they expire and are reaped (security review B2). So the rows are locked first
 * with `FOR UPDATE SKIP LOCKED` (a materialized CTE: a fence, locking once), and only those are
 * updated; the UPDATE re-checks the lease on the locked row. A row skipped because it is
 * locked is not a lost lease: the final SELECT reads every requested row by a plain MVCC read
 * (the statement's snapshot, which never waits on a lock) and reports for each pair whether it
 * was renewed (`lease_until`, with `remaining_ms` = lease_until − statement_timestamp() in
 * database time), or still held but not renewed this round (`held`), or neither (lost).
 *
 * @internal
 */
export function heartbeatStatement(ids: string[], tokens: string[], leaseSeconds: number): SQL {
  return sql`
    WITH requested AS (
      SELECT i.id, i.token FROM unnest(${sql.param(ids)}::uuid[], ${sql.param(tokens)}::uuid[]) AS i(id, token)
    ),
    locked AS MATERIALIZED (
      SELECT j.id, r.token FROM leasehold.jobs j JOIN requested r ON j.id = r.id
      WHERE ${sql.raw(leaseHeld('j', 'r.token'))}
      FOR UPDATE OF j SKIP LOCKED
    ),
    renewed AS (
      UPDATE leasehold.jobs j SET lease_until = greatest(j.lease_until, statement_timestamp() + make_interval(secs => ${leaseSeconds}::float8)),
                        updated_at = statement_timestamp()
      FROM locked l
      WHERE j.id = l.id AND ${sql.raw(leaseHeld('j', 'l.token'))}
      RETURNING j.id, l.token, j.lease_until
    )
    SELECT r.id, r.token, n.lease_until,
           (extract(epoch FROM n.lease_until - statement_timestamp()) * 1000)::float8 AS remaining_ms,
           (s.id IS NOT NULL) AS held
    FROM requested r
    LEFT JOIN renewed n ON n.id = r.id AND n.token = r.token
    LEFT JOIN leasehold.jobs s ON s.id = r.id AND ${sql.raw(leaseHeld('s', 'r.token'))}`;
}

/**
 * A worker's heartbeat (workers/lease-keeper.ts): renews its worker lease, one row however many
 * jobs it runs, and says for each of its attempts (`ids`[i], `tokens`[i]) whether the job still
 * runs under that token and whether its claim is covered by the worker lease (claimed since the
 * lease started, not detached). An attempt not covered is renewed per job (heartbeatStatement).
 *
 * The worker lease is renewed only while more than `marginSeconds` of it is left, and a lease
 * that ran out is never renewed: the next heartbeat starts a new one (`since` = now), which
 * covers only claims made from then on. So a renewal whose commit comes late cannot revive a
 * lease a settlement or the reaper already saw end: it started at least the margin before the
 * end (the worker's heartbeat round gives up by then). Inside the margin, it is left to run
 * out, and the worker renews its attempts per job meanwhile.
 *
 * While a worker of a release before worker leases is live (registered in `workers` with no
 * worker lease), its reaper may run, and it knows only the lease rows and the jobs' own
 * deadlines: then the lease rows of these claims move to the worker lease's deadline too (one
 * write per claim, only then). `detach` lists claims whose attempts the worker gave up unsettled:
 * the worker lease stops covering them.
 *
 * `reconcile` is set for a while after a claim of this worker failed: the claim may have
 * committed with its answer lost (the connection cut after the commit), and then its jobs run
 * under a claim the worker does not know, which the worker lease would cover while the worker
 * lives. Such a beat detaches the worker's covered claims that still have jobs running, whose
 * own deadline (the claim's lease) has passed, and whose token is none of `known` (every
 * attempt the worker holds): a claim answered normally is known well within its lease, so only
 * lost ones match. Their jobs' own deadlines then decide and the reaper ends them. Only such a
 * beat reads the worker's lease rows (no index leads there; the table holds the live claims).
 *
 * @internal
 */
export function workerHeartbeatStatement(p: {
  workerId: string;
  leaseSeconds: number;
  marginSeconds: number;
  liveSeconds: number;
  ids: string[];
  tokens: string[];
  detach: string[];
  reconcile?: { known: string[] } | undefined;
}): SQL {
  const until = sql`(statement_timestamp() + make_interval(secs => ${p.leaseSeconds}::float8))`;
  const margin = sql`(statement_timestamp() + make_interval(secs => ${p.marginSeconds}::float8))`;
  return sql`
    WITH wl AS (
      INSERT INTO leasehold.worker_leases AS w (worker_id, since, lease_until)
      VALUES (${p.workerId}, statement_timestamp(), ${until})
      ON CONFLICT (worker_id) DO UPDATE SET
        since = CASE WHEN w.lease_until > statement_timestamp() THEN w.since ELSE excluded.since END,
        lease_until = CASE WHEN w.lease_until > ${margin} THEN greatest(w.lease_until, excluded.lease_until)
                           WHEN w.lease_until > statement_timestamp() THEN w.lease_until
                           ELSE excluded.lease_until END
      RETURNING w.worker_id, w.since, w.lease_until,
                (extract(epoch FROM w.lease_until - statement_timestamp()) * 1000)::float8 AS remaining_ms,
                (w.lease_until >= ${until}) AS renewed
    ),
    requested AS (
      SELECT i.id, i.token FROM unnest(${sql.param(p.ids)}::uuid[], ${sql.param(p.tokens)}::uuid[]) AS i(id, token)
    ),
    detached AS (
      UPDATE leasehold.leases l SET detached = true
      WHERE l.token = ANY(${sql.param(p.detach)}::uuid[]) AND l.worker_id = ${p.workerId} AND NOT l.detached
      RETURNING l.token, l.queue
    ),
    lost AS (
      UPDATE leasehold.leases l SET detached = true
      FROM wl
      WHERE ${p.reconcile ? sql`true` : sql`false`} AND l.worker_id = ${p.workerId} AND NOT l.detached AND l.running > 0
        AND l.created_at >= wl.since AND l.lease_until <= statement_timestamp()
        AND l.token <> ALL(${sql.param(p.reconcile?.known ?? [])}::uuid[])
      RETURNING l.token
    ),
    old_reaper AS (
      SELECT EXISTS (
        SELECT 1 FROM leasehold.workers o
        WHERE o.last_seen_at >= statement_timestamp() - make_interval(secs => ${p.liveSeconds}::float8)
          AND o.id <> ${p.workerId}
          AND NOT EXISTS (SELECT 1 FROM leasehold.worker_leases x WHERE x.worker_id = o.id)
      ) AS live
    ),
    shielded AS (
      UPDATE leasehold.leases l SET lease_until = wl.lease_until
      FROM wl, old_reaper
      WHERE old_reaper.live AND l.token IN (SELECT DISTINCT token FROM requested)
        AND ${sql.raw(workerLeaseCovers('l', 'wl'))} AND l.lease_until < wl.lease_until
        AND l.token NOT IN (SELECT token FROM detached)
      RETURNING 1
    )
    SELECT r.id, r.token, (j.id IS NOT NULL) AS running,
           (j.id IS NOT NULL AND l.token IS NOT NULL AND r.token NOT IN (SELECT token FROM detached)) AS covered,
           wl.lease_until, wl.remaining_ms, wl.renewed, (SELECT count(*) FROM lost)::int AS lost
    FROM requested r CROSS JOIN wl
    LEFT JOIN leasehold.jobs j ON j.id = r.id AND j.state = 'running' AND j.lease_token = r.token
    LEFT JOIN leasehold.leases l ON l.token = r.token AND l.queue = j.queue AND ${sql.raw(workerLeaseCovers('l', 'wl'))}
    UNION ALL
    -- With no attempt in flight, one row still says what the worker lease is.
    SELECT NULL::uuid, NULL::uuid, false, false, wl.lease_until, wl.remaining_ms, wl.renewed,
           (SELECT count(*) FROM lost)::int
    FROM wl WHERE NOT EXISTS (SELECT 1 FROM requested)`;
}
