/**
 * One execution of one claimed job: its handler, its signal, its timeout, and what came of it
 * as a value (`AttemptResult`). Nothing here settles the job: the completer does that with the
 * result. The only database calls are the handler's own (`heartbeat`, `receipt`).
 *
 * Invariants:
 * - an attempt is stopped at most once, and the first reason wins (lease lost, timeout,
 *   shutdown); stopping it aborts the handler's signal and ends the wait on the handler at once,
 *   whether or not the handler looks at its signal, so its settlement goes out promptly;
 * - the handler's own promise is still tracked after the stop (`handlerRunning`,
 *   `whenHandlerSettled`): the producer keeps its slot until it settles or is abandoned;
 * - a handler that was stopped never reports `completed`, even if it returns later.
 */
import type { Logger } from 'pino';
import { LeaseholdError } from '../db/errors.ts';
import {
  checkPayload,
  claimReceiptIfLeaseHeld,
  dropReceiptClaim,
  heartbeatIfLeaseHeld,
  recordReceipt,
  type ClaimedJob,
  type Executor,
  type PayloadCheck,
} from '../db/queue/index.ts';
import { boundedScrub, redactedValues, type ErrorDetail } from '../db/queue/error-detail.ts';
import { scheduledTick } from '../db/queue/schedule-key.ts';
import { MAX_ERROR_LENGTH } from '../db/queue/settle.ts';
import type { FailureClass } from '../db/states.ts';
import { classify } from './errors.ts';
import { snoozeOf } from './snooze.ts';
import { ProgressReporter } from './progress.ts';
import { clamp } from '../db/queue/job-options.ts';
import type { Failpoints } from './failpoints.ts';
import type { Handler, HandlerContext, HandlerRegistry } from './handler.ts';
import { type IsolatedRunOptions, runIsolated } from './isolated.ts';
import type { WorkerMetrics } from './metrics.ts';

export type StopReason = 'lease_lost' | 'timeout' | 'shutdown';

/** The AbortSignal reason a handler sees. */
export class AttemptAborted extends LeaseholdError {
  readonly code = 'attempt_aborted';

  constructor(
    readonly reason: StopReason,
    message: string,
  ) {
    super(message);
    this.name = 'AttemptAborted';
  }
}

export const leaseLost = () => new AttemptAborted('lease_lost', 'the lease was lost (expired, reaped or cancelled)');

/**
 * Local monotonic time by which a lease has surely ended: `sentAt` is performance.now() read
 * before the statement that took or renewed it was sent, `leaseSeconds` what the database says
 * is left of it from that statement's own time (which is later than the send). Both are
 * durations, so neither clock's offset enters. A tenth of the lease (at most a second) is kept
 * back, so a stop at this deadline lands before the reaper can take the job.
 */
export function leaseDeadlineFrom(sentAt: number, leaseSeconds: number): number {
  return sentAt + leaseSeconds * 1000 - Math.min(1000, leaseSeconds * 100);
}

/** What came of an attempt; the completer turns it into a settlement (not db/states' stored outcomes). */
export type AttemptResult =
  /** `value`: what the handler returned (undefined: nothing). */
  | { kind: 'completed'; value?: unknown }
  | {
      kind: 'failed';
      failureClass: FailureClass;
      message: string;
      retryAfterMs?: number | undefined;
      /** The thrown error's stack and cause chain, bounded and scrubbed (db/queue/error-detail.ts). */
      detail?: ErrorDetail | null | undefined;
    }
  /** Stopped for shutdown: handed back to `ready` for another worker. */
  | { kind: 'released' }
  /** The handler returned snooze(ms) or threw SnoozeError: `ready` again after `ms`, not charged. */
  | { kind: 'snoozed'; ms: number }
  /** The lease was gone while it ran: nothing may be settled. */
  | { kind: 'lost' };

/**
 * One attempt in flight. Stopping it rejects the wait on its handler at once and aborts the
 * handler's signal. The AbortController and the logger are made on first use: at thousands of
 * jobs a second, most attempts never need either.
 */
export class Attempt {
  private controller: AbortController | null = null;
  private stopRun: ((reason: AttemptAborted) => void) | null = null;
  private logger: Logger | null = null;
  /** The handler's (or async schema's) own promise, settled or not, whatever the stop did to the wait on it. */
  private work: Promise<void> | null = null;
  /** Why the attempt was stopped, once it was. */
  stopped: AttemptAborted | null = null;
  /** Local monotonic time of the stop (the abandon limit counts from it). */
  stoppedAt = 0;
  /** Whether the handler's promise is still pending: true after a stop while a deaf handler goes on. */
  handlerRunning = false;
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
    this.stoppedAt = performance.now();
    this.controller?.abort(reason);
    this.stopRun?.(reason);
  }

  /**
   * Runs the handler; rejects with the stop reason as soon as the attempt is stopped. The
   * handler's own promise is kept (`whenHandlerSettled`): a handler deaf to its signal goes on
   * after the stop, and its slot must stay taken while it does.
   */
  run(work: () => Promise<unknown>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.stopped) return reject(this.stopped);
      // Once the wait is settled, a later stop() rejecting it again is a no-op.
      this.stopRun = reject;
      try {
        const running = Promise.resolve(work()); // a handler may also return a plain value
        // Registered before the wait's own callbacks: the flag is down by the time run() resolves.
        const over = () => {
          this.handlerRunning = false;
        };
        this.handlerRunning = true;
        this.work = running.then(over, over);
        running.then(() => resolve(), reject);
      } catch (error) {
        reject(error);
      }
    });
  }

  /** Resolves when the handler's own promise has settled (at once if none is pending). */
  whenHandlerSettled(): Promise<void> {
    return this.handlerRunning && this.work ? this.work : Promise.resolve();
  }
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
  /** Made on the first report: most handlers report none. */
  reporter: ProgressReporter | null = null;

  constructor(
    private readonly entry: Attempt,
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

  readonly progress = (fraction: number, message?: string): void => {
    (this.reporter ??= new ProgressReporter(this.db, this.job, () => this.entry.log)).report(fraction, message);
  };

  get scheduled(): { schedule: string; tickAt: Date } | null {
    return scheduledTick(this.job.idempotencyKey);
  }

  get logger(): Logger {
    return this.entry.log;
  }

  get heartbeat(): () => Promise<void> {
    return (this.heartbeatFn ??= async () => {
      const { entry, job } = this;
      // A stopped attempt renews nothing: the sweep may stop it a little before the database's
      // deadline, and a deaf handler's beat then would keep a lease nobody will settle.
      if (entry.stopped) throw entry.stopped;
      const sent = performance.now(); // before the send: the renewed lease starts no earlier
      const outcome = await heartbeatIfLeaseHeld(this.db, job, { leaseSeconds: this.leaseSeconds });
      // Row locked by another transaction: held but not renewed now; the lease keeper tries again.
      if (!outcome.applied && outcome.reason === 'row_locked') return;
      if (!outcome.applied) {
        entry.stop(leaseLost());
        throw entry.stopped;
      }
      job.leaseUntil = outcome.leaseUntil;
      entry.leaseDeadline = Math.max(entry.leaseDeadline, leaseDeadlineFrom(sent, outcome.leaseRemainingMs / 1000));
    });
  }

  get receipt(): HandlerContext<unknown>['receipt'] {
    return (this.receiptFn ??= async <T>(effect: () => Promise<T>, key: string = this.deliveryKey): Promise<T> => {
      const { entry, job, db } = this;
      // A stopped attempt claims no key: its lease may still hold for a moment, and the effect
      // would then run again under the next attempt once that lease is gone.
      if (entry.stopped) throw entry.stopped;
      // The key is claimed before the effect (db/queue/receipts.ts): while another attempt
      // holds it with its lease, this one waits for that attempt's receipt instead of repeating
      // the effect beside it; a claim whose attempt lost its lease is taken over.
      for (let waits = 0; ; waits++) {
        const claimed = await claimReceiptIfLeaseHeld(db, key, job);
        if (claimed.kind === 'done') {
          entry.log.info(
            { receiptKey: key, recordedBy: claimed.receipt.attempt },
            'side effect already done: using its receipt',
          );
          return claimed.receipt.result as T;
        }
        if (claimed.kind === 'lease_lost') {
          entry.stop(leaseLost());
          throw entry.stopped;
        }
        if (claimed.kind === 'claimed') break;
        if (waits === 0) {
          entry.log.info(
            { receiptKey: key, heldByJob: claimed.jobId, heldByAttempt: claimed.attempt },
            'another attempt is performing this side effect: waiting for its receipt',
          );
        }
        await waitOrStop(Math.min(RECEIPT_WAIT_MAX_MS, RECEIPT_WAIT_FIRST_MS * 2 ** waits), entry.signal);
        if (entry.stopped) throw entry.stopped;
      }
      let value: T;
      try {
        value = await effect();
      } catch (error) {
        // The effect failed: the next attempt may claim the key at once (a failed drop leaves
        // the claim for it to take over once this lease is gone).
        await dropReceiptClaim(db, key, job).catch(() => {});
        throw error;
      }
      const { receipt } = await recordReceipt(db, {
        key,
        jobId: job.id,
        attempt: job.attempt,
        result: value ?? null,
        leaseToken: job.leaseToken,
      });
      return receipt.result as T;
    });
  }
}

/** How long a receipt wait first sleeps before asking again, doubling up to the most. */
const RECEIPT_WAIT_FIRST_MS = 25;
const RECEIPT_WAIT_MAX_MS = 500;

/** Sleeps `ms`, or rejects with the signal's reason as soon as it aborts. */
function waitOrStop(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const done = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', done);
      resolve();
    }, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

export interface AttemptDeps {
  /** What the handler's own heartbeat and receipts run on. */
  db: Executor;
  registry: HandlerRegistry;
  leaseSeconds: number;
  metrics?: WorkerMetrics | undefined;
  failpoints?: Failpoints | undefined;
  isolation?: IsolatedRunOptions | undefined;
}

/** The job's payload values that error text must not show: at the handler's `redact` paths and the well-known secret keys. */
function secretsOf(job: ClaimedJob, handler: Handler): string[] {
  return redactedValues(job.payload, handler.redact ?? []);
}

const permanent = (message: string): AttemptResult => ({ kind: 'failed', failureClass: 'permanent', message });
// The results without fields are shared: one object each, not one per job.
const COMPLETED: AttemptResult = Object.freeze({ kind: 'completed' });
const RELEASED: AttemptResult = Object.freeze({ kind: 'released' });
const LOST: AttemptResult = Object.freeze({ kind: 'lost' });

/**
 * The attempt's timeout: the job's own (asked for at enqueue) within its kind's bounds as this
 * worker's handler declares them now, else the handler's.
 */
export function attemptTimeoutMs(job: ClaimedJob, handler: Handler): number {
  const bounds = handler.jobSettings?.timeoutMs;
  return job.timeoutMs !== null && bounds ? clamp(job.timeoutMs, bounds) : handler.timeoutMs;
}

/** Runs the attempt's handler (after checking kind, version and payload) and says what came of it. */
export async function execute(entry: Attempt, deps: AttemptDeps): Promise<AttemptResult> {
  const { job, handler } = entry;
  const { registry, metrics } = deps;
  if (!handler) {
    return permanent(`unknown kind "${job.kind}": this worker runs ${registry.kinds().join(', ') || 'no kinds'}`);
  }
  if (!handler.versions.includes(job.kindVersion)) {
    return permanent(
      `kind ${job.kind} version ${job.kindVersion} is not supported (this worker supports ${handler.versions.join(', ')})`,
    );
  }

  // A schedule's tick claimed past its start deadline (its expires_at: the tick + startWithinMs,
  // docs/scheduling.md) is discarded unrun, judged by the claim's database time, not this host's.
  if (job.expiresAt !== null && job.attempt === 1 && job.startedAt !== null && job.startedAt > job.expiresAt) {
    const tick = scheduledTick(job.idempotencyKey);
    if (tick) {
      return {
        kind: 'failed',
        failureClass: 'expired',
        message: `not started by ${job.expiresAt.toISOString()}, the start deadline of tick ${tick.tickAt.toISOString()} of schedule ${tick.schedule}: discarded unrun`,
      };
    }
  }

  // Overruns are found by the lease keeper's sweep, not by a timer per attempt. The timeout
  // covers an async schema too: its wait is stopped like the handler's.
  entry.timeoutAt = performance.now() + attemptTimeoutMs(job, handler);
  let result: { ok: true; returned: unknown } | { ok: false; error: unknown };
  let context: AttemptContext | null = null;
  try {
    // The handler's Standard Schema, synchronous for most validators (then no extra turn of the
    // event loop per job). A validator that throws is the handler's failure, classified as one.
    let checked = checkPayload(handler.schema, job.payload);
    if (checked instanceof Promise) {
      const pending = checked;
      let settled: PayloadCheck<unknown> | undefined;
      await entry.run(async () => {
        settled = await pending;
      });
      checked = settled!;
    }
    if ('problems' in checked) {
      entry.timeoutAt = Number.POSITIVE_INFINITY;
      // A validator's problems may quote the payload: its secrets are scrubbed like a thrown error's.
      const problems = `invalid payload for ${job.kind} v${job.kindVersion}: ${checked.problems.join('; ')}`;
      return permanent(boundedScrub(problems, MAX_ERROR_LENGTH, secretsOf(job, handler)).text);
    }
    const payload = checked.value;
    const ctx = new AttemptContext(entry, payload, deps.db, deps.leaseSeconds);
    context = ctx;
    // An isolated handler runs in a thread of its own, terminated when the attempt is stopped.
    let returned: unknown;
    await entry.run(async () => {
      returned = await (handler.isolated ? runIsolated(handler, ctx, deps.isolation) : handler.handle(ctx));
    });
    result = { ok: true, returned };
  } catch (error) {
    result = { ok: false, error };
  }
  // The last progress report is written before the settlement (never after the job ended).
  await context?.reporter?.finish();
  // The handler is over: from here on the attempt waits for its settlement (a batched
  // acknowledgement can take longer than the timeout), which the sweep must not abort.
  entry.timeoutAt = Number.POSITIVE_INFINITY;
  entry.endedAt = Date.now();
  const seconds = (entry.endedAt - entry.startedAt) / 1000;

  if (!result.ok && result.error instanceof AttemptAborted && result.error === entry.stopped) {
    const stop = result.error;
    metrics?.handlerDuration.observe({ queue: job.queue, kind: job.kind, outcome: stop.reason }, seconds);
    if (stop.reason === 'timeout') return { kind: 'failed', failureClass: 'timeout', message: stop.message };
    if (stop.reason === 'shutdown') return RELEASED;
    return LOST;
  }
  // snooze(ms) returned, or SnoozeError thrown: the job waits, the attempt not spent.
  const snoozed = snoozeOf(result.ok ? result.returned : result.error);
  if (snoozed !== null) {
    metrics?.handlerDuration.observe({ queue: job.queue, kind: job.kind, outcome: 'snoozed' }, seconds);
    return { kind: 'snoozed', ms: snoozed };
  }
  if (result.ok) {
    deps.failpoints?.hit('after_effect');
    metrics?.handlerDuration.observe({ queue: job.queue, kind: job.kind, outcome: 'completed' }, seconds);
    return result.returned === undefined ? COMPLETED : { kind: 'completed', value: result.returned };
  }
  // The failure path only: the payload is walked for its secrets when something was thrown.
  const { failureClass, message, retryAfterMs, detail } = classify(result.error, secretsOf(job, handler));
  metrics?.handlerDuration.observe({ queue: job.queue, kind: job.kind, outcome: 'failed' }, seconds);
  return { kind: 'failed', failureClass, message, retryAfterMs, detail };
}
