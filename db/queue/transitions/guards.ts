/**
 * The guards and bookkeeping CTEs the transitions share (db/queue/transitions.ts is the face):
 * the lease guard, the columns that end a lease, the lease rows' countdown and the rollup.
 * Written once here; only the transitions' own files import this one.
 */
import { sql, type SQL } from 'drizzle-orm';
import { TERMINAL_STATES } from '../../states.ts';

const TERMINAL_LIST = TERMINAL_STATES.map((s) => `'${s}'`).join(', ');

/**
 * The worker lease row `w` covers the claim's lease row `l` (a join condition): the worker's
 * lease started no later than the claim, and the worker has not detached the claim. A claim
 * row written before drizzle/0015 has no `created_at` and is never covered.
 */
export function workerLeaseCovers(l: string, w: string): string {
  return `${w}.worker_id = ${l}.worker_id AND ${w}.since <= ${l}.created_at AND NOT ${l}.detached`;
}

/**
 * The attempt behind `alias` still holds its lease: running, under `token`, and its effective
 * deadline not passed: its own `lease_until` (set at the claim, moved by a per-job heartbeat),
 * or else its worker's lease, renewed by one write per worker (`worker_leases`), while that
 * covers the job's claim. leasehold.effective_lease_until (drizzle/0015) is the same deadline
 * for readers; db/queue/lease.test.ts holds the two equal. The job's own deadline comes first:
 * a job claimed less than a lease ago (every job of a busy queue) is decided without the
 * subquery, which OR does not evaluate then.
 */
export function leaseHeld(alias: string, token: string): string {
  return `${alias}.state = 'running' AND ${alias}.lease_token = ${token} AND (${alias}.lease_until > statement_timestamp() OR EXISTS (
        SELECT 1 FROM leasehold.leases hl JOIN leasehold.worker_leases hw ON ${workerLeaseCovers('hl', 'hw')}
        WHERE hl.token = ${alias}.lease_token AND hl.queue = ${alias}.queue AND hw.lease_until > statement_timestamp()))`;
}

/**
 * leaseHeld as a fragment of a drizzle `sql` statement, for the statements outside this file
 * that check a lease without moving the job (receipts.ts): the one guard, not a second copy.
 * `alias` and `token` are column references written in the code, never input; a token that is
 * a parameter goes in as a column of a one-row subquery (`FROM (SELECT $x::uuid AS token) t`).
 *
 * @internal
 */
export function leaseHeldSql(alias: string, token: string): SQL {
  return sql.raw(leaseHeld(alias, token));
}

/** Columns every statement that ends an attempt sets: the lease is gone. */
export const END_LEASE = 'lease_token = NULL, lease_until = NULL';

/**
 * CTEs that count down the lease rows for the attempts ended by CTE `ended` (rows with
 * `token, queue`). One UPDATE, never a DELETE beside it: two statements ending attempts of one
 * claim at once (two acknowledgements in flight) each re-read the row they wait for and
 * subtract from what the other left, where a DELETE decided on the statement's snapshot would
 * miss its row. A row counted down to 0 stays until its deadline, when the reaper deletes it.
 * `greatest(…, 0)`: a count that writes from outside put wrong must not fail a settlement; the
 * reaper sets it right.
 */
export function leaseCountdown(ended: string, token?: string): string {
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
export function rollup(finished: string): string {
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
