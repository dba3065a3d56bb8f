/**
 * The worker: composes the services that run jobs and owns their lifecycle.
 *
 * - producer.ts claims for free slots and starts an attempt per job;
 * - attempt.ts runs one attempt and says what came of it;
 * - completer.ts settles it (the only caller of the settle functions);
 * - lease-keeper.ts heartbeats running attempts and stops those that must not go on;
 * - maintenance.ts keeps the registry entry, records the kinds it runs (the kinds registry the
 *   dashboard reads) and runs the reaper and retention;
 * - listener.ts turns enqueue NOTIFYs into wake-ups for the producer.
 *
 * Invariants:
 * - no shared-pool connection is held while a handler works: heartbeats and settlements each
 *   borrow one for one short statement; claims run on a connection of their own;
 * - an attempt settles only through the queue's lease-guarded functions, so a worker that lost
 *   its lease (expired, reaped, cancelled by an operator) changes nothing; its handler's
 *   AbortSignal fires as soon as a heartbeat reports the loss;
 * - on stop, nothing is claimed any more, running handlers get `graceMs` to finish, and what
 *   is still running then is released (token-guarded) so another worker starts it at once.
 */
import type pg from 'pg';
import type { Logger } from 'pino';
import { createDb, type Db, type DbHandle } from '../db/client.ts';
import { GROUPED_WAKE_SUFFIX, NOTIFY_QUEUE_LIMIT, WAKE_CHANNEL } from '../db/queue/index.ts';
import type { ScheduleDeclaration } from '../db/queue/schedules.ts';
import { refuseIncompatibleSchema } from '../db/schema-version.ts';
import { type Attempt, AttemptAborted, type AttemptDeps, execute } from './attempt.ts';
import { Completer, type CompleterSettings, type SettlementCounts } from './completer.ts';
import { EventLoopMonitor, lagWarnMs } from './event-loop.ts';
import type { WorkerStatus } from './health.ts';
import type { WorkerEvents } from './events.ts';
import type { Failpoints } from './failpoints.ts';
import { type HandlerRegistry, limitDeclarations } from './handler.ts';
import { heartbeatRoundMs, LeaseKeeper } from './lease-keeper.ts';
import { WakeListener } from './listener.ts';
import { Maintenance, type MaintenanceRounds } from './maintenance.ts';
import type { WorkerMetrics } from './metrics.ts';
import { handlerQueues, Producer, type ProducerSettings } from './producer.ts';
import { queueLimitDeclarations } from './queue-limits.ts';
import { dbErrorInWords, isRetryableDbError, retryWhileUnavailable, sleep } from './timing.ts';

/** A worker's settings: the producer's and the completer's, and these. */
export interface WorkerSettings extends ProducerSettings, CompleterSettings {
  /** LISTEN for wake-ups (on deps.listenUrl); without it the worker polls only. */
  listen: boolean;
  /** Whether the claim connection prepares its statements (default true; false behind PgBouncer). */
  preparedStatements?: boolean | undefined;
  graceMs: number;
  registryIntervalMs: number;
  maintenance: MaintenanceRounds;
  /** Enqueue due schedules' ticks from this process (docs/scheduling.md). */
  scheduler: boolean;
}

/** @internal */
export interface WorkerDeps {
  db: Db;
  /** Where the claim connection and LISTEN connect, unless claimDb and listenUrl say otherwise. */
  databaseUrl?: string | undefined;
  /**
   * Where LISTEN connects (default databaseUrl): a URL or a `pg` client config. LISTEN needs a
   * session of its own, which a pooler in transaction mode does not give: behind one, this is
   * PostgreSQL's own address (or settings.listen is off and the worker polls).
   */
  listenUrl?: string | pg.ClientConfig | undefined;
  /** Where claims run; by default a connection of the worker's own, opened from databaseUrl. */
  claimDb?: Db | undefined;
  registry: HandlerRegistry;
  logger: Logger;
  /** What the worker registry shows as this worker's version. */
  version?: string | null | undefined;
  metrics?: WorkerMetrics | undefined;
  /** Test-only crash points (the failure harness). */
  failpoints?: Failpoints | undefined;
  /** Where `failed`, `dead` and `error` events go (workers/events.ts). */
  events?: WorkerEvents | undefined;
  /** The schedules of this worker's code, declared at start (db/queue/schedules.ts). */
  schedules?: readonly ScheduleDeclaration[] | undefined;
}

// Declared in health.ts (which worker.ts imports, never the reverse): lint's import/no-cycle.
export type { WorkerStatus } from './health.ts';

/** What a worker's attempts came to so far (runFor's summary). */
export type WorkerCounts = SettlementCounts & { claimed: number };

/** How long released attempts get to settle after the grace period, before stop goes on. */
const RELEASE_WAIT_MS = 10_000;
/**
 * How long start() waits for a database that refuses connections (restarting, failing over)
 * before it gives up. Other errors (bad credentials, no schema) fail start at once.
 */
const START_TIMEOUT_MS = 60_000;

/** @internal */
export class Worker {
  private readonly completer: Completer;
  private readonly producer: Producer;
  private readonly leaseKeeper: LeaseKeeper;
  private readonly maintenance: Maintenance;
  private readonly eventLoop: EventLoopMonitor;
  /** What every execution needs, made once (not per job). */
  private readonly attemptDeps: AttemptDeps;
  /** The first registration while it is in flight: shutdown deregisters only after it. */
  private registering: Promise<void> | null = null;
  /** That registration succeeded (a running worker's stop() then goes on without waiting). */
  private registered = false;
  private listener: WakeListener | null = null;
  /**
   * The claim connection (a pool of one, kept open). Claims run one at a time, so one
   * connection is enough, and on it the prepared claim has its generic plan and the server
   * process its caches from the second claim on. Taken from the shared pool, a claim often got
   * a connection that had never run it: planned afresh for its first five runs there, and it
   * was most of the slowest pickups (docs/performance.md).
   */
  private claimHandle: DbHandle | null = null;
  /** The heartbeats' own small pool, with a client-side query timeout (see start()). */
  private heartbeatHandle: DbHandle | null = null;
  private state: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  /** Aborted by stop(): what start() has not opened yet stays closed, and its wait ends. */
  private readonly stopRequested = new AbortController();
  private stopping: Promise<void> | null = null;
  private claimLoopStartedAt: Date | null = null;
  private lastAttemptEndedAt: Date | null = null;
  private claimed = 0;

  constructor(
    private readonly settings: WorkerSettings,
    private readonly deps: WorkerDeps,
  ) {
    const { db, logger, metrics, failpoints, registry, events } = deps;
    // No queues given: the handlers' (their default queues and `default`).
    if (settings.queues.length === 0) this.settings = { ...settings, queues: handlerQueues(registry) };
    const s = this.settings;
    this.completer = new Completer(s, {
      db,
      logger,
      metrics,
      failpoints,
      events,
      // The producer's attempts in flight: with all of them waiting to be acknowledged, now.
      inFlight: () => this.producer.inFlight.size,
      gaveUp: (token) => this.leaseKeeper.gaveUp(token),
    });
    this.attemptDeps = {
      db,
      registry,
      leaseSeconds: s.leaseSeconds,
      metrics,
      failpoints,
      isolation: {
        onTerminated: (job, reason) => metrics?.isolatedTerminated.inc({ queue: job.queue, kind: job.kind, reason }),
      },
    };
    this.producer = new Producer(s, {
      registry,
      handBack: (jobs, options) => {
        this.claimed += jobs.length;
        return this.completer.releaseUnstarted(jobs, options);
      },
      claimFailed: () => this.leaseKeeper.claimFailed(),
      logger,
      metrics,
      failpoints,
      run: (entry) => this.run(entry),
    });
    this.leaseKeeper = new LeaseKeeper(s.leaseSeconds, this.producer.inFlight, {
      db,
      workerId: s.workerId,
      registry,
      logger,
      failpoints,
    });
    this.eventLoop = new EventLoopMonitor(lagWarnMs(s.leaseSeconds), {
      logger,
      metrics,
      // Stopped handlers still running too: a deaf CPU-bound one is the likeliest blocker.
      running: () => [...this.producer.inFlight, ...this.producer.stoppedRunning].map((entry) => entry.job.kind),
    });
    this.maintenance = new Maintenance(
      { ...s, leaseExpiredDelayMs: s.retry?.leaseExpiredDelayMs },
      {
        db,
        logger,
        metrics,
        failpoints,
        version: deps.version,
        kinds: registry.registrations(),
        limits: [...limitDeclarations(registry.handlers()), ...queueLimitDeclarations(s.queueLimits)],
        queueLimitsFound: (queues) => this.producer.limitQueues(queues),
        groupsFound: (queues, refresh) => this.producer.groupsFound(queues, refresh),
        schedules: deps.schedules,
      },
    );
  }

  health(): WorkerStatus {
    return {
      status: this.state === 'running' ? 'ok' : this.state,
      workerId: this.settings.workerId,
      inFlight: this.producer.inFlight.size,
      stoppedRunning: this.producer.stoppedRunning.size,
      concurrency: this.settings.concurrency,
      listening: this.listener?.connected ?? false,
      lastClaimAt: this.producer.lastClaimAt?.toISOString() ?? null,
      claimLoopStartedAt: this.claimLoopStartedAt?.toISOString() ?? null,
      lastAttemptEndedAt: this.lastAttemptEndedAt?.toISOString() ?? null,
      eventLoop: this.eventLoop.lag(),
    };
  }

  /** Jobs claimed, and what their settlements did, since start. */
  counts(): WorkerCounts {
    return { claimed: this.claimed, ...this.completer.counts };
  }

  /** One reaper round now (runFor runs one; a started worker's maintenance does it every reapIntervalMs). */
  reapExpiredNow(): Promise<void> {
    return this.maintenance.reapRound();
  }

  /** Claims now (runFor uses it once a run is over, to learn at once whether more is due). */
  wake(): void {
    this.producer.wake();
  }

  /**
   * A wake-up NOTIFY's payload: a queue (or `*`) whose jobs may be ahead of the claims' lower
   * bound, or a grouped enqueue's queue (db/queue/groups.ts), whose grouped claims run again.
   */
  private woken(payload: string): void {
    const queues = this.settings.queues;
    if (payload.endsWith(GROUPED_WAKE_SUFFIX)) {
      const queue = payload.slice(0, -GROUPED_WAKE_SUFFIX.length);
      if (queues.includes(queue)) this.producer.groupsFound([queue]);
      return;
    }
    if (payload === '*' || queues.includes(payload)) {
      // The job may be ahead of the claims' lower bound (a higher priority): walk from the head.
      this.producer.restartFromHead(payload);
      this.producer.wake();
    }
  }

  async start(): Promise<void> {
    if (this.state !== 'new') throw new Error('Leasehold worker: start() called twice');
    this.state = 'running';
    const { logger } = this.deps;
    const s = this.settings;
    // The first statement: a worker started while its database restarts waits for it.
    const stopped = this.stopRequested.signal;
    // A schema this code cannot work with refuses the start, with the reason (db/schema-version.ts).
    this.registering = retryWhileUnavailable(
      () => refuseIncompatibleSchema(this.deps.db).then(() => this.maintenance.register()),
      {
        deadlineMs: performance.now() + START_TIMEOUT_MS,
        signal: stopped,
        // One short line per try (which one, the wait, the cause in words); the stack once, at debug.
        onRetry: (error, { attempt, waitMs }) => {
          if (attempt === 1) logger.debug({ err: error }, 'database unavailable at start: the first error');
          logger.warn(
            { attempt, retryInMs: Math.round(waitMs), cause: dbErrorInWords(error) },
            `database unavailable at start (try ${attempt}): ${dbErrorInWords(error)}; trying again in ${(waitMs / 1000).toFixed(1)} s`,
          );
        },
      },
    );
    try {
      await this.registering;
      this.registered = true;
    } catch (error) {
      // Stopped while waiting for the database: nothing was opened. Any other error is start's.
      if (stopped.aborted && isRetryableDbError(error)) return;
      throw error;
    }
    // stop() during start: what shutdown has already passed must not be opened now.
    if (stopped.aborted) return;
    if (s.listen) {
      const url = this.deps.listenUrl ?? this.deps.databaseUrl;
      if (url === undefined)
        throw new Error('Leasehold worker: settings.listen needs deps.listenUrl or deps.databaseUrl');
      this.listener = new WakeListener({
        url,
        channel: WAKE_CHANNEL,
        logger,
        onWake: (payload) => this.woken(payload),
        onQueueUsage: (usage) => {
          this.deps.metrics?.notifyQueueUsage.set(usage);
          if (usage >= NOTIFY_QUEUE_LIMIT) {
            logger.warn(
              { notifyQueueUsage: usage, limit: NOTIFY_QUEUE_LIMIT },
              'NOTIFY queue over the limit: enqueues send no wake-ups, workers find jobs by polling (a LISTEN session is not reading: look for one idle in transaction)',
            );
          }
        },
      });
      await this.listener.start();
      if (stopped.aborted) {
        await this.listener.stop();
        return;
      }
    }
    let claimDb = this.deps.claimDb;
    if (!claimDb) {
      if (this.deps.databaseUrl === undefined)
        throw new Error('Leasehold worker: deps.claimDb or deps.databaseUrl is needed for claims');
      this.claimHandle = createDb(this.deps.databaseUrl, {
        max: 1,
        applicationName: 'leasehold-claim',
        idleTimeoutMs: 0,
        preparedStatements: s.preparedStatements ?? true,
      });
      claimDb = this.claimHandle.db;
    }
    const { events } = this.deps;
    if (events) claimDb = reportingFailures(claimDb, (error) => this.claimFailed(events, error));
    // Heartbeats get a pool of their own whose queries time out on the client at the round's
    // deadline: a heartbeat on a half-open connection then drops that connection, instead of
    // holding a connection of the shared pool until TCP gives up (security review B2). Only
    // when the worker was given a database URL; a pool the application passed stays as it is.
    if (this.deps.databaseUrl !== undefined && this.deps.claimDb === undefined) {
      this.heartbeatHandle = createDb(this.deps.databaseUrl, {
        max: 2,
        applicationName: 'leasehold-worker',
        queryTimeoutMs: heartbeatRoundMs(s.leaseSeconds),
        preparedStatements: s.preparedStatements ?? true,
      });
    }
    this.leaseKeeper.start(this.heartbeatHandle?.db);
    // The worker lease starts before the first claim, so every claim is covered by it (a claim
    // made before would be renewed per job: correct, only dearer).
    await this.leaseKeeper.heartbeatAll();
    if (stopped.aborted) return; // stop() came meanwhile: it stops the keeper; claim nothing
    this.claimLoopStartedAt = new Date();
    this.producer.start(claimDb);
    this.eventLoop.start();
    this.maintenance.start();
    logger.info(
      {
        queues: s.queues,
        queueLimits: s.queueLimits,
        concurrency: s.concurrency,
        leaseSeconds: s.leaseSeconds,
        listen: s.listen,
        preparedStatements: s.preparedStatements ?? true,
        asyncClaims: s.asyncClaims,
        kinds: this.deps.registry.kinds(),
      },
      'worker started',
    );
  }

  /**
   * Stops claiming, gives running handlers `graceMs` to finish, then aborts and releases the
   * rest, flushes acknowledgements and removes the registry entry. Idempotent.
   */
  stop(graceMs = this.settings.graceMs): Promise<void> {
    this.stopping ??= this.shutdown(graceMs);
    return this.stopping;
  }

  /** One attempt from execution to settlement; the producer frees its slot after this. */
  private run(entry: Attempt): Promise<void> {
    this.claimed += 1;
    return execute(entry, this.attemptDeps)
      .then((result) => this.completer.settle(entry, result))
      .finally(() => {
        this.lastAttemptEndedAt = new Date();
      });
  }

  private claimFailed(events: WorkerEvents, error: unknown): void {
    const message = 'claim failed; the claim loop retries with backoff';
    events.emit('error', { source: 'claim', message, error, workerId: this.settings.workerId });
  }

  /** Whether start()'s registration failed (false: it succeeded, or start() was never called). */
  private registrationFailed(): Promise<boolean> {
    return (
      this.registering?.then(
        () => false,
        () => true,
      ) ?? Promise.resolve(false)
    );
  }

  private async shutdown(graceMs: number): Promise<void> {
    const { logger } = this.deps;
    const { inFlight } = this.producer;
    this.state = 'stopping';
    this.stopRequested.abort();
    // A start whose registration failed (the start's first statement; or it was stopped while
    // waiting for the database) opened nothing and registered nothing: there is nothing to stop,
    // remove or log (createWorker stops a worker whose start threw; its caller says why).
    if (!this.registered && (await this.registrationFailed())) {
      this.state = 'stopped';
      return;
    }
    const claimsStopped = this.producer.stop();
    const maintenanceStopped = this.maintenance.stop();
    await this.listener?.stop();
    await claimsStopped; // a claim in flight has started (or released) its jobs by now
    logger.info({ inFlight: inFlight.size, graceMs }, 'stopping: no more claims, waiting for running handlers');
    if (inFlight.size > 0) {
      await Promise.race([this.producer.whenDrained(), sleep(graceMs)]);
    }
    if (inFlight.size > 0) {
      logger.warn({ releasing: inFlight.size }, 'grace period over: releasing unfinished jobs');
      for (const entry of inFlight) {
        entry.stop(new AttemptAborted('shutdown', 'the worker is shutting down'));
      }
      await Promise.race([this.producer.whenDrained(), sleep(RELEASE_WAIT_MS)]);
    }
    if (this.producer.stoppedRunning.size > 0) {
      // Their jobs are settled; the handlers are not waited for (a process exit ends them).
      logger.warn(
        { stoppedRunning: this.producer.stoppedRunning.size },
        'stopping with stopped handlers that ignore their signal still running',
      );
    }
    await this.completer.flush();
    await this.leaseKeeper.stop();
    this.eventLoop.stop();
    await maintenanceStopped;
    // A registration still in flight when stop() came must not land after the removal.
    await this.registering?.catch(() => {});
    await this.maintenance.deregister();
    await this.claimHandle
      ?.close()
      .catch((error: unknown) => logger.warn({ err: error }, 'could not close the claim connection'));
    await this.heartbeatHandle
      ?.close()
      .catch((error: unknown) => logger.warn({ err: error }, 'could not close the heartbeat connections'));
    this.state = 'stopped';
    logger.info('worker stopped');
  }
}

type PreparedQuery = { execute(...args: unknown[]): Promise<unknown> };
type Session = { prepareQuery(...args: unknown[]): PreparedQuery };

/**
 * `db` with every statement that fails also handed to `onError` (on the claim connection each
 * statement is a claim, so this is how a failed claim round becomes an `error` event). Drizzle
 * runs both `execute` and named statements through its session's prepareQuery, so that is the
 * one place wrapped.
 */
function reportingFailures(db: Db, onError: (error: unknown) => void): Db {
  const session = (db as unknown as { session?: Session }).session;
  if (!session || typeof session.prepareQuery !== 'function') return db;
  const tap = (pending: Promise<unknown>) =>
    pending.catch((error: unknown) => {
      onError(error);
      throw error;
    });
  const wrapped = Object.create(session, {
    prepareQuery: {
      value: (...args: unknown[]) => {
        const prepared = session.prepareQuery(...args);
        return Object.create(prepared, { execute: { value: (...a: unknown[]) => tap(prepared.execute(...a)) } });
      },
    },
  }) as Session;
  return Object.create(db, { session: { value: wrapped } }) as Db;
}
