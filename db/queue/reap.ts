/**
 * The reaper: recovers jobs whose attempt stopped settling (worker killed, stalled, cut off).
 *
 * Invariants:
 * - only rows whose lease deadline has passed in database time are touched, and the UPDATE
 *   re-checks `state = 'running' AND lease_until <= now()` on the locked row, so a job that
 *   was completed or heartbeated meanwhile is left alone (river#1302 overwrote such jobs);
 * - a crash consumes an attempt: the job goes back to `ready` (class `lease_expired`) only
 *   while attempts remain and its max age allows, else `dead`. A poison job that kills every
 *   worker that runs it therefore ends `dead` instead of looping;
 * - batches are bounded (`limit`) and skip rows another reaper holds.
 */
import { sql, type SQL } from 'drizzle-orm';
import { z } from 'zod';
import { run, type Executor } from './executor';
import { recordAttempts } from './history';
import { DEFAULT_RETRY_POLICY } from './retry-policy';
import { parseInput } from './validate';

const reapOptionsSchema = z.strictObject({
  limit: z.int().min(1).max(10_000).default(500),
  /** Delay before a reaped job may run again. */
  leaseExpiredDelayMs: z
    .number()
    .min(0)
    .max(24 * 3600 * 1000)
    .default(DEFAULT_RETRY_POLICY.leaseExpiredDelayMs),
});

export type ReapOptions = z.input<typeof reapOptionsSchema>;

export interface ReapResult {
  /** Jobs whose expired lease this call ended. */
  reaped: number;
  retried: string[];
  dead: string[];
}

/** Ends up to `limit` expired leases. Call it until `reaped < limit` to clear a backlog. */
export async function reapExpiredLeases(executor: Executor, options: ReapOptions = {}): Promise<ReapResult> {
  const rows = await run(executor, reapStatement(options));
  return {
    reaped: rows.length,
    retried: rows.filter((r) => r.state === 'ready').map((r) => r.id as string),
    dead: rows.filter((r) => r.state === 'dead').map((r) => r.id as string),
  };
}

/** The reap statement itself (for `reapExpiredLeases`, and for EXPLAIN). */
export function reapStatement(options: ReapOptions = {}): SQL {
  const { limit, leaseExpiredDelayMs } = parseInput('reap', reapOptionsSchema, options);
  const next = sql`(statement_timestamp() + make_interval(secs => ${leaseExpiredDelayMs / 1000}::float8))`;
  const retrying = sql`(j.attempts < j.max_attempts AND NOT coalesce(j.expires_at <= ${next}, false))`;
  return sql`
    WITH expired AS (
      SELECT id, lease_token
      FROM jobs
      WHERE state = 'running' AND lease_until <= statement_timestamp()
      ORDER BY lease_until
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    ), settled AS (
      UPDATE jobs j SET
        state = CASE WHEN ${retrying} THEN 'ready' ELSE 'dead' END,
        failure_class = CASE WHEN j.attempts < j.max_attempts AND NOT ${retrying} THEN 'expired' ELSE 'lease_expired' END,
        last_error = format('lease expired: attempt %s (worker %s) did not settle before its lease ended at %s%s',
                            j.attempts, coalesce(j.worker_id, '?'), j.lease_until,
                            CASE WHEN ${retrying} THEN '' WHEN j.attempts >= j.max_attempts THEN '; no attempts left'
                                 ELSE '; max age reached' END),
        run_at = CASE WHEN ${retrying} THEN ${next} ELSE j.run_at END,
        claim_at = CASE WHEN ${retrying} THEN ${next} - (j.run_at - j.claim_at) ELSE j.claim_at END,
        lease_token = NULL, lease_until = NULL,
        finished_at = CASE WHEN ${retrying} THEN NULL ELSE statement_timestamp() END,
        updated_at = statement_timestamp()
      FROM expired e
      WHERE j.id = e.id AND j.state = 'running' AND j.lease_until <= statement_timestamp()
      RETURNING j.id, j.attempts, j.queue, j.kind, j.worker_id, j.started_at, j.state, j.failure_class, j.last_error, e.lease_token
    ), history AS (${recordAttempts('lease_expired', sql`s.lease_token`, sql`s.failure_class`, sql`s.last_error`)})
    SELECT id, state FROM settled`;
}
