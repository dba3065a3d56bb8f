/**
 * The settlements of an attempt that holds its lease: the batch acknowledgement (running →
 * done), a failure (running → ready | dead | cancelled), a release (running → ready) and the
 * heartbeat (the deadline only). db/queue/transitions.ts is the face; only it imports this one.
 */
import { sql, type SQL } from 'drizzle-orm';
import { noAttemptsLeftSql } from '../attempt-cap.ts';
import { recordAttempts } from '../history.ts';
import { END_LEASE, leaseCountdown, leaseHeld, rollup } from './guards.ts';

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
 *
 * @internal
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
