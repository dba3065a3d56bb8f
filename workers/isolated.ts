/**
 * Isolated handlers, the main thread's side: one attempt of a handler declared
 * `isolated: 'thread'` runs in a node:worker_threads Worker of its own (with `'process'`, a
 * child process: the same protocol over IPC; workers/isolated-entry.ts is the other side), so that a CPU-bound or wedged handler neither blocks the event loop the
 * heartbeats run on nor outlives its attempt: the worker terminates the thread when the attempt
 * is stopped (timeout, lease lost, shutdown after the grace period).
 *
 * How the thread finds the handler: it imports the handler's module (`isolated.module`, or the
 * `--handlers` file it was loaded from) and takes the handler of the job's kind from its exports.
 * The payload was checked on the main thread; the thread gets the checked value.
 *
 * What crosses between the threads, by message (structured clone):
 * - to the thread: the job, payload, attempt and delivery key (workerData), and `abort` with the
 *   stop reason, followed at once by terminate(): the attempt's slot is free once it is gone;
 * - from the thread: log lines (written to the attempt's logger), `heartbeat` and `receipt`
 *   calls (run here, on the attempt's context: the receipt's effect itself runs in the thread),
 *   and how the handler ended: its value, or its error serialized (name, message, stack, cause,
 *   code, failure class) and made again here, a typed error (TransientError, PermanentError, …)
 *   as its own class, so that classify() and the stored error detail see what the thread threw.
 *
 * Invariants:
 * - a stopped attempt's thread is terminated, whatever the handler does (a `for (;;) {}` too);
 * - an attempt's promise settles once: the thread's end, its error, or the stop (which rejects
 *   the attempt's wait at once, before the thread has gone: workers/attempt.ts Attempt.run).
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import {
  CancelledJobError,
  JobError,
  PermanentError,
  RateLimitedError,
  TransientError,
  UnknownOutcomeError,
  ValidationError,
} from './errors.ts';
import { type Handler, type HandlerContext, type IsolationMode, isolatedModule, isolationMode } from './handler.ts';
import { ISOLATED_ENTRY, isolatedLoadingOf, type TsxFiles } from './isolated-loader.ts';
import { SnoozeError } from './snooze.ts';

/** What the thread starts from (its workerData). */
export interface IsolatedStart {
  /** The handler's module, imported in the thread. */
  module: string;
  kind: string;
  job: HandlerContext<unknown>['job'];
  payload: unknown;
  attempt: number;
  deliveryKey: string;
  /** The attempt logger's level: lines below it are not sent. */
  logLevel: string;
}

/** A thrown value as it crosses threads. */
export interface SerializedError {
  name: string;
  message: string;
  stack?: string | undefined;
  cause?: SerializedError | { thrown: unknown } | undefined;
  /** Own primitive properties: `code`, `errno`, `failureClass`, `retryAfterMs`, … */
  props: Record<string, string | number | boolean | null>;
}

export type ToThread =
  | { type: 'abort'; reason: string; message: string }
  | { type: 'reply'; id: number; ok: true; value: unknown }
  | { type: 'reply'; id: number; ok: false; error: SerializedError | { thrown: unknown } }
  | { type: 'call-effect'; id: number; effect: number };

export type FromThread =
  | { type: 'log'; line: string }
  | { type: 'progress'; fraction: number; message: string | null }
  | { type: 'call'; id: number; op: 'heartbeat' }
  | { type: 'call'; id: number; op: 'receipt'; key: string; effect: number }
  | { type: 'effect-reply'; id: number; ok: true; value: unknown }
  | { type: 'effect-reply'; id: number; ok: false; error: SerializedError | { thrown: unknown } }
  | { type: 'done'; ok: true }
  | { type: 'done'; ok: false; error: SerializedError | { thrown: unknown } };

const MAX_CAUSES = 8;

export function serializeError(error: unknown, depth = 0): SerializedError | { thrown: unknown } {
  if (!(error instanceof Error)) {
    try {
      return { thrown: structuredClone(error) };
    } catch {
      return { thrown: String(error) };
    }
  }
  const props: SerializedError['props'] = {};
  for (const [key, value] of Object.entries(error)) {
    if (key === 'cause' || key === 'name' || key === 'message' || key === 'stack') continue;
    if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) props[key] = value as string;
  }
  const out: SerializedError = { name: error.name, message: error.message, stack: error.stack, props };
  if ('cause' in error && error.cause !== undefined && depth < MAX_CAUSES)
    out.cause = serializeError(error.cause, depth + 1);
  return out;
}

type JobErrorClass = new (message: string, options?: { cause?: unknown; retryAfterMs?: number }) => JobError;
const TYPED: Record<string, JobErrorClass> = {
  TransientError,
  RateLimitedError,
  UnknownOutcomeError,
  PermanentError,
  ValidationError,
  CancelledJobError,
};

/** The error the thread threw, made again: a typed error by its name, others as Errors with their name. */
export function reviveError(serialized: SerializedError | { thrown: unknown }): unknown {
  if ('thrown' in serialized) return serialized.thrown;
  const cause = serialized.cause === undefined ? undefined : reviveError(serialized.cause);
  const options = cause === undefined ? {} : { cause };
  const { failureClass, retryAfterMs, ...props } = serialized.props;
  const Typed = TYPED[serialized.name];
  let error: Error;
  if (serialized.name === 'SnoozeError' && typeof props.ms === 'number') {
    error = new SnoozeError(props.ms, serialized.message);
  } else if (Typed) {
    error = new Typed(serialized.message, {
      ...options,
      ...(typeof retryAfterMs === 'number' ? { retryAfterMs } : {}),
    });
  } else if (typeof failureClass === 'string') {
    // A JobError of a class of the handler's own: its failure class is what counts.
    error = new JobError(failureClass as JobError['failureClass'], serialized.message, {
      ...options,
      ...(typeof retryAfterMs === 'number' ? { retryAfterMs } : {}),
    });
  } else {
    error = new Error(serialized.message, cause === undefined ? undefined : { cause });
  }
  error.name = serialized.name;
  if (serialized.stack !== undefined) error.stack = serialized.stack;
  Object.assign(error, props);
  return error;
}

const ENTRY = ISOLATED_ENTRY;

/**
 * A thread applies no `--import` loader of its parent (tsx's among them), on Node 20 as on 24,
 * and Node's own type stripping refuses enums, namespaces and parameter properties: when tsx
 * loads the TypeScript (workers/isolated-loader.ts decides, once per module), the thread
 * registers tsx's ESM loader itself before it imports the entry.
 */
const BOOTSTRAP = `
const { workerData } = require('node:worker_threads');
(async () => {
  if (workerData.tsx) (await import(workerData.tsx)).register();
  await import(workerData.entry);
})().catch((error) => { process.nextTick(() => { throw error; }); });
`;

/** A thread or a child process running one isolated attempt, as runIsolated drives it. */
export interface Isolate {
  readonly mode: IsolationMode;
  postMessage(message: ToThread): void;
  on(event: 'message', listener: (message: FromThread) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'exit', listener: (code: number | null) => void): unknown;
  once(event: 'exit', listener: (code: number | null) => void): unknown;
  /** Ends it now (a thread's execution is terminated, a process SIGKILLed); resolves once it is gone. */
  terminate(): Promise<unknown>;
}

function startThread(start: IsolatedStart, tsx: TsxFiles | undefined): Isolate {
  const thread = new Worker(BOOTSTRAP, { eval: true, workerData: { entry: ENTRY, start, tsx: tsx?.api } });
  return Object.assign(thread, { mode: 'thread' as const }) as unknown as Isolate;
}

/**
 * A child process on the entry, by IPC with structured-clone serialization. A process takes the
 * flags this one runs with (a tsx loader among them); when tsx loads the TypeScript and the
 * flags have none, tsx's loader is added.
 */
function startProcess(start: IsolatedStart, tsx: TsxFiles | undefined): Isolate {
  const execArgv = [...process.execArgv];
  if (tsx && !execArgv.some((arg) => /(^|=)tsx$|[\\/]tsx[\\/]/.test(arg))) execArgv.push('--import', tsx.loader);
  const child = fork(fileURLToPath(ENTRY), [], { execArgv, serialization: 'advanced', stdio: 'inherit' });
  child.send({ type: 'start', start });
  const isolate = {
    mode: 'process' as const,
    postMessage: (message: ToThread) => {
      if (child.connected) child.send(message);
    },
    on: (event: string, listener: (...args: unknown[]) => void) => child.on(event, listener),
    once: (event: string, listener: (...args: unknown[]) => void) => child.once(event, listener),
    terminate: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
  return isolate as unknown as Isolate;
}

/** The threads and processes of isolated attempts running now (what the tests read). */
const live = new Set<Isolate>();
export function isolatedThreads(): ReadonlySet<Isolate> {
  return live;
}

export interface IsolatedRunOptions {
  /** Counted when a stopped attempt's thread was terminated (workers/metrics.ts). */
  onTerminated?: ((job: { queue: string; kind: string }, reason: string, ranMs: number) => void) | undefined;
}

/**
 * Runs one attempt of `handler` in a thread of its own, with `context` (the attempt's) for its
 * signal, logger, heartbeat and receipts. Resolves with the handler's value, rejects with its
 * error; when the context's signal fires, the thread is told, then terminated.
 */
export function runIsolated(
  handler: Handler,
  context: HandlerContext<unknown>,
  options: IsolatedRunOptions = {},
): Promise<unknown> {
  const moduleUrl = isolatedModule(handler);
  if (moduleUrl === undefined)
    return Promise.reject(
      new PermanentError(`isolated handler ${handler.kind} names no module (isolated: { module: import.meta.url })`),
    );
  const start = isolatedStart(moduleUrl, handler, context);
  // Refused at start (HandlerRegistry.register); here for a handler run without a registry.
  const loading = isolatedLoadingOf(moduleUrl);
  if (loading.problem !== undefined)
    return Promise.reject(new PermanentError(`isolated handler ${handler.kind}: ${loading.problem}`));
  const startedAt = performance.now();
  return new Promise<unknown>((resolve, reject) => {
    if (context.signal.aborted) return reject(context.signal.reason);
    const thread =
      isolationMode(handler) === 'process' ? startProcess(start, loading.tsx) : startThread(start, loading.tsx);
    live.add(thread);
    new IsolatedRun(thread, { handler, context, options, startedAt }, { resolve, reject }).attend();
  });
}

/** What the thread of `handler`'s attempt in `context` starts from. */
function isolatedStart(moduleUrl: string, handler: Handler, context: HandlerContext<unknown>): IsolatedStart {
  return {
    module: moduleUrl,
    kind: handler.kind,
    job: context.job,
    payload: context.payload,
    attempt: context.attempt,
    deliveryKey: context.deliveryKey,
    logLevel: context.logger.level,
  };
}

/** How an isolated attempt's promise settles. */
interface Settle {
  resolve(value: unknown): void;
  reject(reason: unknown): void;
}

/** One isolated attempt: its handler, its context, the run's options, and when it began. */
interface IsolatedAttempt {
  handler: Handler;
  context: HandlerContext<unknown>;
  options: IsolatedRunOptions;
  /** performance.now() before its thread was started: a stopped thread's `ranMs` counts from it. */
  startedAt: number;
}

/**
 * One isolated attempt's thread, driven from the main thread: its log lines written to the
 * attempt's logger, its heartbeat and receipt calls run on the attempt's context, the stop sent
 * and the thread terminated, and the attempt's promise settled once, by whichever of the
 * thread's end, its error or the stop comes first.
 */
class IsolatedRun {
  private readonly thread: Isolate;
  private readonly attempt: IsolatedAttempt;
  private readonly settle: Settle;
  private readonly logger: Logger;
  private ended = false;
  /** The receipts' effects running in the thread, by id, each waiting for its `effect-reply`. */
  private readonly effects = new Map<number, Settle>();
  private nextEffect = 0;

  constructor(thread: Isolate, attempt: IsolatedAttempt, settle: Settle) {
    this.thread = thread;
    this.attempt = attempt;
    this.settle = settle;
    this.logger = attempt.context.logger;
  }

  /** Listens to the stop and to the thread, until the thread is gone. */
  attend(): void {
    this.attempt.context.signal.addEventListener('abort', this.onAbort, { once: true });
    this.thread.on('message', (message: FromThread) => this.onMessage(message));
    this.thread.on('error', (error: Error) => this.end(() => this.settle.reject(error)));
    this.thread.on('exit', (code: number | null) => this.onExit(code));
  }

  /** Settles the attempt's promise, the first time only. */
  private end(how: () => void): void {
    if (this.ended) return;
    this.ended = true;
    how();
  }

  private send(message: ToThread): void {
    try {
      this.thread.postMessage(message);
    } catch (error) {
      // The value of a heartbeat or receipt that does not clone: the handler gets the error.
      if (message.type === 'reply' && message.ok)
        this.thread.postMessage({ type: 'reply', id: message.id, ok: false, error: serializeError(error) });
    }
  }

  /** Answers the thread's call `id` with how `work` ends. */
  private reply(id: number, work: Promise<unknown>): void {
    void work.then(
      (value) => this.send({ type: 'reply', id, ok: true, value }),
      (error: unknown) => this.send({ type: 'reply', id, ok: false, error: serializeError(error) }),
    );
  }

  private readonly onAbort = (): void => {
    const { handler, context, options, startedAt } = this.attempt;
    const { signal } = context;
    const reason = signal.reason as { reason?: string; message?: string } | undefined;
    const why = reason?.reason ?? 'aborted';
    this.send({ type: 'abort', reason: why, message: reason?.message ?? 'the attempt was stopped' });
    // At once, not after a grace: the next handler may hold this loop (a timer here would
    // wait for it while the thread spins). The attempt settles from the stop on (its run's
    // wait ends then); this promise, the handler's own, ends only once the thread is gone, so
    // the slot stays taken until then, as a main-thread handler's does (workers/producer.ts).
    const ranMs = Math.round(performance.now() - startedAt);
    void this.thread.terminate().then(() => {
      this.logger.warn(
        { reason: why, ranMs, timeoutMs: handler.timeoutMs },
        'isolated handler stopped: its thread was terminated',
      );
      options.onTerminated?.(context.job, why, ranMs);
      this.end(() => this.settle.reject(signal.reason));
    });
  };

  private onMessage(message: FromThread): void {
    switch (message.type) {
      case 'log':
        forwardLog(this.logger, message.line);
        break;
      case 'progress':
        this.attempt.context.progress(message.fraction, message.message ?? undefined);
        break;
      case 'call':
        this.onCall(message);
        break;
      case 'effect-reply':
        this.onEffectReply(message);
        break;
      case 'done':
        if (message.ok) this.end(() => this.settle.resolve(undefined));
        else this.end(() => this.settle.reject(reviveError(message.error)));
        void this.thread.terminate();
        break;
    }
  }

  /** A heartbeat or a receipt the handler called: run on the attempt's context, its outcome sent back. */
  private onCall(message: Extract<FromThread, { type: 'call' }>): void {
    const { context } = this.attempt;
    if (message.op === 'heartbeat') this.reply(message.id, context.heartbeat());
    else {
      const effect = message.effect;
      this.reply(
        message.id,
        context.receipt(() => this.runEffect(effect), message.key),
      );
    }
  }

  /** A receipt's effect, run in the thread: asked for by id, settled by its `effect-reply`. */
  private runEffect(effect: number): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      const id = this.nextEffect++;
      this.effects.set(id, { resolve, reject });
      this.send({ type: 'call-effect', id, effect });
    });
  }

  private onEffectReply(message: Extract<FromThread, { type: 'effect-reply' }>): void {
    const waiting = this.effects.get(message.id);
    this.effects.delete(message.id);
    if (message.ok) waiting?.resolve(message.value);
    else waiting?.reject(reviveError(message.error));
  }

  private onExit(code: number | null): void {
    const { handler, context } = this.attempt;
    const { signal } = context;
    live.delete(this.thread);
    signal.removeEventListener('abort', this.onAbort);
    for (const waiting of this.effects.values()) waiting.reject(new Error('the isolated handler’s thread exited'));
    // Terminated after a stop: the stop is why it ended.
    this.end(() =>
      this.settle.reject(
        signal.aborted
          ? signal.reason
          : new Error(`isolated handler ${handler.kind}: its thread exited (code ${code}) before it finished`),
      ),
    );
  }
}

/** A pino line from the thread, written to the attempt's logger at its level. */
function forwardLog(logger: Logger, line: string): void {
  try {
    const {
      level,
      msg,
      time: _time,
      pid: _pid,
      hostname: _hostname,
      ...fields
    } = JSON.parse(line) as Record<string, unknown>;
    const label = (typeof level === 'number' && logger.levels.labels[level]) || 'info';
    const write = (logger as unknown as Record<string, (obj: unknown, msg?: string) => void>)[label];
    write?.call(logger, { ...fields, isolated: true }, typeof msg === 'string' ? msg : undefined);
  } catch {
    logger.info({ isolated: true, line }, 'isolated handler wrote a line that is not JSON');
  }
}
