/**
 * Waiting and retrying, shared by the worker's services: a sleep that a stop cuts short, the
 * backoff after failures, a loop that runs a task every so often, and which database errors
 * are worth another try.
 */
import type { Logger } from 'pino';

/** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
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

/** Exponential backoff with jitter after `failures` failures in a row: 100 ms to 30 s. */
export function backoff(failures: number): number {
  return Math.min(30_000, 200 * 2 ** Math.min(failures - 1, 8)) * (0.5 + Math.random() / 2);
}

/**
 * Runs `task` every `ms` (±10 % jitter, so workers started together drift apart) until `signal`
 * aborts, logging (not throwing) its failures. Resolves once the loop is over.
 */
export async function every(
  ms: number,
  task: () => Promise<void> | void,
  signal: AbortSignal,
  logger: Logger,
  name: string,
): Promise<void> {
  while (!signal.aborted) {
    await sleep(ms * (0.9 + Math.random() * 0.2), signal);
    if (signal.aborted) return;
    try {
      await task();
    } catch (error) {
      logger.warn({ err: error, task: name }, 'background task failed; it runs again next round');
    }
  }
}

/**
 * Connection loss, server shutdown, overload, serialization: worth another try. Drizzle wraps
 * the driver's error ("Failed query: …") and passes on only causes with a code, so a cause
 * without one ("Connection terminated unexpectedly") is looked at too.
 */
export function isRetryableDbError(error: unknown): boolean {
  if (isRetryableItself(error)) return true;
  const cause = error instanceof Error ? error.cause : undefined;
  return cause !== undefined && isRetryableItself(cause);
}

function isRetryableItself(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  // Node's socket codes first: EPIPE is five capitals, like an SQLSTATE.
  if (typeof code === 'string' && /^E(CONN|PIPE|TIMEDOUT|HOSTUNREACH|NETUNREACH|AI_AGAIN)/.test(code)) return true;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return /^(08|40|53|57)/.test(code);
  const message = error instanceof Error ? error.message : '';
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
    message,
  );
}

/**
 * A database error in words, for a one-line log: its code and message, and for a connection
 * refused on several addresses at once (an AggregateError, whose own message is empty) each
 * address's. No stack.
 */
export function dbErrorInWords(error: unknown): string {
  const one = (e: unknown): string => {
    if (!(e instanceof Error)) return String(e);
    const nested = (e as { errors?: unknown }).errors;
    if (Array.isArray(nested) && nested.length > 0 && !e.message) return [...new Set(nested.map(one))].join('; ');
    const code = (e as { code?: unknown }).code;
    const message = e.message || (typeof code === 'string' ? code : e.name);
    return typeof code === 'string' && !message.includes(code) ? `${message} (${code})` : message;
  };
  const said = one(error);
  const cause = error instanceof Error ? error.cause : undefined;
  return cause !== undefined && said.startsWith('Failed query') ? one(cause) : said;
}

/**
 * Runs `work`, trying again after connection-level failures (isRetryableDbError) with backoff
 * until `deadlineMs` or `signal` says stop; then, or on any other error, it throws the last
 * error. `onRetry` hears each failure that is tried again.
 *
 * The deadline is local monotonic time (`now`, default performance.now()), never a database
 * timestamp set against the worker's wall clock: a clock that runs ahead would see every lease
 * as past and retry nothing (security review B7). It may be a function, read at each failure,
 * so a deadline that moves meanwhile (a heartbeat extended the lease) is honoured.
 */
export async function retryWhileUnavailable<T>(
  work: () => Promise<T>,
  options: {
    deadlineMs: number | (() => number);
    /** Each failure that is tried again: which try failed (1 for the first) and the wait before the next. */
    onRetry: (error: unknown, retry: { attempt: number; waitMs: number }) => void;
    signal?: AbortSignal | undefined;
    now?: (() => number) | undefined;
  },
): Promise<T> {
  const now = options.now ?? (() => performance.now());
  const deadline = typeof options.deadlineMs === 'function' ? options.deadlineMs : () => options.deadlineMs as number;
  for (let failures = 1; ; failures++) {
    try {
      return await work();
    } catch (error) {
      const wait = backoff(failures);
      if (!isRetryableDbError(error) || now() + wait > deadline() || options.signal?.aborted) throw error;
      options.onRetry(error, { attempt: failures, waitMs: wait });
      await sleep(wait, options.signal);
      if (options.signal?.aborted) throw error; // stopped during the wait: no further try
    }
  }
}

/**
 * A service's background loops, stopped together: `every()` starts one, `stop()` aborts them
 * all and resolves once each has returned (a task in flight finishes first).
 */
export class Loops {
  private readonly controller = new AbortController();
  private readonly running: Promise<void>[] = [];

  constructor(private readonly logger: Logger) {}

  every(ms: number, task: () => Promise<void> | void, name: string): void {
    this.running.push(every(ms, task, this.controller.signal, this.logger, name));
  }

  async stop(): Promise<void> {
    this.controller.abort();
    await Promise.allSettled(this.running);
  }
}
