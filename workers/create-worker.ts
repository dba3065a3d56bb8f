/**
 * `createWorker({ pool | connectionString, jobs })`: Leasehold's workers inside a service of
 * one's own, with defaults, over the Worker of workers/worker.ts (docs/workers.md).
 *
 * Invariants:
 * - options are checked before anything connects: a bad one throws a WorkerOptionsError that
 *   names it, and nothing is written;
 * - a pool the caller passed is never closed here (stop() leaves it open); a pool made from
 *   `connectionString` is closed by stop();
 * - one run at a time: `start()` (until `stop()`) or one `runFor()`; each is a fresh Worker, so
 *   several runFor calls in a row (a warm serverless instance) reuse the pool, not the state;
 * - health() asks the database and reads the claim loop (workers/health.ts), never throws;
 * - it is the one place a Worker is built: the CLI's worker (workers/run-process.ts) calls it
 *   too, with its settings mapped onto these options and the few that are the CLI's alone
 *   passed as internals (WorkerInternals); workers/settings.test.ts fails on another `new Worker(`.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { drizzle } from 'drizzle-orm/node-postgres';
import type pg from 'pg';
import pino, { type Logger } from 'pino';
import { createDb, type Db } from '../db/client.ts';
import { MAX_CLAIM_BATCH } from '../db/queue/claim.ts';
import type { RetryPolicy } from '../db/queue/index.ts';
import { type RetentionOptions, retentionProblems } from '../db/queue/retention.ts';
import { parseSchedules, type ScheduleDeclaration } from '../db/queue/schedules.ts';
import { NAME_PATTERN } from '../db/queue/validate.ts';
import * as schema from '../db/schema.ts';
import { WorkerEvents, type WorkerEventListener, type WorkerEventName } from './events.ts';
import type { Failpoints } from './failpoints.ts';
import { type Handler, HandlerRegistry } from './handler.ts';
import { checkHealth, claimStaleDefault, type HealthReport, type HealthSource } from './health.ts';
import type { WorkerMetrics } from './metrics.ts';
import { copyQueueLimits, queueLimitsOptionProblems, unservedQueueLimits } from './queue-limits.ts';
import { optionKeys, WORKER_SETTINGS, type WorkerOptionKey, type WorkerSetting, workerSettingsOf } from './settings.ts';
import { describeValue, WorkerOptionsError } from './option-error.ts';
import { Worker, type WorkerSettings } from './worker.ts';

type Table = typeof WORKER_SETTINGS;
type IntOption = { [K in WorkerOptionKey]: Table[K] extends { type: 'int' } ? K : never }[WorkerOptionKey];
type BooleanOption = { [K in WorkerOptionKey]: Table[K] extends { type: 'boolean' } ? K : never }[WorkerOptionKey];

export interface CreateWorkerOptions {
  /** Your `pg.Pool`: every statement runs on it (claims too); stop() leaves it open. */
  pool?: pg.Pool | undefined;
  /** Or a `postgres://` URL: the worker makes its pool (and a claim connection) and stop() closes them. */
  connectionString?: string | undefined;
  /** The handlers this worker runs, one per kind. */
  jobs: readonly Handler[];
  /** Queues to serve (default: the handlers' `defaultQueue`s, `default` for those without). */
  queues?: readonly string[] | undefined;
  /**
   * Limits of queues it serves, across every worker declaring them: at most `max` of the queue's
   * jobs running at once, at most `rate.max` starting in any `rate.perMs` ms (docs/workers.md).
   */
  queueLimits?: Readonly<Record<string, { max?: number; rate?: { max: number; perMs: number } }>> | undefined;
  /** Handlers running at once (default 10). */
  concurrency?: number | undefined;
  /** Lease per attempt, in seconds (default 30); heartbeats renew it at a third. */
  leaseSeconds?: number | undefined;
  /** Poll interval when no wake-up comes (default 2000). */
  pollMs?: number | undefined;
  /** Most jobs per claim (default: concurrency). */
  batchSize?: number | undefined;
  /** How long stop() lets running handlers finish before releasing them (default 10000). */
  graceMs?: number | undefined;
  /**
   * How long after its stop (timeout, lease lost, shutdown) a handler that ignores its signal
   * keeps its slot before it is abandoned: counted (`leasehold_attempts_abandoned_total`),
   * logged, and its slot freed though it still runs (default 30000).
   */
  abandonAfterMs?: number | undefined;
  /**
   * LISTEN for enqueue wake-ups (default true). It holds one connection of its own, opened
   * from `listenConnectionString`, else the connection string, else your pool's options.
   */
  listen?: boolean | undefined;
  /** Where LISTEN connects: PostgreSQL itself when the pool goes through a transaction pooler. */
  listenConnectionString?: string | undefined;
  /** Whether statements are prepared by name (default true); only with `connectionString`. */
  preparedStatements?: boolean | undefined;
  /** Run the reaper and retention in this process too (default true; one process at a time does). */
  maintenance?: boolean | undefined;
  retry?: Partial<RetryPolicy> | undefined;
  /**
   * How long finished jobs and attempt history are kept, in seconds (default: done 1 d, dead
   * 14 d, cancelled 7 d, attempts 14 d), and per queue where a queue has its own:
   * `{ deadAfterSeconds: 30 * 86400, queues: { audit: { deadAfterSeconds: 90 * 86400 } } }`
   * (docs/operations.md, "Retention"). Applies when this process runs maintenance.
   */
  retention?: RetentionOptions | undefined;
  /** Default `<host>:<pid>:<random>`. */
  workerId?: string | undefined;
  /** A pino logger (default: pino at `warn`). */
  logger?: Logger | undefined;
  /** prom-client metrics from createMetrics(), if you scrape them. */
  metrics?: WorkerMetrics | undefined;
  /** What the worker registry (and the dashboard) shows as this worker's version. */
  version?: string | undefined;
  /** health(): the claim loop is stale after this long without a claim while a slot is free (default max(30 s, 5 × pollMs)). */
  claimStaleMs?: number | undefined;
  /** health(): how long `SELECT 1` may take (default 5000). */
  healthTimeoutMs?: number | undefined;
  /** Schedules declared in code (`defineSchedule`), declared at start (docs/scheduling.md). */
  schedules?: readonly ScheduleDeclaration[] | undefined;
  /** Enqueue due schedules' ticks from this process too (default true). */
  scheduler?: boolean | undefined;
}

export interface RunForOptions {
  /** The time budget, in ms: runFor returns at about this (releasing what still runs). */
  maxMs: number;
  /** Claiming stops this long before maxMs, so that handlers can finish (default maxMs / 4). */
  drainMs?: number | undefined;
}

export interface RunForSummary {
  /** Jobs claimed in this run. */
  claimed: number;
  completed: number;
  /** Failed attempts recorded (retries scheduled, and jobs ended dead). */
  failed: number;
  /** Of the failed, the jobs that ended dead. */
  dead: number;
  /** Jobs still running at the budget, handed back to `ready` (token-guarded) for the next run. */
  released: number;
  /** Settlements the lease refused (it expired, was reaped or the job was cancelled). */
  lost: number;
  /** `empty`: nothing was left to claim and nothing ran; `budget`: the time was up; `stopped`: stop() was called. */
  endedBy: 'empty' | 'budget' | 'stopped';
  ms: number;
}

export interface LeaseholdWorker extends HealthSource {
  readonly workerId: string;
  readonly queues: readonly string[];
  /** Starts claiming; resolves once the worker runs (it waits up to 60 s for a database that refuses connections). */
  start(): Promise<void>;
  /**
   * Stops claiming, gives running handlers `graceMs` (default the option's) to finish, releases
   * the rest, and closes the pool it made (never yours). Idempotent; the worker cannot start again.
   */
  stop(graceMs?: number): Promise<void>;
  /** Database reachable and claim loop ticking, as a plain object with `reasons` when not. */
  health(): Promise<HealthReport>;
  /** Listens to `failed` (each failed attempt), `dead` (a job ended dead) or `error` (worker-internal). Returns an unsubscribe function. */
  on<E extends WorkerEventName>(event: E, listener: WorkerEventListener<E>): () => void;
  off<E extends WorkerEventName>(event: E, listener: WorkerEventListener<E>): void;
  /** Claims, runs and settles within `maxMs`, then returns what it did (docs/workers.md). */
  runFor(options: RunForOptions): Promise<RunForSummary>;
}

export { WorkerOptionsError };

/** The options createWorker takes: the table's (workers/settings.ts) marked as options. */
const KNOWN_OPTIONS = new Set<string>(optionKeys());

/** How long runFor keeps, at most, for releasing what still runs and deregistering. */
const RUN_FOR_RELEASE_RESERVE_MS = 1_000;
/** How often runFor looks whether the queue is empty (the checks read memory, not the database). */
const RUN_FOR_CHECK_MS = 20;

/**
 * What the CLI's worker (workers/run-process.ts) gives createWorker besides its options: the
 * settings that are the CLI's alone (flags with no createWorker option, which the library's face
 * does not grow for), the failure harness's failpoints, and how its `/healthz` reads a start in
 * progress. Not part of the package's API: stripped from its declarations, in no entry.
 * @internal
 */
export interface WorkerInternals {
  /** `--async-claims` (default off). */
  asyncClaims?: boolean | undefined;
  /** `--reap-interval-ms`, `--retention-interval-ms`, `--unknown-kind-grace-ms` (default: the table's). */
  reapIntervalMs?: number | undefined;
  retentionIntervalMs?: number | undefined;
  /** `--history-interval-ms` (default: the table's). */
  historyIntervalMs?: number | undefined;
  unknownKindGraceMs?: number | undefined;
  /** Test-only crash points (LEASEHOLD_FAILPOINTS, the failure harness). */
  failpoints?: Failpoints | undefined;
  /**
   * health() says "worker not started" until start() has resolved: the Worker counts itself
   * running from the call on, while it may still be waiting for its database (the CLI's
   * `/healthz`, which answers from before the start).
   */
  notStartedUntilStarted?: boolean | undefined;
}

interface Parsed {
  settings: WorkerSettings;
  handlers: Handler[];
  schedules: ScheduleDeclaration[];
  claimStaleMs: number;
  healthTimeoutMs: number;
}

export function createWorker(options: CreateWorkerOptions): LeaseholdWorker;
/** The CLI's worker (workers/run-process.ts): the options, and what only the CLI sets. @internal */
export function createWorker(options: CreateWorkerOptions, internal: WorkerInternals): LeaseholdWorker;
export function createWorker(options: CreateWorkerOptions, internal: WorkerInternals = {}): LeaseholdWorker {
  const parsed = parseOptions(options, internal);
  const { settings } = parsed;
  const registry = new HandlerRegistry(parsed.handlers);
  const logger = options.logger ?? pino({ level: 'warn', base: { workerId: settings.workerId } });
  const events = new WorkerEvents(logger);

  const { db, closePool, databaseUrl, claimDb, listenUrl } = connect(options, settings);

  const makeWorker = (overrides: Partial<WorkerSettings> = {}) =>
    new Worker(
      { ...settings, ...overrides },
      {
        db,
        databaseUrl,
        listenUrl,
        claimDb,
        registry,
        logger,
        metrics: options.metrics,
        failpoints: internal.failpoints,
        version: options.version ?? null,
        events,
        schedules: parsed.schedules,
      },
    );

  let current = makeWorker();
  let phase: Phase = 'idle';
  /** start() has been called and has not returned yet. */
  let starting = false;
  const notStarted = { health: () => ({ ...current.health(), status: 'new' as const }) };
  let stopping: Promise<void> | null = null;
  let endRunFor: (() => void) | null = null;

  const busy = (what: string) => refusal(phase, what);

  return {
    workerId: settings.workerId,
    queues: settings.queues,

    async start() {
      const refused = busy('start()');
      if (refused) throw refused;
      phase = 'started';
      current = makeWorker();
      starting = true;
      try {
        await current.start();
      } catch (error) {
        await current.stop(0).catch(() => {});
        phase = 'idle';
        throw error;
      } finally {
        starting = false;
      }
    },

    stop(graceMs?: number) {
      if (graceMs !== undefined && (!Number.isInteger(graceMs) || graceMs < 0))
        return Promise.reject(new WorkerOptionsError(`stop(graceMs): a whole number of ms >= 0, got ${graceMs}`));
      stopping ??= (async () => {
        const was = phase;
        phase = 'stopped';
        endRunFor?.();
        if (was !== 'idle') await current.stop(graceMs ?? settings.graceMs);
        await closePool?.();
      })();
      return stopping;
    },

    health() {
      const source = starting && internal.notStartedUntilStarted ? notStarted : current;
      return checkHealth(source, db, { claimStaleMs: parsed.claimStaleMs, databaseTimeoutMs: parsed.healthTimeoutMs });
    },

    on(event, listener) {
      return events.on(event, listener);
    },

    off(event, listener) {
      events.off(event, listener);
    },

    async runFor(runOptions: RunForOptions) {
      const { maxMs, drainMs } = parseRunFor(runOptions);
      const refused = busy('runFor()');
      if (refused) throw refused;
      phase = 'running-for';
      const started = performance.now();
      // Short-lived: no LISTEN (the run ends before it would pay off), and the maintenance
      // rounds' timers would not come round; the reaper runs once below instead.
      const worker = makeWorker({ listen: false, maintenance: { ...settings.maintenance, enabled: false } });
      current = worker;
      let endedBy: RunForSummary['endedBy'] = 'budget';
      const stop = stopSignal();
      endRunFor = stop.end;
      try {
        endedBy = await runWithinBudget(worker, { started, maxMs, drainMs }, stop, settings, logger);
      } catch (error) {
        await worker.stop(0).catch(() => {});
        throw error;
      } finally {
        endRunFor = null;
        if (phase === 'running-for') phase = 'idle';
      }
      const counts = worker.counts();
      return { ...counts, endedBy, ms: Math.round(performance.now() - started) };
    },
  };
}

type Phase = 'idle' | 'started' | 'running-for' | 'stopped';

/** Why `what` (start() or runFor()) may not run in this phase, or null when it may. */
function refusal(phase: Phase, what: string): Error | null {
  if (phase === 'stopped') return new Error(`Leasehold worker: ${what} after stop(): create a new worker`);
  if (phase === 'started') return new Error(`Leasehold worker: ${what} while started: stop() it first`);
  if (phase === 'running-for') return new Error(`Leasehold worker: ${what} while a runFor() is in progress`);
  return null;
}

/** The database handles a worker runs on. */
interface Connection {
  db: Db;
  /** Closes the pool made from the URL (stop() calls it); null for the caller's pool, never closed here. */
  closePool: (() => Promise<void>) | null;
  databaseUrl: string | undefined;
  claimDb: Db | undefined;
  listenUrl: string | pg.ClientConfig | undefined;
}

/** The caller's pool as it is, or a pool made from `connectionString`. */
function connect(options: CreateWorkerOptions, settings: WorkerSettings): Connection {
  const listenUrl: Connection['listenUrl'] = options.listenConnectionString;
  if (options.pool) {
    // Your pool, with your settings: no SET LOCAL limits and no listeners are added to it.
    const db = drizzle(options.pool, { schema });
    return {
      db,
      closePool: null,
      databaseUrl: undefined,
      claimDb: db,
      listenUrl: listenUrl ?? { ...options.pool.options },
    };
  }
  const databaseUrl = options.connectionString!;
  const handle = createDb(databaseUrl, {
    max: Math.min(settings.concurrency + 4, 30),
    applicationName: 'leasehold-worker',
    preparedStatements: settings.preparedStatements ?? true,
  });
  return { db: handle.db, closePool: handle.close, databaseUrl, claimDb: undefined, listenUrl };
}

/** How stop() ends a runFor in progress: `end()` settles `stopped` and marks the stop as requested. */
interface StopSignal {
  stopped: Promise<void>;
  requested: () => boolean;
  end: () => void;
}

function stopSignal(): StopSignal {
  let requested = false;
  let end = () => {};
  const stopped = new Promise<void>((resolve) => {
    end = () => {
      requested = true;
      resolve();
    };
  });
  return { stopped, requested: () => requested, end };
}

/**
 * One runFor on its fresh Worker: a reaper round, claims until the queue is empty, the claiming
 * window (maxMs - drainMs) ends or stop() is called, then the stop, with what is left of the
 * budget (less the release reserve) as the grace, or graceMs after a stop(). Resolves how it ended.
 */
async function runWithinBudget(
  worker: Worker,
  budget: { started: number; maxMs: number; drainMs: number },
  stop: StopSignal,
  settings: WorkerSettings,
  logger: Logger,
): Promise<RunForSummary['endedBy']> {
  const { started, maxMs, drainMs } = budget;
  // A run killed by its platform leaves leases behind: the next run's reaper frees them.
  if (settings.maintenance.enabled)
    await worker
      .reapExpiredNow()
      .catch((error: unknown) => logger.warn({ err: error }, 'runFor: the reaper round failed; claiming anyway'));
  await worker.start();
  const claimUntil = started + maxMs - drainMs;
  const outcome = await Promise.race([untilEmpty(worker, claimUntil), stop.stopped.then(() => 'stopped' as const)]);
  const endedBy = stop.requested() ? 'stopped' : outcome;
  const reserve = Math.min(RUN_FOR_RELEASE_RESERVE_MS, Math.floor(maxMs / 10));
  const grace = Math.max(0, Math.round(started + maxMs - reserve - performance.now()));
  await worker.stop(stop.requested() ? settings.graceMs : grace);
  return endedBy;
}

/**
 * Resolves 'empty' once a claim has returned after every attempt ended and started nothing
 * (nothing due was left unlocked), or 'budget' at `deadline` (performance.now() time).
 * Claims start their jobs in the same tick they return, so "no attempt in flight, and the last
 * claim is newer than the last attempt's end" means that claim found nothing.
 */
async function untilEmpty(worker: Worker, deadline: number): Promise<'empty' | 'budget'> {
  let wokenFor: string | null = null;
  while (performance.now() < deadline) {
    const status = worker.health();
    if (status.inFlight === 0 && status.lastClaimAt !== null) {
      const ended = status.lastAttemptEndedAt;
      if (ended === null || Date.parse(status.lastClaimAt) > Date.parse(ended)) return 'empty';
      // The last attempt ended after the last claim: claim now rather than at the next poll.
      if (wokenFor !== ended) {
        wokenFor = ended;
        worker.wake();
      }
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(RUN_FOR_CHECK_MS, deadline - performance.now())));
  }
  return 'budget';
}

function parseRunFor(options: RunForOptions): { maxMs: number; drainMs: number } {
  if (typeof options !== 'object' || options === null)
    throw new WorkerOptionsError('runFor(options): pass { maxMs } (the time budget in ms)');
  for (const key of Object.keys(options))
    if (key !== 'maxMs' && key !== 'drainMs') throw new WorkerOptionsError(`runFor: unknown option ${key}`);
  const { maxMs } = options;
  if (!Number.isInteger(maxMs) || maxMs < 100 || maxMs > 86_400_000)
    throw new WorkerOptionsError(`runFor: maxMs must be a whole number of ms from 100 to 86400000, got ${maxMs}`);
  const drainMs = options.drainMs ?? Math.floor(maxMs / 4);
  if (!Number.isInteger(drainMs) || drainMs < 0 || drainMs >= maxMs)
    throw new WorkerOptionsError(`runFor: drainMs must be a whole number of ms from 0 to below maxMs, got ${drainMs}`);
  return { maxMs, drainMs };
}

/** The Worker settings createWorker makes of its options (exported for tests; not in the package's entries). @internal */
export function parseOptions(options: CreateWorkerOptions, internal: WorkerInternals = {}): Parsed {
  if (typeof options !== 'object' || options === null)
    throw new WorkerOptionsError('createWorker(options): pass { pool or connectionString, jobs: [handlers] }');
  const problems: string[] = [];
  for (const key of Object.keys(options)) if (!KNOWN_OPTIONS.has(key)) problems.push(`${key}: not an option`);

  const { pool, connectionString } = options;
  if (pool !== undefined && connectionString !== undefined)
    problems.push('pool, connectionString: pass one of them, not both');
  else if (pool === undefined && connectionString === undefined)
    problems.push('pool or connectionString: one is required (your pg.Pool, or a postgres:// URL)');
  else if (pool !== undefined && !isPool(pool)) problems.push('pool: not a pg.Pool (it has no query, connect and end)');
  else if (connectionString !== undefined && !isPostgresUrl(connectionString))
    problems.push(`connectionString: not a postgres:// URL`);
  if (options.listenConnectionString !== undefined && !isPostgresUrl(options.listenConnectionString))
    problems.push('listenConnectionString: not a postgres:// URL');
  if (options.preparedStatements !== undefined && pool !== undefined)
    problems.push('preparedStatements: only with connectionString (your pool keeps its own statements)');

  const handlers = parseHandlers(options.jobs, problems);

  /** A whole-number option, checked against the table's range; `fallback` when the default is computed. */
  const int = (key: IntOption, computed?: number): number => {
    const setting: WorkerSetting = WORKER_SETTINGS[key];
    const { min = 0, max = 0 } = setting;
    const fallback = computed ?? Number(setting.default);
    const value = options[key];
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      problems.push(`${key}: must be a whole number from ${min} to ${max}, got ${describeValue(value)}`);
      return fallback;
    }
    return value;
  };
  const bool = (key: BooleanOption): boolean => {
    const value = options[key];
    if (value === undefined) return WORKER_SETTINGS[key].default;
    if (typeof value !== 'boolean') problems.push(`${key}: must be true or false, got ${describeValue(value)}`);
    return value === true;
  };
  const concurrency = int('concurrency');
  const leaseSeconds = int('leaseSeconds');
  const pollMs = int('pollMs');
  const batchSize = int('batchSize', Math.min(concurrency, MAX_CLAIM_BATCH));
  const graceMs = int('graceMs');
  const abandonAfterMs = int('abandonAfterMs');
  const claimStaleMs = int('claimStaleMs', claimStaleDefault(pollMs));
  const healthTimeoutMs = int('healthTimeoutMs');
  const listen = bool('listen');
  const maintenance = bool('maintenance');
  const preparedStatements = bool('preparedStatements');
  const scheduler = bool('scheduler');
  const schedules = parseSchedules(options.schedules, problems);
  if (claimStaleMs <= pollMs * 1.2)
    problems.push(`claimStaleMs: must exceed pollMs × 1.2 (${pollMs * 1.2} ms: a poll may take that long)`);

  let queues: string[] = [];
  if (options.queues === undefined) {
    // The handlers' queues and `default`, as a CLI worker serves them (producer.ts).
    queues = [...new Set(['default', ...handlers.map((h) => h.defaultQueue ?? 'default')])].sort();
  } else if (!Array.isArray(options.queues) || options.queues.length === 0) {
    problems.push('queues: list at least one queue name (or leave it out to serve the handlers’ queues)');
  } else {
    for (const [i, q] of options.queues.entries())
      if (typeof q !== 'string' || !NAME_PATTERN.test(q))
        problems.push(`queues[${i}]: not a queue name: ${describeValue(q)}`);
    queues = [...new Set(options.queues)];
  }
  const limitProblems = queueLimitsOptionProblems(options.queueLimits);
  problems.push(...limitProblems);
  const queueLimits = limitProblems.length > 0 ? {} : copyQueueLimits(options.queueLimits);
  problems.push(...unservedQueueLimits(queueLimits, queues, { limits: 'queueLimits', queues: 'queues' }));

  const workerId = options.workerId ?? `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  if (typeof workerId !== 'string' || workerId.length < 1 || workerId.length > 200)
    problems.push('workerId: 1 to 200 characters');
  if (options.logger !== undefined && !isLogger(options.logger))
    problems.push('logger: not a pino logger (it needs child, isLevelEnabled, info, warn, error)');
  if (options.retry !== undefined && (typeof options.retry !== 'object' || options.retry === null))
    problems.push('retry: an object of retry policy fields');
  problems.push(...retentionProblems(options.retention));

  if (problems.length > 0) throw new WorkerOptionsError(`createWorker: invalid options:\n  ${problems.join('\n  ')}`);
  return {
    handlers,
    schedules,
    claimStaleMs,
    healthTimeoutMs,
    settings: workerSettingsOf({
      workerId,
      queues,
      queueLimits,
      concurrency,
      leaseSeconds,
      batchSize,
      pollMs,
      listen,
      preparedStatements,
      scheduler,
      asyncClaims: internal.asyncClaims ?? WORKER_SETTINGS.asyncClaims.default,
      graceMs,
      abandonAfterMs,
      retry: options.retry,
      maintenance: {
        enabled: maintenance,
        // Not options of createWorker: the CLI's (WorkerInternals), else their defaults.
        reapIntervalMs: internal.reapIntervalMs ?? WORKER_SETTINGS.reapIntervalMs.default,
        retentionIntervalMs: internal.retentionIntervalMs ?? WORKER_SETTINGS.retentionIntervalMs.default,
        historyIntervalMs: internal.historyIntervalMs ?? WORKER_SETTINGS.historyIntervalMs.default,
        retention: options.retention ?? {},
        ...(internal.unknownKindGraceMs === undefined ? {} : { unknownKindGraceMs: internal.unknownKindGraceMs }),
      },
    }),
  };
}

function parseHandlers(jobs: unknown, problems: string[]): Handler[] {
  if (!Array.isArray(jobs) || jobs.length === 0) {
    problems.push('jobs: list at least one handler (jobs: [sendReceipt, …])');
    return [];
  }
  const handlers: Handler[] = [];
  const firstIndex = new Map<string, number>();
  for (const [i, job] of jobs.entries()) {
    const h = job as Partial<Handler> | null;
    if (!h || typeof h !== 'object' || typeof h.kind !== 'string' || typeof h.handle !== 'function') {
      problems.push(`jobs[${i}]: not a handler (it needs a kind and a handle function): ${describeValue(job)}`);
      continue;
    }
    const seen = firstIndex.get(h.kind);
    if (seen !== undefined) {
      problems.push(`jobs[${i}]: a second handler for kind ${h.kind} (jobs[${seen}] has it): one handler per kind`);
      continue;
    }
    firstIndex.set(h.kind, i);
    try {
      new HandlerRegistry([h as Handler]); // the registry's own checks: versions, redact paths, names
      handlers.push(h as Handler);
    } catch (error) {
      problems.push(`jobs[${i}] (kind ${h.kind}): ${(error as Error).message}`);
    }
  }
  return handlers;
}

function isPool(value: unknown): value is pg.Pool {
  const v = value as Partial<pg.Pool> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.query === 'function' &&
    typeof v.connect === 'function' &&
    typeof v.end === 'function'
  );
}

function isPostgresUrl(value: unknown): boolean {
  return typeof value === 'string' && URL.canParse(value) && /^postgres(ql)?:$/.test(new URL(value).protocol);
}

function isLogger(value: unknown): value is Logger {
  const v = value as Partial<Logger> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    ['child', 'isLevelEnabled', 'info', 'warn', 'error'].every(
      (m) => typeof (v as Record<string, unknown>)[m] === 'function',
    )
  );
}
