/**
 * The worker runtime: claim, run, heartbeat, settle; plus the maintenance loops and the
 * worker registry entry.
 *
 * Invariants:
 * - no database connection is held while a handler works: claim, heartbeat and settle each
 *   borrow a pooled connection for one short statement;
 * - an attempt settles only through the queue's lease-guarded functions, so a worker that lost
 *   its lease (expired, reaped, cancelled by an operator) changes nothing; its handler's
 *   AbortSignal fires as soon as a heartbeat reports the loss;
 * - at most `concurrency` attempts run at once, and a claim asks only for free slots;
 * - on stop, nothing is claimed any more, running handlers get `graceMs` to finish, and what
 *   is still running then is released (token-guarded) so another worker starts it at once.
 */
import os from 'node:os';
import type { Logger } from 'pino';
import { z } from 'zod';
import { createDb, type Db, type DbHandle } from '../db/client';
import {
  claim,
  completeManyIfLeaseHeld,
  deregisterWorker,
  failIfLeaseHeld,
  findReceipt,
  heartbeatIfLeaseHeld,
  heartbeatManyIfLeaseHeld,
  LEASE_LOST,
  reapExpiredLeases,
  recordReceipt,
  registerWorker,
  releaseIfLeaseHeld,
  removeExpiredHistory,
  removeOldReceipts,
  removeStaleWorkers,
  touchWorker,
  WAKE_CHANNEL,
  withMaintenanceLock,
  type ClaimedJob,
  type Executor,
  type RetentionOptions,
  type RetryPolicy,
  type SettleOutcome,
} from '../db/queue';
import type { FailureClass } from '../db/schema';
import { classify } from './errors';
import { Failpoints } from './failpoints';
import type { Handler, HandlerContext, HandlerRegistry } from './handler';
import { WakeListener } from './listener';
import type { WorkerMetrics } from './metrics';

export interface WorkerSettings {
  workerId: string;
  queues: string[];
  concurrency: number;
  leaseSeconds: number;
  /** Most jobs one claim asks for (never more than the free slots). */
  batchSize: number;
  pollMs: number;
  listen: boolean;
  graceMs: number;
  /** Completions wait this long to be acknowledged together in one statement. */
  ackFlushMs: number;
  /** Claims commit without waiting for their WAL flush (off by default: db/queue/claim.ts, docs/contract.md §4). */
  asyncClaims: boolean;
  retry?: Partial<RetryPolicy>;
  registryIntervalMs: number;
  maintenance: {
    enabled: boolean;
    reapIntervalMs: number;
    retentionIntervalMs: number;
    staleWorkerSeconds: number;
    receiptsRetentionSeconds: number;
    retention: RetentionOptions;
  };
}

export interface WorkerDeps {
  db: Db;
  databaseUrl: string;
  /** Where claims run; by default a connection of the claim loop's own, opened from databaseUrl. */
  claimDb?: Db | undefined;
  registry: HandlerRegistry;
  logger: Logger;
  metrics?: WorkerMetrics | undefined;
  /** Test-only crash points (the failure harness). */
  failpoints?: Failpoints | undefined;
}

type StopReason = 'lease_lost' | 'timeout' | 'shutdown';

/** The AbortSignal reason a handler sees. */
export class AttemptAborted extends Error {
  constructor(
    readonly reason: StopReason,
    message: string,
  ) {
    super(message);
    this.name = 'AttemptAborted';
  }
}

/**
 * One attempt in flight. Stopping it (lease lost, timeout, shutdown) rejects the wait on its
 * handler at once and aborts the handler's signal. The AbortController and the logger are made
 * on first use: at thousands of jobs a second, most attempts never need either.
 */
class InFlight {
  private controller: AbortController | null = null;
  private stopRun: ((reason: AttemptAborted) => void) | null = null;
  private logger: Logger | null = null;
  /** Why the attempt was stopped, once it was. */
  stopped: AttemptAborted | null = null;
  readonly startedAt = Date.now();
  /** When the handler ended (Date.now()), for the completion's log line. */
  endedAt = 0;
  /** Local monotonic time after which the handler has overrun its timeout. */
  timeoutAt = Number.POSITIVE_INFINITY;

  constructor(
    readonly job: ClaimedJob,
    readonly handler: Handler | undefined,
    /** Local monotonic time by which the lease has surely ended if no heartbeat got through. */
    public leaseDeadline: number,
    private readonly parentLogger: Logger,
  ) {}

  get log(): Logger {
    const { job } = this;
    return (this.logger ??= this.parentLogger.child({
      jobId: job.id,
      attempt: job.attempt,
      kind: job.kind,
      queue: job.queue,
      traceId: job.traceId,
    }));
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.stopped) this.controller.abort(this.stopped);
    }
    return this.controller.signal;
  }

  stop(reason: AttemptAborted): void {
    if (this.stopped) return;
    this.stopped = reason;
    this.controller?.abort(reason);
    this.stopRun?.(reason);
  }

  /** Runs the handler; rejects with the stop reason as soon as the attempt is stopped. */
  run(work: () => Promise<unknown>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.stopped) return reject(this.stopped);
      // Once the wait is settled, a later stop() rejecting it again is a no-op.
      this.stopRun = reject;
      try {
        Promise.resolve(work()).then(() => resolve(), reject); // a handler may also return a plain value
      } catch (error) {
        reject(error);
      }
    });
  }
}

const leaseLost = () => new AttemptAborted('lease_lost', 'the lease was lost (expired, reaped or cancelled)');

/**
 * Local monotonic time by which a lease renewed (or taken) at `sentAt` has surely ended, with a
 * second to spare for clock and network.
 */
function leaseDeadlineFrom(sentAt: number, leaseSeconds: number): number {
  return sentAt + leaseSeconds * 1000 - 1000;
}

/**
 * What a handler receives. One object per attempt, and its functions are made only when a
 * handler reads them (most handlers never heartbeat by hand): at thousands of jobs a second
 * the per-attempt closures showed in the profile. Read through getters, `heartbeat` and
 * `receipt` stay bound when destructured.
 */
class AttemptContext implements HandlerContext<unknown> {
  readonly job: ClaimedJob;
  readonly attempt: number;
  readonly deliveryKey: string;
  private heartbeatFn: (() => Promise<void>) | null = null;
  private receiptFn: HandlerContext<unknown>['receipt'] | null = null;

  constructor(
    private readonly entry: InFlight,
    readonly payload: unknown,
    private readonly db: Executor,
    private readonly leaseSeconds: number,
  ) {
    this.job = entry.job;
    this.attempt = entry.job.attempt;
    this.deliveryKey = entry.job.idempotencyKey ?? `${entry.job.kind}:${entry.job.id}`;
  }

  get signal(): AbortSignal {
    return this.entry.signal;
  }

  get logger(): Logger {
    return this.entry.log;
  }

  get heartbeat(): () => Promise<void> {
    return (this.heartbeatFn ??= async () => {
      const { entry, job } = this;
      const outcome = await heartbeatIfLeaseHeld(this.db, job, { leaseSeconds: this.leaseSeconds });
      if (!outcome.applied) {
        entry.stop(leaseLost());
        throw entry.stopped;
      }
      job.leaseUntil = outcome.leaseUntil;
      entry.leaseDeadline = leaseDeadlineFrom(performance.now(), this.leaseSeconds);
    });
  }

  get receipt(): HandlerContext<unknown>['receipt'] {
    return (this.receiptFn ??= async <T>(effect: () => Promise<T>, key: string = this.deliveryKey): Promise<T> => {
      const { entry, job, db } = this;
      const existing = await findReceipt(db, key);
      if (existing) {
        entry.log.info(
          { receiptKey: key, recordedBy: existing.attempt },
          'side effect already done: using its receipt',
        );
        return existing.result as T;
      }
      const value = await effect();
      const { receipt } = await recordReceipt(db, { key, jobId: job.id, attempt: job.attempt, result: value ?? null });
      return receipt.result as T;
    });
  }
}

/** Most completions in one acknowledgement statement (a claim batch's worth). */
const ACK_BATCH = 1000;

export class Worker {
  /** Attempts, not jobs: one job can have two attempts here (a stale one and a new one). */
  private readonly inFlight = new Set<InFlight>();
  private readonly stopController = new AbortController();
  /** Heartbeats go on through the grace period and stop only after the last release. */
  private readonly heartbeatController = new AbortController();
  private wakeUp: (() => void) | null = null;
  private wokenMeanwhile = false;
  /** The claim loop waits with every slot taken: a finishing attempt must wake it. */
  private waitingForSlot = false;
  private claimLoopDone: Promise<void> = Promise.resolve();
  /** Completed attempts waiting for the next batched acknowledgement. */
  private pendingAcks: InFlight[] = [];
  private ackTimer: NodeJS.Timeout | null = null;
  private listener: WakeListener | null = null;
  /**
   * The claim loop's own connection (a pool of one, kept open). Claims run one at a time, so one
   * connection is enough, and on it the prepared claim has its generic plan and the server
   * process its caches from the second claim on. Taken from the shared pool, a claim often got
   * a connection that had never run it: planned afresh for its first five runs there, and it
   * was most of the slowest pickups (docs/performance.md).
   */
  private claimHandle: DbHandle | null = null;
  private loops: Promise<void>[] = [];
  private drained: (() => void) | null = null;
  private state: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  private stopping: Promise<void> | null = null;
  lastClaimAt: Date | null = null;

  constructor(
    private readonly settings: WorkerSettings,
    private readonly deps: WorkerDeps,
  ) {}

  get running(): number {
    return this.inFlight.size;
  }

  health(): Record<string, unknown> {
    return {
      status: this.state === 'running' ? 'ok' : this.state,
      workerId: this.settings.workerId,
      inFlight: this.inFlight.size,
      listening: this.listener?.connected ?? false,
      lastClaimAt: this.lastClaimAt?.toISOString() ?? null,
    };
  }

  async start(): Promise<void> {
    if (this.state !== 'new') throw new Error('Leasehold worker: start() called twice');
    this.state = 'running';
    const { db, logger } = this.deps;
    const s = this.settings;
    await registerWorker(db, {
      id: s.workerId,
      host: os.hostname(),
      pid: process.pid,
      queues: s.queues,
      concurrency: s.concurrency,
      version: process.env.npm_package_version ?? null,
    });
    // stop() during start: what shutdown has already passed must not be opened now.
    if (this.stopController.signal.aborted) return;
    if (s.listen) {
      this.listener = new WakeListener({
        url: this.deps.databaseUrl,
        channel: WAKE_CHANNEL,
        logger,
        onWake: (queue) => {
          if (queue === '*' || s.queues.includes(queue)) this.wake();
        },
      });
      await this.listener.start();
      if (this.stopController.signal.aborted) {
        await this.listener.stop();
        return;
      }
    }
    if (!this.deps.claimDb)
      this.claimHandle = createDb(this.deps.databaseUrl, {
        max: 1,
        applicationName: 'leasehold-claim',
        idleTimeoutMs: 0,
      });
    this.claimLoopDone = this.claimLoop(this.deps.claimDb ?? this.claimHandle!.db);
    this.loops = [
      this.claimLoopDone,
      this.every(
        Math.max(250, (s.leaseSeconds * 1000) / 3),
        () => this.heartbeatAll(),
        this.heartbeatController.signal,
      ),
      this.every(this.timeoutSweepMs(), async () => this.sweepTimeouts(), this.heartbeatController.signal),
      this.every(s.registryIntervalMs, () => this.refreshRegistry()),
    ];
    if (s.maintenance.enabled) {
      this.loops.push(this.every(s.maintenance.reapIntervalMs, () => this.reapRound()));
      this.loops.push(this.every(s.maintenance.retentionIntervalMs, () => this.retentionRound()));
    }
    logger.info(
      {
        queues: s.queues,
        concurrency: s.concurrency,
        leaseSeconds: s.leaseSeconds,
        listen: s.listen,
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

  private async shutdown(graceMs: number): Promise<void> {
    const { logger, db } = this.deps;
    this.state = 'stopping';
    this.stopController.abort();
    this.wake();
    await this.listener?.stop();
    await this.claimLoopDone; // a claim in flight has started (or released) its jobs by now
    logger.info({ inFlight: this.inFlight.size, graceMs }, 'stopping: no more claims, waiting for running handlers');
    if (this.inFlight.size > 0) {
      await Promise.race([this.whenDrained(), sleep(graceMs)]);
    }
    if (this.inFlight.size > 0) {
      logger.warn({ releasing: this.inFlight.size }, 'grace period over: releasing unfinished jobs');
      for (const entry of this.inFlight) {
        entry.stop(new AttemptAborted('shutdown', 'the worker is shutting down'));
      }
      await Promise.race([this.whenDrained(), sleep(10_000)]);
    }
    await this.flushAcks();
    this.heartbeatController.abort();
    await Promise.allSettled(this.loops);
    await deregisterWorker(db, this.settings.workerId).catch((error: unknown) =>
      logger.warn({ err: error }, 'could not remove the worker registry entry (it will expire)'),
    );
    await this.claimHandle
      ?.close()
      .catch((error: unknown) => logger.warn({ err: error }, 'could not close the claim connection'));
    this.state = 'stopped';
    logger.info('worker stopped');
  }

  private whenDrained(): Promise<void> {
    if (this.inFlight.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const previous = this.drained;
      this.drained = () => {
        previous?.();
        resolve();
      };
    });
  }

  /** Wakes the claim loop (a notification, a free slot, a reconnect). */
  wake(): void {
    const resolve = this.wakeUp;
    this.wakeUp = null;
    if (resolve) resolve();
    else this.wokenMeanwhile = true; // a wake-up during a claim is not lost
  }

  private waitForWake(ms: number): Promise<void> {
    if (this.wokenMeanwhile) {
      this.wokenMeanwhile = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const signal = this.stopController.signal;
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        // Once this wait is over, a wake-up must land in wokenMeanwhile, not in this callback.
        if (this.wakeUp === done) this.wakeUp = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.wakeUp = done;
    });
  }

  private async claimLoop(claimDb: Db): Promise<void> {
    const { db, logger } = this.deps;
    const s = this.settings;
    let failures = 0;
    while (!this.stopController.signal.aborted) {
      const free = s.concurrency - this.inFlight.size;
      if (free > 0) {
        const limit = Math.min(free, s.batchSize);
        let jobs: ClaimedJob[];
        // A wake-up from before this claim is answered by it; one that arrives while it runs
        // (a NOTIFY for a job committed after its snapshot) must start another claim.
        this.wokenMeanwhile = false;
        try {
          jobs = await claim(claimDb, {
            queues: s.queues,
            workerId: s.workerId,
            limit,
            leaseSeconds: s.leaseSeconds,
            asyncCommit: s.asyncClaims,
          });
          failures = 0;
        } catch (error) {
          failures += 1;
          const delay = backoff(failures);
          logger.error({ err: error, retryInMs: delay }, 'claim failed; retrying');
          await sleep(delay, this.stopController.signal);
          continue;
        }
        this.lastClaimAt = new Date();
        if (this.stopController.signal.aborted) {
          // Stopped while the claim was in flight: hand these straight back.
          await Promise.all(
            jobs.map((job) =>
              releaseIfLeaseHeld(db, job, { reason: `released by ${s.workerId}: stopping` }).catch(() => {}),
            ),
          );
          return;
        }
        if (jobs.length > 0) this.deps.failpoints?.hit('after_claim');
        for (const job of jobs) this.begin(job);
        if (jobs.length === limit) continue; // there may be more due right now
      }
      // Polling with jitter is the correctness path; wake-ups only make it prompt. A freed slot
      // wakes the loop only if it is waiting for one: with slots free, the last claim took
      // everything due, and a claim per finished job would find nothing (it did: one empty
      // claim per job at low load; docs/performance.md has what that did to pickup).
      this.waitingForSlot = this.inFlight.size >= s.concurrency;
      await this.waitForWake(s.pollMs * (0.8 + Math.random() * 0.4));
      this.waitingForSlot = false;
    }
  }

  private begin(job: ClaimedJob): void {
    const { logger, metrics, registry } = this.deps;
    const entry = new InFlight(
      job,
      registry.get(job.kind),
      leaseDeadlineFrom(performance.now(), this.settings.leaseSeconds),
      logger,
    );
    this.inFlight.add(entry);
    metrics?.inFlight.inc();
    metrics?.claimed.inc({ queue: job.queue });
    if (job.attempt === 1 && job.startedAt) {
      const due = Math.max(job.createdAt.getTime(), job.runAt.getTime());
      metrics?.startDelay.observe({ queue: job.queue }, Math.max(0, job.startedAt.getTime() - due) / 1000);
    }
    // A completed attempt stays in flight (and heartbeated) until its acknowledgement is
    // through; flushAcks() finishes it then.
    this.execute(entry).then(
      (acknowledging) => {
        if (!acknowledging) this.finish(entry);
      },
      (error: unknown) => {
        entry.log.error({ err: error }, 'attempt ended with an unexpected error; the lease will expire');
        this.finish(entry);
      },
    );
  }

  /** The attempt is over: its slot is free. */
  private finish(entry: InFlight): void {
    this.inFlight.delete(entry);
    this.deps.metrics?.inFlight.dec();
    if (this.inFlight.size === 0) {
      const drained = this.drained;
      this.drained = null;
      drained?.();
    }
    if (this.waitingForSlot) this.wake();
  }

  /** Runs the attempt; true when it completed and now waits for its acknowledgement. */
  private async execute(entry: InFlight): Promise<boolean> {
    const { job, handler } = entry;
    const { registry, metrics } = this.deps;
    if (!handler) {
      await this.failAttempt(
        entry,
        'permanent',
        `unknown kind "${job.kind}": this worker runs ${registry.kinds().join(', ') || 'no kinds'}`,
      );
      return false;
    }
    if (!handler.versions.includes(job.kindVersion)) {
      await this.failAttempt(
        entry,
        'permanent',
        `kind ${job.kind} version ${job.kindVersion} is not supported (this worker supports ${handler.versions.join(', ')})`,
      );
      return false;
    }
    const parsed = handler.schema.safeParse(job.payload);
    if (!parsed.success) {
      await this.failAttempt(
        entry,
        'permanent',
        `invalid payload for ${job.kind} v${job.kindVersion}: ${z.prettifyError(parsed.error)}`,
      );
      return false;
    }

    // Overruns are found by sweepTimeouts(), not by a timer per attempt.
    entry.timeoutAt = performance.now() + handler.timeoutMs;
    let result: { ok: true } | { ok: false; error: unknown };
    try {
      await entry.run(() =>
        handler.handle(new AttemptContext(entry, parsed.data, this.deps.db, this.settings.leaseSeconds)),
      );
      result = { ok: true };
    } catch (error) {
      result = { ok: false, error };
    }
    // The handler is over: from here on the attempt waits for its settlement (a batched
    // acknowledgement can take longer than the timeout), which the sweep must not abort.
    entry.timeoutAt = Number.POSITIVE_INFINITY;
    entry.endedAt = Date.now();
    const seconds = (entry.endedAt - entry.startedAt) / 1000;

    if (!result.ok && result.error instanceof AttemptAborted && result.error === entry.stopped) {
      const stop = result.error;
      metrics?.handlerDuration.observe({ queue: job.queue, kind: job.kind, outcome: stop.reason }, seconds);
      if (stop.reason === 'timeout') await this.failAttempt(entry, 'timeout', stop.message);
      else if (stop.reason === 'shutdown') await this.releaseAttempt(entry);
      else {
        metrics?.leasesLost.inc({ queue: job.queue, kind: job.kind });
        entry.log.warn('lease lost while running (expired, reaped or cancelled): this attempt settles nothing');
      }
      return false;
    }
    if (result.ok) {
      this.deps.failpoints?.hit('after_effect');
      metrics?.handlerDuration.observe({ queue: job.queue, kind: job.kind, outcome: 'completed' }, seconds);
      this.acknowledge(entry);
      return true;
    }
    const { failureClass, message, retryAfterMs } = classify(result.error);
    metrics?.handlerDuration.observe({ queue: job.queue, kind: job.kind, outcome: 'failed' }, seconds);
    await this.failAttempt(entry, failureClass, message, retryAfterMs);
    return false;
  }

  /** After the acknowledgement: the completion is recorded, or the lease was gone by then. */
  private acknowledged(entry: InFlight, outcome: SettleOutcome): void {
    const { job } = entry;
    const { metrics, logger } = this.deps;
    if (outcome.applied) {
      metrics?.completed.inc({ queue: job.queue, kind: job.kind });
      if (logger.isLevelEnabled('info')) entry.log.info({ ms: entry.endedAt - entry.startedAt }, 'job done');
    } else {
      metrics?.leasesLost.inc({ queue: job.queue, kind: job.kind });
      entry.log.warn('completed, but the lease was lost before the acknowledgement: another attempt may run');
    }
    this.finish(entry);
  }

  /** Queues a completion for the next batched acknowledgement. */
  private acknowledge(entry: InFlight): void {
    this.pendingAcks.push(entry);
    if (this.pendingAcks.length >= ACK_BATCH) void this.flushAcks();
    else this.ackTimer ??= setTimeout(() => void this.flushAcks(), this.settings.ackFlushMs);
  }

  private async flushAcks(): Promise<void> {
    if (this.ackTimer) clearTimeout(this.ackTimer);
    this.ackTimer = null;
    while (this.pendingAcks.length > 0) {
      const batch = this.pendingAcks.splice(0, ACK_BATCH);
      const jobs = batch.map((entry) => entry.job);
      let deadline = Number.POSITIVE_INFINITY;
      for (const job of jobs) deadline = Math.min(deadline, job.leaseUntil.getTime());
      this.deps.failpoints?.hit('before_ack');
      let outcomes: SettleOutcome[];
      try {
        outcomes = await this.retryingDb('acknowledge', deadline, (db) => completeManyIfLeaseHeld(db, jobs));
      } catch (error) {
        this.deps.logger.error(
          { err: error, jobs: batch.length },
          'could not acknowledge completions; their leases will expire and they will run again',
        );
        outcomes = batch.map(() => LEASE_LOST);
      }
      batch.forEach((entry, i) => this.acknowledged(entry, outcomes[i]!));
    }
  }

  private async failAttempt(
    entry: InFlight,
    failureClass: FailureClass,
    message: string,
    retryAfterMs?: number,
  ): Promise<void> {
    const { job, handler, log } = entry;
    const { metrics } = this.deps;
    const maxAttempts = Math.min(job.maxAttempts, handler?.maxAttempts ?? Number.POSITIVE_INFINITY);
    try {
      const outcome = await this.retryingDb('fail', job.leaseUntil.getTime(), (db) =>
        failIfLeaseHeld(
          db,
          { ...job, maxAttempts },
          {
            error: message,
            failureClass,
            ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
            policy: { ...this.settings.retry, ...handler?.retry },
          },
        ),
      );
      if (!outcome.applied) {
        metrics?.leasesLost.inc({ queue: job.queue, kind: job.kind });
        log.warn({ failureClass, error: message }, 'failed, but the lease was already lost: nothing recorded');
        return;
      }
      metrics?.failed.inc({ queue: job.queue, kind: job.kind, failure_class: outcome.failureClass });
      const level = outcome.state === 'ready' ? 'warn' : 'error';
      log[level](
        { failureClass: outcome.failureClass, error: message, next: outcome.state, runAt: outcome.runAt },
        'attempt failed',
      );
    } catch (error) {
      log.error(
        { err: error, failureClass, error: message },
        'could not record the failure; the lease will expire and the reaper will retry it',
      );
    }
  }

  private async releaseAttempt(entry: InFlight): Promise<void> {
    const { job, log } = entry;
    try {
      const outcome = await this.retryingDb('release', job.leaseUntil.getTime(), (db) =>
        releaseIfLeaseHeld(db, job, { reason: `released by ${this.settings.workerId} at shutdown` }),
      );
      if (outcome.applied) {
        this.deps.metrics?.released.inc({ queue: job.queue, kind: job.kind });
        log.info('released unfinished job for another worker');
      }
    } catch (error) {
      log.error({ err: error }, 'could not release; the lease will expire and the reaper will retry it');
    }
  }

  /** How often overruns are looked for: a tenth of the shortest handler timeout, 5–100 ms. */
  private timeoutSweepMs(): number {
    const { registry } = this.deps;
    const shortest = Math.min(...registry.kinds().map((kind) => registry.get(kind)!.timeoutMs));
    return Math.min(100, Math.max(5, shortest / 10));
  }

  /** Stops every handler past its timeout (one sweep instead of a timer per attempt). */
  private sweepTimeouts(): void {
    const now = performance.now();
    for (const entry of this.inFlight) {
      if (now >= entry.timeoutAt && !entry.stopped) {
        entry.stop(
          new AttemptAborted('timeout', `${entry.job.kind} did not finish within ${entry.handler!.timeoutMs} ms`),
        );
      }
    }
  }

  private async heartbeatAll(): Promise<void> {
    const entries = [...this.inFlight].filter((e) => !e.stopped);
    if (entries.length === 0) return;
    const sent = performance.now();
    this.deps.failpoints?.hit('in_heartbeat');
    try {
      const outcomes = await heartbeatManyIfLeaseHeld(
        this.deps.db,
        entries.map((e) => e.job),
        {
          leaseSeconds: this.settings.leaseSeconds,
        },
      );
      outcomes.forEach((outcome, i) => {
        const entry = entries[i]!;
        if (outcome.applied) {
          entry.job.leaseUntil = outcome.leaseUntil;
          entry.leaseDeadline = leaseDeadlineFrom(sent, this.settings.leaseSeconds);
        } else entry.stop(leaseLost());
      });
    } catch (error) {
      this.deps.logger.warn({ err: error, jobs: entries.length }, 'heartbeat failed; retrying at the next beat');
      // Without a heartbeat the lease runs out on its own: stop handlers whose lease surely
      // ended, because the reaper may already have handed their jobs to another worker.
      const now = performance.now();
      for (const entry of entries) {
        if (now >= entry.leaseDeadline) {
          entry.stop(new AttemptAborted('lease_lost', 'no heartbeat got through before the lease ended'));
        }
      }
    }
  }

  private async refreshRegistry(): Promise<void> {
    const { db } = this.deps;
    const s = this.settings;
    if (!(await touchWorker(db, s.workerId))) {
      await registerWorker(db, {
        id: s.workerId,
        host: os.hostname(),
        pid: process.pid,
        queues: s.queues,
        concurrency: s.concurrency,
      });
    }
  }

  private async reapRound(): Promise<void> {
    const { db, logger, metrics } = this.deps;
    const limit = 500;
    for (let round = 0; round < 20; round++) {
      const outcome = await withMaintenanceLock(db, 'reaper', async (tx) => {
        const result = await reapExpiredLeases(tx, {
          limit,
          ...(this.settings.retry?.leaseExpiredDelayMs !== undefined
            ? { leaseExpiredDelayMs: this.settings.retry.leaseExpiredDelayMs }
            : {}),
        });
        if (result.reaped > 0) this.deps.failpoints?.hit('in_reap'); // dies before the commit
        return result;
      });
      if (!outcome.ran) return;
      const { reaped, retried, dead } = outcome.result;
      if (reaped > 0) {
        metrics?.reaped.inc({ outcome: 'retried' }, retried.length);
        metrics?.reaped.inc({ outcome: 'dead' }, dead.length);
        logger.warn({ retried: retried.length, dead: dead.length }, 'reaped expired leases');
      }
      if (reaped < limit) return;
    }
  }

  private async retentionRound(): Promise<void> {
    const { db, logger } = this.deps;
    const m = this.settings.maintenance;
    const limit = m.retention.limit ?? 1000;
    for (let round = 0; round < 20; round++) {
      const outcome = await withMaintenanceLock(db, 'retention', async (tx) => {
        const removed = await removeExpiredHistory(tx, { ...m.retention, limit });
        const receipts = await removeOldReceipts(tx, { olderThanSeconds: m.receiptsRetentionSeconds, limit });
        const workers = await removeStaleWorkers(tx, m.staleWorkerSeconds);
        return { ...removed, receipts, workers };
      });
      if (!outcome.ran) return;
      const r = outcome.result;
      if (r.jobs + r.attempts + r.dedupeKeys + r.receipts + r.workers > 0) logger.info(r, 'retention removed old rows');
      if (Math.max(r.jobs / 3, r.attempts, r.dedupeKeys, r.receipts) < limit) return;
    }
  }

  /** Runs `task` every `ms` until stop, logging (not throwing) its failures. */
  private async every(ms: number, task: () => Promise<void>, signal = this.stopController.signal): Promise<void> {
    while (!signal.aborted) {
      await sleep(ms * (0.9 + Math.random() * 0.2), signal);
      if (signal.aborted) return;
      try {
        await task();
      } catch (error) {
        this.deps.logger.warn({ err: error, task: task.name }, 'background task failed; it runs again next round');
      }
    }
  }

  /**
   * Runs a settlement, retrying connection-level failures until `deadlineMs` (the lease end:
   * after it, the statement could not apply anyway).
   */
  private async retryingDb<T>(what: string, deadlineMs: number, work: (db: Executor) => Promise<T>): Promise<T> {
    for (let failures = 1; ; failures++) {
      try {
        return await work(this.deps.db);
      } catch (error) {
        if (!isRetryableDbError(error) || Date.now() + backoff(failures) > deadlineMs) throw error;
        this.deps.logger.warn({ err: error, what }, 'database unavailable; retrying the settlement');
        await sleep(backoff(failures));
      }
    }
  }
}

/** Connection loss, server shutdown, overload, serialization: worth another try. */
export function isRetryableDbError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return /^(08|40|53|57)/.test(code);
  if (typeof code === 'string' && /^E(CONN|PIPE|TIMEDOUT|HOSTUNREACH|NETUNREACH|AI_AGAIN)/.test(code)) return true;
  const message = error instanceof Error ? error.message : '';
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
    message,
  );
}

function backoff(failures: number): number {
  return Math.min(30_000, 200 * 2 ** Math.min(failures - 1, 8)) * (0.5 + Math.random() / 2);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
