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
 *
 * The statement (it walks the lease rows by deadline, not the jobs) is in transitions.ts.
 */
import type { SQL } from 'drizzle-orm';
import { z } from 'zod';
import { run, type Executor } from './executor.ts';
import { DEFAULT_RETRY_POLICY } from './retry-policy.ts';
import { deadIfKindUnrunStatement, reapStatement as reapStatementText } from './transitions.ts';
import { parseInput } from './validate.ts';
import { LIVE_WORKER_SECONDS } from './worker-registry.ts';

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
  const rows = await run<{ id: string; state: string }>(executor, reapStatement(options));
  return {
    reaped: rows.length,
    retried: rows.filter((r) => r.state === 'ready').map((r) => r.id),
    dead: rows.filter((r) => r.state === 'dead').map((r) => r.id),
  };
}

/**
 * The reap statement itself (for `reapExpiredLeases`, and for EXPLAIN).
 *
 * @internal
 */
export function reapStatement(options: ReapOptions = {}): SQL {
  const { limit, leaseExpiredDelayMs } = parseInput('reap', reapOptionsSchema, options);
  return reapStatementText(limit, leaseExpiredDelayMs / 1000);
}

const unrunOptionsSchema = z.strictObject({
  /** How long a due job waits for a live worker that runs its kind version. */
  graceMs: z
    .number()
    .min(0)
    .max(365 * 86_400_000),
  /** A worker is live while its registry entry was refreshed this recently. */
  liveSeconds: z.number().min(1).max(86_400).default(LIVE_WORKER_SECONDS),
  limit: z.int().min(1).max(10_000).default(1000),
});

export type UnrunKindOptions = z.input<typeof unrunOptionsSchema>;

/** The default grace before a job of a kind version no live worker runs ends `dead`. */
export const DEFAULT_UNKNOWN_KIND_GRACE_MS = 24 * 3600 * 1000;

/**
 * Ends `dead` (class `permanent`, with a sentence saying why) up to `limit` ready jobs whose
 * kind version no live worker has run for `graceMs` (the statement: transitions.ts). Until
 * then such a job waits: a worker claims only the kind versions it runs. Returns their ids.
 */
export async function deadIfKindUnrun(executor: Executor, options: UnrunKindOptions): Promise<{ dead: string[] }> {
  const { graceMs, liveSeconds, limit } = parseInput('deadIfKindUnrun', unrunOptionsSchema, options);
  const rows = await run<{ id: string }>(
    executor,
    deadIfKindUnrunStatement({ graceSeconds: graceMs / 1000, liveSeconds, limit }),
  );
  return { dead: rows.map((r) => r.id) };
}
