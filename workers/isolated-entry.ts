/**
 * Isolated handlers, the thread's (or child process's) side (workers/isolated.ts starts it): imports the handler's
 * module, takes the handler of the job's kind from its exports, runs one attempt and says by
 * message how it ended. The context it gives the handler is the main thread's, by message: the
 * signal fires on `abort` (the thread is terminated shortly after), log lines go to the
 * attempt's logger, and `heartbeat` and `receipt` run on the main thread (a receipt's effect runs
 * here, between the main thread's look-up and its record).
 */
import { parentPort, workerData } from 'node:worker_threads';
import pino from 'pino';
import { scheduledTick } from '../db/queue/schedule-key.ts';
import type { Handler, HandlerContext } from './handler.ts';
import { SnoozeError, snoozeOf } from './snooze.ts';
import { progressInput } from '../db/queue/results.ts';
import { type FromThread, type IsolatedStart, reviveError, serializeError, type ToThread } from './isolated.ts';

// In a thread, the parent port and workerData; in a child process (isolated: 'process'), IPC,
// whose first message is the start. A process whose parent went away ends with it.
const inThread = parentPort !== null;
const post = (message: FromThread) => (inThread ? parentPort!.postMessage(message) : process.send!(message));
const onMessage = (listener: (message: ToThread) => void) =>
  inThread ? parentPort!.on('message', listener) : process.on('message', listener as (m: unknown) => void);
if (!inThread) process.once('disconnect', () => process.exit(1));
const start: IsolatedStart = inThread
  ? (workerData as { start: IsolatedStart }).start
  : await new Promise<IsolatedStart>((resolve) =>
      process.once('message', (message: { start: IsolatedStart }) => resolve(message.start)),
    );

const controller = new AbortController();
const calls = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
const effects = new Map<number, () => Promise<unknown>>();
let nextId = 0;

onMessage((message: ToThread) => {
  if (message.type === 'abort') {
    const reason = Object.assign(new Error(message.message), { name: 'AttemptAborted', reason: message.reason });
    controller.abort(reason);
  } else if (message.type === 'reply') {
    const waiting = calls.get(message.id);
    calls.delete(message.id);
    if (message.ok) waiting?.resolve(message.value);
    else waiting?.reject(reviveError(message.error));
  } else if (message.type === 'call-effect') {
    const effect = effects.get(message.effect);
    effects.delete(message.effect);
    Promise.resolve()
      .then(() => effect!())
      .then(
        (value) => post({ type: 'effect-reply', id: message.id, ok: true, value }),
        (error: unknown) => post({ type: 'effect-reply', id: message.id, ok: false, error: serializeError(error) }),
      );
  }
});

const call = (message: { op: 'heartbeat' } | { op: 'receipt'; key: string; effect: number }) =>
  new Promise<unknown>((resolve, reject) => {
    const id = nextId++;
    calls.set(id, { resolve, reject });
    post({ type: 'call', id, ...message });
  });

// No bindings of its own: the main thread writes each line to the attempt's logger, which has them.
const logger = pino({ level: start.logLevel, base: {} }, { write: (line: string) => post({ type: 'log', line }) });

const context: HandlerContext<unknown> = {
  job: start.job,
  payload: start.payload,
  attempt: start.attempt,
  deliveryKey: start.deliveryKey,
  scheduled: scheduledTick(start.job.idempotencyKey),
  signal: controller.signal,
  logger,
  heartbeat: async () => {
    await call({ op: 'heartbeat' });
  },
  // Checked here (a bad report throws in the handler), written by the main thread's reporter.
  progress: (fraction: number, message?: string) => {
    const report = progressInput(fraction, message);
    post({ type: 'progress', fraction: report.fraction, message: report.message });
  },
  receipt: <T>(effect: () => Promise<T>, key: string = start.deliveryKey): Promise<T> => {
    const id = nextId++;
    effects.set(id, effect);
    return call({ op: 'receipt', key, effect: id }) as Promise<T>;
  },
};

function isHandler(value: unknown): value is Handler {
  const h = value as Partial<Handler> | null;
  return typeof h === 'object' && h !== null && typeof h.kind === 'string' && typeof h.handle === 'function';
}

/** The handler of `kind` among a module's exports: `handlers`, the default, or any named export (or array of them). */
function handlerOf(mod: Record<string, unknown>, kind: string): Handler | undefined {
  for (const value of Object.values(mod)) {
    for (const candidate of Array.isArray(value) ? value : [value])
      if (isHandler(candidate) && candidate.kind === kind) return candidate;
  }
  return undefined;
}

try {
  const mod = (await import(start.module)) as Record<string, unknown>;
  const handler = handlerOf(mod, start.kind);
  if (!handler) throw new Error(`isolated handler ${start.kind}: ${start.module} exports no handler of this kind`);
  // A snooze returned crosses as the error it stands for (a symbol-keyed value does not clone).
  const snoozeMs = snoozeOf(await handler.handle(context));
  if (snoozeMs !== null) throw new SnoozeError(snoozeMs);
  post({ type: 'done', ok: true });
} catch (error) {
  post({ type: 'done', ok: false, error: serializeError(error) });
}
// The main thread terminates the thread on `done`: what the handler left behind (timers,
// pools) does not keep it.
