/**
 * Whether a worker is healthy: its database answers, and its claim loop is ticking. What
 * `createWorker(…).health()` returns and what `/healthz` serves (workers/metrics.ts).
 *
 * - The database is asked `SELECT 1` on the worker's pool, with a time limit
 *   (`databaseTimeoutMs`): a pool that cannot get a connection in that time counts as
 *   unreachable, the same as a refused one.
 * - The claim loop is stale when the worker has a free slot and no claim has returned for
 *   `claimStaleMs` (counted from the last claim, the loop's start or the last freed slot,
 *   whichever is latest). With a free slot the loop claims at least every `pollMs` (±20 %), so
 *   the bound is a multiple of it. A worker whose every slot is busy does not claim by design
 *   and is not stale (a handler past its timeout is stopped by the lease keeper).
 * - A worker that is not running (not started yet, stopping, stopped) is unhealthy.
 */
import { sql } from 'drizzle-orm';
import { run } from '../db/queue/executor.ts';
import type { Executor } from '../db/queue/index.ts';

/** How late the event loop turns (workers/event-loop.ts measures it): reported, not judged. */
export interface EventLoopLag {
  /** The last sample's lag, in ms. */
  lagMs: number;
  /** The worst lag since the monitor started, in ms. */
  maxLagMs: number;
  /** Samples over the warning threshold since the monitor started. */
  blocked: number;
}

/**
 * What a worker's health() reports: its own view, without asking the database (workerHealth
 * below does). Declared here, not in worker.ts, so that health.ts imports nothing that leads
 * back to it (worker.ts and metrics.ts import this module; lint's import/no-cycle holds it).
 */
export type WorkerStatus = {
  status: 'ok' | 'new' | 'stopping' | 'stopped';
  workerId: string;
  inFlight: number;
  /** Stopped attempts (settled) whose handler ignores its signal and still runs: each holds a slot. */
  stoppedRunning?: number;
  concurrency: number;
  listening: boolean;
  /** When the last claim statement returned (whatever it claimed); null before the first. */
  lastClaimAt: string | null;
  /** When the claim loop started; null before. */
  claimLoopStartedAt: string | null;
  /** When an attempt last ended (its slot freed); null before the first. */
  lastAttemptEndedAt: string | null;
  /** How late the event loop turns (workers/event-loop.ts): reported, not judged. */
  eventLoop: EventLoopLag;
};

/** What a health check found. `healthy` is true exactly when `reasons` is empty. */
export interface HealthReport {
  healthy: boolean;
  status: 'ok' | 'unhealthy';
  /** Sentences saying what is wrong; empty when healthy. */
  reasons: string[];
  checkedAt: string;
  database: { reachable: boolean; ms: number; error: string | null };
  claimLoop: {
    stale: boolean;
    /** The bound: stale when a slot is free and no claim returned for this long. */
    staleAfterMs: number;
    /** Since the last claim (or the loop's start, or the last freed slot), in ms; null before start. */
    idleMs: number | null;
    freeSlots: number;
  };
  worker: WorkerStatus;
}

/** Something that can say whether it is healthy: a createWorker result, or workerHealth(). */
export interface HealthSource {
  health(): Promise<HealthReport>;
}

export interface HealthCheckOptions {
  /** Stale claim loop bound, in ms (see claimStaleDefault). */
  claimStaleMs: number;
  /** How long `SELECT 1` may take before the database counts as unreachable (default 5000). */
  databaseTimeoutMs?: number | undefined;
}

export const DEFAULT_DATABASE_TIMEOUT_MS = 5_000;

/** The default stale bound for a poll interval: five polls, and never under 30 s. */
export function claimStaleDefault(pollMs: number): number {
  return Math.max(30_000, 5 * pollMs);
}

/** The health check of a worker (anything with its `health()` snapshot) over its pool `db`. */
export function workerHealth(
  worker: { health(): WorkerStatus },
  db: Executor,
  options: HealthCheckOptions,
): HealthSource {
  return { health: () => checkHealth(worker, db, options) };
}

export async function checkHealth(
  worker: { health(): WorkerStatus },
  db: Executor,
  options: HealthCheckOptions,
): Promise<HealthReport> {
  const database = await pingDatabase(db, options.databaseTimeoutMs ?? DEFAULT_DATABASE_TIMEOUT_MS);
  const status = worker.health();
  const now = Date.now();
  const reasons: string[] = [];
  if (!database.reachable) reasons.push(`database unreachable: ${database.error}`);
  if (status.status !== 'ok') reasons.push(status.status === 'new' ? 'worker not started' : `worker ${status.status}`);

  // A stopped handler still running keeps its slot (workers/producer.ts): a worker whose slots
  // all hold such handlers does not claim either, and is not stale for it.
  const freeSlots = Math.max(0, status.concurrency - status.inFlight - (status.stoppedRunning ?? 0));
  const ticks = [status.lastClaimAt, status.claimLoopStartedAt, status.lastAttemptEndedAt]
    .filter((at): at is string => at !== null)
    .map((at) => Date.parse(at));
  const idleMs = ticks.length > 0 ? Math.max(0, now - Math.max(...ticks)) : null;
  const stale = status.status === 'ok' && freeSlots > 0 && idleMs !== null && idleMs > options.claimStaleMs;
  if (stale)
    reasons.push(
      `claim loop stale: no claim returned for ${idleMs} ms with ${freeSlots} free slot(s) (bound ${options.claimStaleMs} ms)`,
    );
  return {
    healthy: reasons.length === 0,
    status: reasons.length === 0 ? 'ok' : 'unhealthy',
    reasons,
    checkedAt: new Date(now).toISOString(),
    database,
    claimLoop: { stale, staleAfterMs: options.claimStaleMs, idleMs, freeSlots },
    worker: status,
  };
}

async function pingDatabase(db: Executor, timeoutMs: number): Promise<HealthReport['database']> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const ping = run(db, sql`SELECT 1`);
  ping.catch(() => {}); // a ping that loses the race must not become an unhandled rejection
  try {
    await Promise.race([
      ping,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer to SELECT 1 within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    return { reachable: true, ms: Math.round(performance.now() - started), error: null };
  } catch (error) {
    return { reachable: false, ms: Math.round(performance.now() - started), error: describe(error) };
  } finally {
    clearTimeout(timer);
  }
}

/** The error's own message, or its cause's (Drizzle wraps the driver's: "Failed query: …"). */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause;
  if (cause instanceof Error && cause.message) return cause.message;
  if (error instanceof AggregateError && error.errors[0] instanceof Error) return error.errors[0].message;
  return error.message || error.name;
}
