/**
 * Transitions: every statement that writes a job's state, and nothing else does. The callers
 * (claim.ts, settle.ts, reap.ts, operator.ts) validate input, pick parameters and map rows;
 * the SQL is here, with its guards written once.
 *
 * Invariants (docs/contract.md, docs/design/schema-v1.md):
 * - every transition is a compare-and-set on the state it read: `state = 'ready'` for a
 *   claim, LEASE_HELD (running, this token, deadline not passed) for a settlement, an expired
 *   deadline for the reaper, a terminal state for an operator's retry;
 * - every ready job has a `ready_jobs` row. Enqueue writes it (the INSERT trigger
 *   `jobs_inserted_ready_rows`); every UPDATE into `ready` writes it through the row trigger
 *   `jobs_ready_row`, ours and anyone's. A claim deletes the rows it takes; a row whose job
 *   is not ready (cancelled, rescheduled) is skipped by the claim's guard and deleted;
 * - every running job is in the `leases` row of its claim (token, queue), whose deadline is
 *   never later than the job's own and whose `running` counts the jobs not yet settled. Each
 *   statement that ends attempts counts them down (LEASE_COUNTDOWN); the reaper, which walks
 *   the lease rows by deadline, repairs a count that writes from outside put wrong;
 * - each statement that finishes jobs adds them to `finished_rollup` (ROLLUP);
 * - ending an attempt other than by completing it writes its `job_attempts` row in the same
 *   statement (history.ts).
 *
 * Lock order, the same in every statement: a ready row before its job (claim, operator
 * cancel), a job before its lease row (settlements, operator cancel). The reaper locks lease
 * rows first but takes jobs with SKIP LOCKED, so it never waits on a job.
 *
 * Time is statement_timestamp(), not now(): the same inside a caller's transaction as outside.
 */
import { sql, type SQL } from 'drizzle-orm';
import { TERMINAL_STATES, type JobState } from '../states.ts';
import { MAX_ATTEMPTS, noAttemptsLeftSql } from './attempt-cap.ts';
import { recordAttempts } from './history.ts';
import { CLAIM_COLUMNS, qualified } from './job.ts';

/** One edge of the state machine: docs/state-machine.md's diagram is generated from this table. */
export interface Edge {
  from: JobState | null;
  to: JobState | null;
  /** The exported function that makes the move, and when. */
  by: string;
}

/** Every move a job can make, and who makes it. `null` is outside the table (enqueue, retention). */
export const EDGES: readonly Edge[] = [
  { from: null, to: 'ready', by: 'enqueue / enqueueMany' },
  { from: 'ready', to: 'running', by: 'claim (due, queue not paused, FOR UPDATE SKIP LOCKED)' },
  { from: 'running', to: 'done', by: 'completeIfLeaseHeld (token, lease_until > now())' },
  { from: 'running', to: 'ready', by: 'failIfLeaseHeld, retryable class and attempts left' },
  { from: 'running', to: 'dead', by: 'failIfLeaseHeld, permanent/validation, attempts spent or max age' },
  { from: 'running', to: 'cancelled', by: 'failIfLeaseHeld with class cancelled' },
  { from: 'running', to: 'ready', by: 'releaseIfLeaseHeld (graceful shutdown, attempt not charged: released + 1)' },
  { from: 'running', to: 'ready', by: 'reapExpiredLeases (lease_until <= now(), attempts left under the handler cap)' },
  { from: 'running', to: 'dead', by: 'reapExpiredLeases (no attempts left under the handler cap, or max age)' },
  { from: 'ready', to: 'dead', by: 'deadIfKindUnrun (no live worker ran its kind version for the grace period)' },
  {
    from: 'running',
    to: 'cancelled',
    by: 'cancelIfUnchanged (operator, with the token they saw; leasehold.operator_cancel)',
  },
  { from: 'ready', to: 'cancelled', by: 'cancelIfUnchanged (operator; leasehold.operator_cancel)' },
  { from: 'dead', to: 'ready', by: 'retryIfTerminal (operator; leasehold.operator_retry)' },
  { from: 'cancelled', to: 'ready', by: 'retryIfTerminal (operator; leasehold.operator_retry)' },
  { from: 'done', to: null, by: 'removeExpiredHistory' },
  { from: 'dead', to: null, by: 'removeExpiredHistory' },
  { from: 'cancelled', to: null, by: 'removeExpiredHistory' },
];

/** The mermaid diagram of EDGES (docs/state-machine.md; `npm run docs:states` writes it). */
export function stateDiagram(): string {
  const node = (s: JobState | null) => s ?? '[*]';
  return ['stateDiagram-v2', ...EDGES.map((e) => `    ${node(e.from)} --> ${node(e.to)}: ${e.by}`)].join('\n');
}

const TERMINAL_LIST = TERMINAL_STATES.map((s) => `'${s}'`).join(', ');

/** The attempt behind `alias` still holds its lease: running, under `token`, deadline not passed. */
export function leaseHeld(alias: string, token: string): string {
  return `${alias}.state = 'running' AND ${alias}.lease_token = ${token} AND ${alias}.lease_until > statement_timestamp()`;
}

/**
 * leaseHeld as a fragment of a drizzle `sql` statement, for the statements outside this file
 * that check a lease without moving the job (receipts.ts): the one guard, not a second copy.
 * `alias` and `token` are column references written in the code, never input; a token that is
 * a parameter goes in as a column of a one-row subquery (`FROM (SELECT $x::uuid AS token) t`).
 */
export function leaseHeldSql(alias: string, token: string): SQL {
  return sql.raw(leaseHeld(alias, token));
}

/** Columns every statement that ends an attempt sets: the lease is gone. */
const END_LEASE = 'lease_token = NULL, lease_until = NULL';

/**
 * CTEs that count down the lease rows for the attempts ended by CTE `ended` (rows with
 * `token, queue`). One UPDATE, never a DELETE beside it: two statements ending attempts of one
 * claim at once (two acknowledgements in flight) each re-read the row they wait for and
 * subtract from what the other left, where a DELETE decided on the statement's snapshot would
 * miss its row. A row counted down to 0 stays until its deadline, when the reaper deletes it.
 * `greatest(…, 0)`: a count that writes from outside put wrong must not fail a settlement; the
 * reaper sets it right.
 */
function leaseCountdown(ended: string, token?: string): string {
  return `
    lease_ended AS (SELECT token, queue, count(*)::int AS n FROM ${ended} GROUP BY token, queue),
    lease_left AS (
      UPDATE leasehold.leases l SET running = greatest(l.running - e.n, 0) FROM lease_ended e
      WHERE l.token = e.token AND l.queue = e.queue${
        // With the token as a parameter, the prepared (generic) plan finds the row by primary
        // key; joined on the CTE alone it was planned as a scan of every lease row.
        token ? ` AND l.token = ${token}` : ''
      }
      RETURNING 1
    )`;
}

/**
 * A CTE adding the jobs of CTE `finished` (rows with `queue, kind, state, attempts`) that
 * reached a terminal state to this minute's rollup row of this backend's shard.
 */
function rollup(finished: string): string {
  return `
    rolled AS (
      INSERT INTO leasehold.finished_rollup AS r (minute, queue, kind, state, attempts, shard, jobs)
      SELECT date_trunc('minute', statement_timestamp()), f.queue, f.kind, f.state, f.attempts, pg_backend_pid() % 8, count(*)::int
      FROM ${finished} f WHERE f.state IN (${TERMINAL_LIST})
      GROUP BY f.queue, f.kind, f.state, f.attempts
      ON CONFLICT (minute, queue, kind, state, attempts, shard) DO UPDATE SET jobs = r.jobs + excluded.jobs
      RETURNING 1
    )`;
}

// ---------------------------------------------------------------------------------------------
// ready → running: the claim

/**
 * The claim ($1 the queue or queues, $2 the limit, $3 token, $4 lease seconds, $5 worker id;
 * by kind also $6 the kind or kinds and $7 the version or versions).
 *
 * Why the CTEs: the locking SELECT with its LIMIT must run before the writes and by itself;
 * a CTE that locks rows is materialised once, so it is a fence (as `IN (SELECT … LIMIT n)` the
 * planner may re-evaluate it and take more rows than asked for).
 *
 * The walk is over `ready_jobs` alone, so it reads O(limit) narrow entries however many jobs
 * wait or have finished; its rows are taken by address (`ctid = ANY(ARRAY(…))`, a TID scan:
 * they are locked by this statement, so their addresses hold). The jobs are then found by
 * primary key and updated only while `ready` and due: a ready row left by a cancel or a move is
 * deleted here and leases nothing. The UPDATE names no indexed column, so each job's new
 * version stays on its page (HOT) and writes no index entry. The lease rows (one per queue of
 * the batch) record the token, the jobs and the deadline for the reaper.
 *
 * Shapes: `one` and `many` take any kind of their queues, walking (queue, claim_at, id); `kind`
 * and `kinds` take only the kind versions given (a worker's handlers), walking
 * (kind, kind_version, queue, claim_at, id) one arm (queue, kind, version) at a time, so jobs
 * of other kinds are never read, however many wait ahead of them (db/queue/claim.test.ts,
 * "backlog"). With several arms, a first pass without locks finds how many of the `limit`
 * first due jobs in the aging order each arm holds, and each arm then locks only that many
 * (skipping rows other claims hold, walking on past them): a claim locks no more rows than it
 * takes, where a LIMIT per arm would lock up to arms × limit (each lock a WAL record).
 *
 * Why `claim_at <= now()` as well as `run_at <= now()`: priorities are never negative, so a due
 * job always has claim_at <= run_at <= now(). The bound ends the index walk there.
 *
 * `flush = false` (the worker's `--async-claims`): the statement sets synchronous_commit off
 * for its own transaction as an initplan of the UPDATE (docs/contract.md §4).
 */
export type ClaimShape = 'one' | 'many' | 'kind' | 'kinds';

export function claimText(shape: ClaimShape, flush: boolean): string {
  return `
    WITH ${CANDIDATES[shape]},
    taken AS (
      DELETE FROM leasehold.ready_jobs r WHERE r.ctid = ANY(ARRAY(SELECT ctid FROM candidate)) RETURNING r.id
    ),
    claimed AS (
      UPDATE leasehold.jobs j
      SET ${CLAIM_SET}
      WHERE j.id = ANY(ARRAY(SELECT id FROM taken)) AND j.state = 'ready' AND j.run_at <= statement_timestamp()${
        flush ? '' : `\n        AND (SELECT set_config('synchronous_commit', 'off', true)) = 'off'`
      }
      RETURNING ${qualified(CLAIM_COLUMNS, 'j')}
    ),${CLAIM_LEASE_ROWS}
    SELECT * FROM claimed`;
}

/**
 * What a claim sets on each job it leases ($3 token, $4 lease seconds, $5 worker id). Exported
 * with CLAIM_LEASE_ROWS for the failure harness's guard-skipping claim (workers/failpoints.ts),
 * which must differ from this one by its guard alone.
 */
export const CLAIM_SET = `state = 'running',
          attempts = j.attempts + 1,
          lease_token = $3::uuid,
          lease_until = statement_timestamp() + make_interval(secs => $4::float8),
          worker_id = $5::text,
          started_at = statement_timestamp(),
          updated_at = statement_timestamp()`;

/** The claim's lease rows: one per queue of the jobs in CTE `claimed` (a CTE named `lease`). */
export const CLAIM_LEASE_ROWS = `
    lease AS (
      INSERT INTO leasehold.leases (token, queue, worker_id, lease_until, running, job_ids)
      SELECT $3::uuid, c.queue, $5::text, min(c.lease_until), count(*)::int, array_agg(c.id)
      FROM claimed c GROUP BY c.queue
      RETURNING 1
    )`;

const DUE = 'r.claim_at <= statement_timestamp() AND r.run_at <= statement_timestamp()';

const ONE_QUEUE = `
      SELECT r.ctid
      FROM leasehold.ready_jobs r
      WHERE r.queue = $1::text
        AND ${DUE}
        AND NOT EXISTS (SELECT 1 FROM leasehold.queues q WHERE q.name = $1::text AND q.paused)
      ORDER BY r.claim_at, r.id
      LIMIT $2::int
      FOR UPDATE SKIP LOCKED`;

// One walk per queue asked for (LATERAL), merged by the same aging key.
const QUEUES = `
      SELECT c.ctid
      FROM (
        SELECT u.name FROM unnest($1::text[]) AS u(name)
        WHERE NOT EXISTS (SELECT 1 FROM leasehold.queues q WHERE q.name = u.name AND q.paused)
      ) AS wanted
      CROSS JOIN LATERAL (
        SELECT r.ctid, r.id, r.claim_at
        FROM leasehold.ready_jobs r
        WHERE r.queue = wanted.name
          AND ${DUE}
        ORDER BY r.claim_at, r.id
        LIMIT $2::int
        FOR UPDATE SKIP LOCKED
      ) c
      ORDER BY c.claim_at, c.id
      LIMIT $2::int`;

// One queue, one kind version ($6, $7): a single walk of the kind index.
const ONE_KIND = `
      SELECT r.ctid
      FROM leasehold.ready_jobs r
      WHERE r.kind = $6::text AND r.kind_version = $7::int AND r.queue = $1::text
        AND ${DUE}
        AND NOT EXISTS (SELECT 1 FROM leasehold.queues q WHERE q.name = $1::text AND q.paused)
      ORDER BY r.claim_at, r.id
      LIMIT $2::int
      FOR UPDATE SKIP LOCKED`;

// Arms (queue $1[i], kind $6[i], version $7[i]): `share` counts, without locking, how many of
// the first $2 due jobs in the aging order each arm holds; `candidate` locks that many per arm.
const KINDS = `
      arm AS (
        SELECT a.i, a.queue, a.kind, a.version
        FROM unnest($1::text[], $6::text[], $7::int[]) WITH ORDINALITY AS a(queue, kind, version, i)
        WHERE NOT EXISTS (SELECT 1 FROM leasehold.queues q WHERE q.name = a.queue AND q.paused)
      ),
      share AS (
        SELECT f.i, count(*)::int AS n
        FROM (
          SELECT arm.i, p.claim_at, p.id FROM arm
          CROSS JOIN LATERAL (
            SELECT r.claim_at, r.id
            FROM leasehold.ready_jobs r
            WHERE r.kind = arm.kind AND r.kind_version = arm.version AND r.queue = arm.queue
              AND ${DUE}
            ORDER BY r.claim_at, r.id
            LIMIT $2::int
          ) p
          ORDER BY p.claim_at, p.id
          LIMIT $2::int
        ) f
        GROUP BY f.i
      ),
      candidate AS (
        SELECT c.ctid FROM share s JOIN arm ON arm.i = s.i
        CROSS JOIN LATERAL (
          SELECT r.ctid
          FROM leasehold.ready_jobs r
          WHERE r.kind = arm.kind AND r.kind_version = arm.version AND r.queue = arm.queue
            AND ${DUE}
          ORDER BY r.claim_at, r.id
          LIMIT s.n
          FOR UPDATE SKIP LOCKED
        ) c
      )`;

/** The CTEs up to and including `candidate` (the rows to take), by shape. */
const CANDIDATES: Record<ClaimShape, string> = {
  one: `candidate AS (${ONE_QUEUE})`,
  many: `candidate AS (${QUEUES})`,
  kind: `candidate AS (${ONE_KIND})`,
  kinds: KINDS.trim(),
};

// ---------------------------------------------------------------------------------------------
// running → done: the batch acknowledgement

/**
 * Completes the jobs `$1` leased under token `$2` whose lease still holds; returns the ids it
 * did not complete (normally none: reading back a thousand completed ids cost more client CPU
 * than the UPDATE cost the database). Found by primary key; the update is HOT (no index names
 * a column it sets), and the lease row is counted down once per statement.
 */
export const COMPLETE_MANY = `
  WITH done AS (
    UPDATE leasehold.jobs j SET state = 'done', ${END_LEASE},
                      finished_at = statement_timestamp(), updated_at = statement_timestamp()
    WHERE j.id = ANY($1::uuid[]) AND ${leaseHeld('j', '$2::uuid')}
    RETURNING j.id, j.queue, j.kind, j.state, j.attempts, $2::uuid AS token
  ),${leaseCountdown('done', '$2::uuid')},${rollup('done')}
  SELECT w.id FROM unnest($1::uuid[]) AS w(id) WHERE NOT EXISTS (SELECT 1 FROM done d WHERE d.id = w.id)`;

// ---------------------------------------------------------------------------------------------
// running → ready | dead | cancelled: a failed attempt

/**
 * Ends the attempt (`id`, `token`) as failed: `ready` after `delaySeconds` when `retry` and
 * attempts and max age allow, else `endState` (class `expired` when only the max age stood
 * in the way). The budget is decided here, in the guarded row: the charged attempts
 * (`attempts - released`) against `least(max_attempts, cap)`, `cap` being the handler's
 * (the worker passes min(job's, handler's)); spent, the error gets noAttemptsLeft's sentence.
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
      RETURNING j.id, j.attempts, j.queue, j.kind, j.worker_id, j.started_at, j.state, j.failure_class, j.run_at, t.token
    ),
    history AS (${recordAttempts('failed', sql`s.token`, sql`s.failure_class`, sql`${p.error}`, sql`${p.detail}::jsonb`)}),
    ${sql.raw(leaseCountdown('settled'))},${sql.raw(rollup('settled'))}
    SELECT state, failure_class, run_at FROM settled`;
}

// ---------------------------------------------------------------------------------------------
// running → ready: a release (graceful shutdown)

/**
 * Gives the job back: `ready` after `delaySeconds`, the attempt not charged (`released` grows
 * by one, so the budget `attempts - released` is what it was before the claim, while the
 * attempt number, the fence, still only grows). Never refused for the budget: the job was
 * ready with an attempt left when it was claimed, so it still has that attempt.
 */
export function releaseStatement(p: { id: string; token: string; delaySeconds: number; reason: string }): SQL {
  const at = sql`statement_timestamp() + make_interval(secs => ${p.delaySeconds}::float8)`;
  return sql`
    WITH settled AS (
      UPDATE leasehold.jobs j SET
        state = 'ready',
        released = j.released + 1,
        run_at = ${at},
        claim_at = ${at} - (j.run_at - j.claim_at),
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

// ---------------------------------------------------------------------------------------------
// running → ready | dead: the reaper

/**
 * Ends up to `limit` attempts whose deadline passed. It walks the lease rows due (their
 * deadline is never later than any of their running jobs'), takes those jobs whose own
 * deadline passed (a heartbeat may have moved some), re-checks `running AND lease_until <=
 * now()` on the locked row (river#1302 overwrote jobs completed meanwhile), and then sets each
 * due lease row to what is left: deleted when none of its jobs runs, else its count and the
 * earliest remaining deadline (which also repairs a count that writes from outside put wrong).
 * A crash consumes an attempt: `ready` (class `lease_expired`) while attempts and max age
 * allow, else `dead`. The attempts are the charged ones (`attempts - released`) against the
 * same cap as a failure's: the job's max_attempts, or the handler's `maxAttempts` when lower
 * (the kinds registry's `max_attempts`, written by the workers that run the kind version).
 */
export function reapStatement(limit: number, delaySeconds: number): SQL {
  const next = sql`(statement_timestamp() + make_interval(secs => ${delaySeconds}::float8))`;
  const cap = sql`least(j.max_attempts, coalesce(e.handler_cap, ${sql.raw(String(MAX_ATTEMPTS))}))`;
  const left = sql`(j.attempts - j.released < ${cap})`;
  const retrying = sql`(${left} AND NOT coalesce(j.expires_at <= ${next}, false))`;
  return sql`
    WITH due AS (
      SELECT l.token, l.queue, l.job_ids FROM leasehold.leases l
      WHERE l.lease_until <= statement_timestamp()
      ORDER BY l.lease_until
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    ),
    expired AS (
      SELECT j.id, d.token, k.max_attempts AS handler_cap FROM due d JOIN leasehold.jobs j ON j.id = ANY(d.job_ids)
      LEFT JOIN leasehold.kinds k ON k.kind = j.kind AND k.version = j.kind_version
      WHERE j.lease_token = d.token AND j.state = 'running' AND j.lease_until <= statement_timestamp()
      LIMIT ${limit}
      FOR UPDATE OF j SKIP LOCKED
    ),
    settled AS (
      UPDATE leasehold.jobs j SET
        state = CASE WHEN ${retrying} THEN 'ready' ELSE 'dead' END,
        failure_class = CASE WHEN ${left} AND NOT ${retrying} THEN 'expired' ELSE 'lease_expired' END,
        last_error = format('lease expired: attempt %s (worker %s) did not settle before its lease ended at %s%s',
                            j.attempts, coalesce(j.worker_id, '?'), j.lease_until,
                            CASE WHEN ${retrying} THEN '' WHEN NOT ${left} THEN '; ' || ${noAttemptsLeftSql(sql`j.attempts - j.released`, cap)}
                                 ELSE '; max age reached' END),
        run_at = CASE WHEN ${retrying} THEN ${next} ELSE j.run_at END,
        claim_at = CASE WHEN ${retrying} THEN ${next} - (j.run_at - j.claim_at) ELSE j.claim_at END,
        ${sql.raw(END_LEASE)},
        finished_at = CASE WHEN ${retrying} THEN NULL ELSE statement_timestamp() END,
        updated_at = statement_timestamp()
      FROM expired e
      WHERE j.id = e.id AND j.state = 'running' AND j.lease_token = e.token AND j.lease_until <= statement_timestamp()
      RETURNING j.id, j.attempts, j.queue, j.kind, j.worker_id, j.started_at, j.state, j.failure_class, j.last_error,
                e.token AS lease_token
    ),
    history AS (${recordAttempts('lease_expired', sql`s.lease_token`, sql`s.failure_class`, sql`s.last_error`)}),
    ${sql.raw(rollup('settled'))},
    -- What each due lease row still covers: its running jobs under its token, less those
    -- settled just now (this statement's snapshot still sees them running).
    still AS (
      SELECT d.token, d.queue, count(j.id)::int AS running, min(j.lease_until) AS lease_until
      FROM due d LEFT JOIN leasehold.jobs j
        ON j.id = ANY(d.job_ids) AND j.lease_token = d.token AND j.state = 'running'
       AND j.id NOT IN (SELECT id FROM settled)
      GROUP BY d.token, d.queue
    ),
    lease_gone AS (
      DELETE FROM leasehold.leases l USING still s
      WHERE l.token = s.token AND l.queue = s.queue AND s.running = 0
      RETURNING 1
    ),
    lease_moved AS (
      UPDATE leasehold.leases l SET running = s.running, lease_until = s.lease_until FROM still s
      WHERE l.token = s.token AND l.queue = s.queue AND s.running > 0
      RETURNING 1
    )
    SELECT id, state FROM settled`;
}

// ---------------------------------------------------------------------------------------------
// ready → dead: jobs of a kind version no live worker runs, after the grace period

/**
 * Ends `dead` (class `permanent`) up to `limit` due ready jobs whose kind version no live
 * worker has run for `graceSeconds`: no worker seen within `liveSeconds` has registered it
 * (worker_kinds), and the job has been due, has existed (jobs.created_at), and the kind version
 * was last seen live (kinds.live_at) and last registered (kinds.last_seen_at) all longer than
 * the grace ago. A job of a kind that was never registered waits the grace from the later of
 * when it became due and when it was enqueued: a back-dated `runAt` (an outbox replay, a
 * backfill keeping its timestamps) still gets the whole grace, so producers first stays safe.
 *
 * First it records `live_at = now` on the kind versions live workers run (so a worker that
 * dies starts the grace then, not at its start), taking those rows in registerKinds' order so
 * the two never deadlock. Then, as the claim does, it locks the ready rows (SKIP LOCKED: a
 * claim holding one is about to run it), deletes them and updates the jobs still ready and due
 * (by primary key): a ready row before its job.
 *
 * Cost: a walk of every ready row not of a live kind version (the set is small, and the
 * maintenance round that calls it runs once a minute).
 */
export function deadIfKindUnrunStatement(p: { graceSeconds: number; liveSeconds: number; limit: number }): SQL {
  const since = sql`(statement_timestamp() - make_interval(secs => ${p.graceSeconds}::float8))`;
  return sql`
    WITH live AS (
      SELECT DISTINCT wk.kind, wk.version FROM leasehold.worker_kinds wk
      JOIN leasehold.workers w ON w.id = wk.worker_id
      WHERE w.last_seen_at >= statement_timestamp() - make_interval(secs => ${p.liveSeconds}::float8)
    ),
    seen AS (
      UPDATE leasehold.kinds k SET live_at = statement_timestamp()
      FROM (
        SELECT k2.kind, k2.version FROM leasehold.kinds k2 JOIN live l ON l.kind = k2.kind AND l.version = k2.version
        ORDER BY k2.kind COLLATE "C", k2.version
        FOR UPDATE OF k2
      ) s
      WHERE k.kind = s.kind AND k.version = s.version
      RETURNING 1
    ),
    unrun AS (
      SELECT r.ctid FROM leasehold.ready_jobs r
      JOIN leasehold.jobs jc ON jc.id = r.id
      LEFT JOIN leasehold.kinds k ON k.kind = r.kind AND k.version = r.kind_version
      WHERE r.kind_version IS NOT NULL AND r.run_at <= ${since} AND jc.created_at <= ${since}
        AND NOT EXISTS (SELECT 1 FROM live l WHERE l.kind = r.kind AND l.version = r.kind_version)
        AND coalesce(greatest(k.live_at, k.last_seen_at) <= ${since}, true)
      LIMIT ${p.limit}
      FOR UPDATE OF r SKIP LOCKED
    ),
    gone AS (
      DELETE FROM leasehold.ready_jobs r WHERE r.ctid = ANY(ARRAY(SELECT ctid FROM unrun)) RETURNING r.id
    ),
    settled AS (
      UPDATE leasehold.jobs j SET
        state = 'dead', failure_class = 'permanent',
        last_error = format('no live worker ran kind %s version %s for the unknown-kind grace period (%s): '
                            'start a worker with a handler for it, then retry the job', j.kind, j.kind_version,
                            justify_interval(make_interval(secs => ${p.graceSeconds}::float8))),
        finished_at = statement_timestamp(), updated_at = statement_timestamp()
      WHERE j.id = ANY(ARRAY(SELECT id FROM gone)) AND j.state = 'ready' AND j.run_at <= ${since} AND j.created_at <= ${since}
      RETURNING j.id, j.queue, j.kind, j.state, j.attempts
    ),${sql.raw(rollup('settled'))}
    SELECT id FROM settled`;
}

// ---------------------------------------------------------------------------------------------
// Operator actions (dead | cancelled → ready, ready → cancelled, running → cancelled with the
// token the operator saw) are the SECURITY DEFINER functions leasehold.operator_retry and
// leasehold.operator_cancel (drizzle/0011), so that the dashboard's role needs no write on the
// tables: a call of one is a transition of EDGES above (retryIfTerminal, cancelIfUnchanged),
// covered by the model test (model.test.ts) like the statements here. Their bodies are this
// file's former OPERATOR_RETRY and operatorCancel CTEs with the audit row, unchanged.
