/**
 * The completer: the worker's only caller of the queue's settle functions. It turns an
 * attempt's result into a settlement — completions batched into one acknowledgement statement,
 * failures and releases one by one — and retries connection-level failures until the lease
 * ends (after that no settlement could apply anyway).
 *
 * Invariants:
 * - every settlement is lease-guarded (the queue refuses it once the lease moved on), so a
 *   late or repeated one changes nothing;
 * - a completed attempt is settled only after its acknowledgement statement returned; until
 *   then it keeps its slot and its heartbeat;
 * - `flush()` acknowledges everything queued so far (shutdown calls it last);
 * - at most one acknowledgement statement is in flight per completer (per worker process):
 *   completions that arrive meanwhile wait for it and go together in the next, so a process
 *   under load sends fewer, fuller statements instead of several competing for the cores.
 */
import type { Logger } from 'pino';
import {
  completeManyIfLeaseHeld,
  failIfLeaseHeld,
  LEASE_LOST,
  pauseLimit,
  releaseIfLeaseHeld,
  snoozeIfLeaseHeld,
  type ClaimedJob,
  type Executor,
  type RetryPolicy,
  type SettleOutcome,
} from '../db/queue/index.ts';
import type { FailureClass } from '../db/schema.ts';
import { clamp, DEFAULT_SNOOZE_CAP } from '../db/queue/job-options.ts';
import { DEFAULT_RESULT_MAX_BYTES, storableResult, type StorableResult } from '../db/queue/results.ts';
import type { ErrorDetail } from '../db/queue/error-detail.ts';
import type { Attempt, AttemptResult } from './attempt.ts';
import type { WorkerEvents } from './events.ts';
import type { Failpoints } from './failpoints.ts';
import { handlerLimitKey } from './handler.ts';
import type { WorkerMetrics } from './metrics.ts';
import { retryWhileUnavailable } from './timing.ts';

/** Most completions in one acknowledgement statement (a claim batch's worth). */
const ACK_BATCH = 1000;

export interface CompleterSettings {
  workerId: string;
  /** Completions wait this long to be acknowledged together in one statement. */
  ackFlushMs: number;
  retry?: Partial<RetryPolicy> | undefined;
  /**
   * The lease, s: a settlement is retried through connection failures until a lease past the
   * attempt's local deadline. Past its deadline a settlement is refused by its guard anyway, so
   * a late try is safe; and the local deadline is a guess
   * that runs early by the heartbeat's round trip, which under a starved event loop is seconds,
   * while a finished job's acknowledgement given up early means the job runs again.
   */
  leaseSeconds: number;
}

export interface CompleterDeps {
  db: Executor;
  logger: Logger;
  metrics?: WorkerMetrics | undefined;
  failpoints?: Failpoints | undefined;
  /** Where `failed`, `dead` and settlement `error` events go (workers/events.ts). */
  events?: WorkerEvents | undefined;
  /**
   * How many attempts are in flight (claimed, not yet settled). When every one of them waits in
   * the acknowledgement queue, no completion is coming to share the statement with: it goes at
   * once instead of after `ackFlushMs` (a burst of short jobs would otherwise wait that long
   * per round of claims).
   */
  inFlight?: (() => number) | undefined;
  /**
   * Told of each attempt whose settlement did not apply (refused, failed, or given up): its job
   * may still be running under its token, so its claim must stop being covered by the worker
   * lease (LeaseKeeper.gaveUp), or nothing would end it while the worker lives.
   */
  gaveUp?: ((leaseToken: string) => void) | undefined;
}

/** What this completer's settlements did, counted (runFor's summary). */
/**
 * A job's own back-off (asked for at enqueue) as a retry policy, within its kind's bounds as
 * this worker's handler declares them now; nothing when the job has none.
 */
function jobBackoff(entry: Attempt): { baseDelayMs?: number; maxDelayMs?: number } {
  const own = entry.job.backoff;
  const settings = entry.handler?.jobSettings;
  if (!own || !settings?.backoffBaseMs || !settings.backoffMaxMs) return {};
  return {
    baseDelayMs: clamp(own.baseMs, settings.backoffBaseMs),
    maxDelayMs: clamp(own.maxMs, settings.backoffMaxMs),
  };
}

export interface SettlementCounts {
  completed: number;
  /** Failures recorded (retries scheduled and jobs ended `dead` or `cancelled`). */
  failed: number;
  /** Of those, the jobs that ended `dead`. */
  dead: number;
  released: number;
  /** Snoozes settled (docs/jobs.md, "Snooze"); a snooze past the cap counts as a failure. */
  snoozed: number;
  /** Settlements the lease refused (expired, reaped or cancelled meanwhile). */
  lost: number;
}

interface PendingAck {
  entry: Attempt;
  done: () => void;
  /** What the attempt returned, made storable; null: nothing to store. */
  result: StorableResult | null;
}

export class Completer {
  /** Completed attempts waiting for the next batched acknowledgement. */
  private pending: PendingAck[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** The acknowledgement loop while it runs: one per completer, so one statement in flight. */
  private flushing: Promise<void> | null = null;
  readonly counts: SettlementCounts = { completed: 0, failed: 0, dead: 0, released: 0, snoozed: 0, lost: 0 };

  constructor(
    private readonly settings: CompleterSettings,
    private readonly deps: CompleterDeps,
  ) {}

  /** Settles an attempt by its result; resolves once the settlement is through (or given up). */
  settle(entry: Attempt, result: AttemptResult): Promise<void> {
    switch (result.kind) {
      case 'completed':
        return this.acknowledge(entry, result.value);
      case 'failed':
        return this.fail(entry, result.failureClass, result.message, result.retryAfterMs, result.detail ?? null);
      case 'released':
        return this.release(entry);
      case 'snoozed':
        return this.snooze(entry, result.ms);
      case 'lost': {
        const { job } = entry;
        this.deps.gaveUp?.(entry.job.leaseToken);
        this.counts.lost += 1;
        this.deps.metrics?.leasesLost.inc({ queue: job.queue, kind: job.kind });
        entry.log.warn('lease lost while running (expired, reaped or cancelled): this attempt settles nothing');
        return Promise.resolve();
      }
    }
  }

  /** Queues a completion for the next batched acknowledgement; resolves once it is through. */
  private acknowledge(entry: Attempt, value: unknown): Promise<void> {
    const result = value === undefined ? null : this.storable(entry, value);
    return new Promise((done) => {
      this.pending.push({ entry, done, result });
      if (this.pending.length >= ACK_BATCH || this.pending.length >= (this.deps.inFlight?.() ?? Infinity))
        void this.flush();
      else this.timer ??= setTimeout(() => void this.flush(), this.settings.ackFlushMs);
    });
  }

  /**
   * Acknowledges every queued completion now, in statements of at most ACK_BATCH, one at a
   * time: while one is in flight this returns the running loop, which takes what has queued
   * since once its statement returns (and resolves when the queue is empty).
   */
  flush(): Promise<void> {
    this.cancelTimer();
    this.flushing ??= this.acknowledgeQueued();
    return this.flushing;
  }

  private cancelTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private async acknowledgeQueued(): Promise<void> {
    // One turn first: `flushing` is set before this loop can find the queue empty and clear it.
    await Promise.resolve();
    try {
      await this.acknowledgeBatches();
    } finally {
      this.flushing = null;
    }
  }

  private async acknowledgeBatches(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, ACK_BATCH);
      if (this.pending.length === 0) this.cancelTimer(); // what it was set for goes in this statement
      // A plain completion is its job itself; one with a result or an awaitable job says so.
      const jobs = batch.map(({ entry, result }) =>
        result || entry.job.awaitable
          ? { id: entry.job.id, leaseToken: entry.job.leaseToken, result, awaitable: entry.job.awaitable }
          : entry.job,
      );
      // The latest local lease deadline in the batch, read at each retry: heartbeats go on
      // meanwhile (the attempts keep their slots) and move it. Not the earliest: one entry near
      // or past its end would give up the whole batch; each row is lease-guarded, so a retry
      // after one lease ended only leaves that row unapplied.
      const deadline = () => {
        let latest = Number.NEGATIVE_INFINITY;
        for (const { entry } of batch) latest = Math.max(latest, entry.leaseDeadline);
        return latest;
      };
      this.deps.failpoints?.hit('before_ack');
      let outcomes: SettleOutcome[];
      try {
        outcomes = await this.retrying('acknowledge', deadline, (db) => completeManyIfLeaseHeld(db, jobs));
      } catch (error) {
        const message = 'could not acknowledge completions; their leases will expire and they will run again';
        this.deps.logger.error({ err: error, jobs: batch.length }, message);
        this.reportError(message, error);
        outcomes = batch.map(() => LEASE_LOST);
      }
      batch.forEach(({ entry, done }, i) => {
        this.acknowledged(entry, outcomes[i]!);
        done();
      });
    }
  }

  /**
   * A handler's return value as the acknowledgement stores it: plain JSON within its kind's cap,
   * else a marker saying why (the attempt completes either way, and the log says so).
   */
  private storable(entry: Attempt, value: unknown): StorableResult | null {
    const stored = storableResult(value, entry.handler?.resultMaxBytes ?? DEFAULT_RESULT_MAX_BYTES);
    if (stored?.marker) entry.log.warn({ marker: stored.marker }, 'the handler returned a result that is not stored');
    return stored;
  }

  /** After the acknowledgement: the completion is recorded, or the lease was gone by then. */
  private acknowledged(entry: Attempt, outcome: SettleOutcome): void {
    const { job } = entry;
    const { metrics, logger } = this.deps;
    if (outcome.applied) {
      this.counts.completed += 1;
      metrics?.completed.inc({ queue: job.queue, kind: job.kind });
      if (logger.isLevelEnabled('info')) entry.log.info({ ms: entry.endedAt - entry.startedAt }, 'job done');
    } else {
      this.deps.gaveUp?.(entry.job.leaseToken);
      this.counts.lost += 1;
      metrics?.leasesLost.inc({ queue: job.queue, kind: job.kind });
      entry.log.warn('completed, but the lease was lost before the acknowledgement: another attempt may run');
    }
  }

  private async fail(
    entry: Attempt,
    failureClass: FailureClass,
    message: string,
    retryAfterMs: number | undefined,
    detail: ErrorDetail | null = null,
  ): Promise<void> {
    const { job, handler, log } = entry;
    const { metrics } = this.deps;
    const maxAttempts = Math.min(job.maxAttempts, handler?.maxAttempts ?? Number.POSITIVE_INFINITY);
    try {
      const outcome = await this.retrying(
        'fail',
        () => entry.leaseDeadline,
        (db) =>
          failIfLeaseHeld(
            db,
            { ...job, maxAttempts },
            {
              error: message,
              failureClass,
              ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
              ...(detail ? { detail } : {}),
              policy: { ...this.settings.retry, ...handler?.retry, ...jobBackoff(entry) },
            },
          ),
      );
      if (!outcome.applied) {
        this.deps.gaveUp?.(entry.job.leaseToken);
        this.counts.lost += 1;
        metrics?.leasesLost.inc({ queue: job.queue, kind: job.kind });
        log.warn({ failureClass, error: message }, 'failed, but the lease was already lost: nothing recorded');
        return;
      }
      this.failed(entry, message, outcome);
      if (failureClass === 'rate_limited' && retryAfterMs !== undefined) await this.pause(entry, retryAfterMs, message);
      metrics?.failed.inc({ queue: job.queue, kind: job.kind, failure_class: outcome.failureClass });
      const level = outcome.state === 'ready' ? 'warn' : 'error';
      log[level](
        { failureClass: outcome.failureClass, error: message, next: outcome.state, runAt: outcome.runAt },
        'attempt failed',
      );
    } catch (error) {
      this.deps.gaveUp?.(entry.job.leaseToken);
      const what = 'could not record the failure; the lease will expire and the reaper will retry it';
      log.error({ err: error, failureClass, error: message }, what);
      this.reportError(what, error, job.id);
    }
  }

  /**
   * The upstream said "slow down" with a Retry-After: the handler's limit (its kind's or its
   * resource's) starts nothing for that long, in every worker (db/queue/limits.ts, pauseLimit).
   * A handler without a limit delays only this job (its retry, as before).
   */
  private async pause(entry: Attempt, retryAfterMs: number, message: string): Promise<void> {
    const key = entry.handler && handlerLimitKey(entry.handler);
    if (key === undefined) return;
    try {
      const until = await pauseLimit(this.deps.db, key, retryAfterMs, message);
      entry.log.warn({ limit: key, pausedUntil: until }, 'rate limited upstream: its limit starts nothing until then');
    } catch (error) {
      entry.log.error({ err: error, limit: key }, 'could not pause the limit after a RateLimitedError');
    }
  }

  /**
   * The handler snoozed: `ready` again after `ms`, the attempt not spent, under the kind's snooze
   * cap. Past the cap nothing is written and the attempt fails instead (class `transient`,
   * charged: docs/jobs.md, "Snooze").
   */
  private async snooze(entry: Attempt, ms: number): Promise<void> {
    const { job, log } = entry;
    const cap = entry.handler?.jobSettings?.snooze ?? DEFAULT_SNOOZE_CAP;
    try {
      const outcome = await this.retrying(
        'snooze',
        () => entry.leaseDeadline,
        (db) => snoozeIfLeaseHeld(db, job, { ms, cap }),
      );
      if (outcome.applied) {
        this.counts.snoozed += 1;
        this.deps.metrics?.snoozed.inc({ queue: job.queue, kind: job.kind });
        log.info({ snoozeMs: ms, snoozes: outcome.snoozes }, 'snoozed: runs again later, the attempt not spent');
        return;
      }
      if (outcome.reason === 'snooze_cap') {
        const message =
          `snooze cap reached: a snooze of ${ms} ms after ${outcome.snoozes} snoozes (${outcome.snoozedMs} ms) ` +
          `passes the kind's cap of ${cap.maxCount} snoozes and ${cap.maxTotalMs} ms: the attempt fails instead`;
        return this.fail(entry, 'transient', message, undefined);
      }
      this.deps.gaveUp?.(entry.job.leaseToken);
      this.counts.lost += 1;
      this.deps.metrics?.leasesLost.inc({ queue: job.queue, kind: job.kind });
      log.warn('snoozed, but the lease was already lost: nothing recorded');
    } catch (error) {
      this.deps.gaveUp?.(entry.job.leaseToken);
      const what = 'could not record the snooze; the lease will expire and the reaper will retry it';
      log.error({ err: error }, what);
      this.reportError(what, error, job.id);
    }
  }

  /** Hands an unfinished attempt's job back to `ready` for another worker (shutdown). */
  private async release(entry: Attempt): Promise<void> {
    const { job, log } = entry;
    try {
      const outcome = await this.retrying(
        'release',
        () => entry.leaseDeadline,
        (db) => releaseIfLeaseHeld(db, job, { reason: `released by ${this.settings.workerId} at shutdown` }),
      );
      if (outcome.applied) {
        this.counts.released += 1;
        this.deps.metrics?.released.inc({ queue: job.queue, kind: job.kind });
        log.info('released unfinished job for another worker');
      } else this.deps.gaveUp?.(entry.job.leaseToken);
    } catch (error) {
      this.deps.gaveUp?.(entry.job.leaseToken);
      const what = 'could not release; the lease will expire and the reaper will retry it';
      log.error({ err: error }, what);
      this.reportError(what, error, job.id);
    }
  }

  /**
   * Hands back jobs that were claimed but never started (the worker stopped while the claim
   * was in flight, or an earlier execution of the job still runs here), `ready` again after
   * `delayMs`. Failures are left to the reaper: the claims are detached from the worker lease
   * (gaveUp), so the leases expire.
   */
  async releaseUnstarted(jobs: readonly ClaimedJob[], options: { delayMs?: number; why?: string } = {}): Promise<void> {
    const reason = `released by ${this.settings.workerId}: ${options.why ?? 'stopping'}`;
    const delayMs = options.delayMs ?? 0;
    await Promise.all(
      jobs.map((job) =>
        releaseIfLeaseHeld(this.deps.db, job, { reason, delayMs }).then(
          (outcome) => {
            if (outcome.applied) this.counts.released += 1;
            else this.deps.gaveUp?.(job.leaseToken);
          },
          () => this.deps.gaveUp?.(job.leaseToken),
        ),
      ),
    );
  }

  /** A recorded failure: counted, and told to the `failed` (and `dead`) listeners. */
  private failed(
    entry: Attempt,
    message: string,
    outcome: { state: 'ready' | 'dead' | 'cancelled'; failureClass: FailureClass; runAt: Date },
  ): void {
    const { job } = entry;
    const { workerId } = this.settings;
    this.counts.failed += 1;
    if (outcome.state === 'dead') this.counts.dead += 1;
    const events = this.deps.events;
    if (!events) return;
    const base = { jobId: job.id, kind: job.kind, queue: job.queue, attempt: job.attempt, error: message };
    const { failureClass } = outcome;
    events.emit('failed', { ...base, failureClass, next: outcome.state, runAt: outcome.runAt, workerId });
    if (outcome.state === 'dead') events.emit('dead', { ...base, failureClass, workerId });
  }

  private reportError(message: string, error: unknown, jobId?: string): void {
    this.deps.events?.emit('error', { source: 'settle', message, error, jobId, workerId: this.settings.workerId });
  }

  /**
   * Runs a settlement, retrying connection-level failures until `deadline()` (the lease end:
   * after it, the statement could not apply anyway) plus one lease (CompleterSettings.leaseSeconds,
   * since the local deadline runs early). The deadline is the attempt's local
   * monotonic one (Attempt.leaseDeadline, from the database's lease left at each claim and
   * heartbeat), never `job.leaseUntil` against this machine's clock (security review B7).
   */
  private retrying<T>(what: string, deadline: () => number, work: (db: Executor) => Promise<T>): Promise<T> {
    const graceMs = this.settings.leaseSeconds * 1000;
    return retryWhileUnavailable(() => work(this.deps.db), {
      deadlineMs: () => deadline() + graceMs,
      onRetry: (error) => this.deps.logger.warn({ err: error, what }, 'database unavailable; retrying the settlement'),
    });
  }
}
