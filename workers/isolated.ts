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
  if (Typed) {
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
  const { signal } = context;
  const logger: Logger = context.logger;
  const start: IsolatedStart = {
    module: moduleUrl,
    kind: handler.kind,
    job: context.job,
    payload: context.payload,
    attempt: context.attempt,
    deliveryKey: context.deliveryKey,
    logLevel: logger.level,
  };
  // Refused at start (HandlerRegistry.register); here for a handler run without a registry.
  const loading = isolatedLoadingOf(moduleUrl);
  if (loading.problem !== undefined)
    return Promise.reject(new PermanentError(`isolated handler ${handler.kind}: ${loading.problem}`));
  const startedAt = performance.now();
  return new Promise<unknown>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const thread =
      isolationMode(handler) === 'process' ? startProcess(start, loading.tsx) : startThread(start, loading.tsx);
    live.add(thread);
    let ended = false;
    const end = (settle: () => void) => {
      if (ended) return;
      ended = true;
      settle();
    };
    const effects = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
    let nextEffect = 0;
    const send = (message: ToThread) => {
      try {
        thread.postMessage(message);
      } catch (error) {
        // The value of a heartbeat or receipt that does not clone: the handler gets the error.
        if (message.type === 'reply' && message.ok)
          thread.postMessage({ type: 'reply', id: message.id, ok: false, error: serializeError(error) });
      }
    };
    const reply = (id: number, work: Promise<unknown>): void =>
      void work.then(
        (value) => send({ type: 'reply', id, ok: true, value }),
        (error: unknown) => send({ type: 'reply', id, ok: false, error: serializeError(error) }),
      );

    const onAbort = () => {
      const reason = signal.reason as { reason?: string; message?: string } | undefined;
      const why = reason?.reason ?? 'aborted';
      send({ type: 'abort', reason: why, message: reason?.message ?? 'the attempt was stopped' });
      // At once, not after a grace: the next handler may hold this loop (a timer here would
      // wait for it while the thread spins). The attempt settles from the stop on (its run's
      // wait ends then); this promise, the handler's own, ends only once the thread is gone, so
      // the slot stays taken until then, as a main-thread handler's does (workers/producer.ts).
      const ranMs = Math.round(performance.now() - startedAt);
      void thread.terminate().then(() => {
        logger.warn(
          { reason: why, ranMs, timeoutMs: handler.timeoutMs },
          'isolated handler stopped: its thread was terminated',
        );
        options.onTerminated?.(context.job, why, ranMs);
        end(() => reject(signal.reason));
      });
    };
    signal.addEventListener('abort', onAbort, { once: true });

    thread.on('message', (message: FromThread) => {
      switch (message.type) {
        case 'log':
          forwardLog(logger, message.line);
          break;
        case 'call':
          if (message.op === 'heartbeat') reply(message.id, context.heartbeat());
          else {
            const effect = message.effect;
            const runEffect = () =>
              new Promise<unknown>((res, rej) => {
                const id = nextEffect++;
                effects.set(id, { resolve: res, reject: rej });
                send({ type: 'call-effect', id, effect });
              });
            reply(message.id, context.receipt(runEffect, message.key));
          }
          break;
        case 'effect-reply': {
          const waiting = effects.get(message.id);
          effects.delete(message.id);
          if (message.ok) waiting?.resolve(message.value);
          else waiting?.reject(reviveError(message.error));
          break;
        }
        case 'done':
          if (message.ok) end(() => resolve(undefined));
          else end(() => reject(reviveError(message.error)));
          void thread.terminate();
          break;
      }
    });
    thread.on('error', (error: Error) => end(() => reject(error)));
    thread.on('exit', (code: number | null) => {
      live.delete(thread);
      signal.removeEventListener('abort', onAbort);
      for (const waiting of effects.values()) waiting.reject(new Error('the isolated handler’s thread exited'));
      // Terminated after a stop: the stop is why it ended.
      end(() =>
        reject(
          signal.aborted
            ? signal.reason
            : new Error(`isolated handler ${handler.kind}: its thread exited (code ${code}) before it finished`),
        ),
      );
    });
  });
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
