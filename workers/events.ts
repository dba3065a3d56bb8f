/**
 * What a worker tells its embedder as it goes (`worker.on('failed' | 'dead' | 'error', …)`):
 * for Sentry, alerting or a counter of one's own. The worker's services call `emit`; listeners
 * are the user's code.
 *
 * Invariants:
 * - `emit` never throws and never waits: a listener that throws (or returns a rejected
 *   promise) is logged and the others still run, so alerting code cannot break a settlement or
 *   the claim loop;
 * - an event is emitted after the fact it reports is recorded (a `failed` after the failure
 *   was written, a `dead` after the job is dead), never for a settlement the lease refused.
 */
import type { Logger } from 'pino';
import type { FailureClass } from '../db/states.ts';

/** One failed attempt, as recorded: the job goes back to `ready` (a retry) or ends `dead`. */
export interface FailedEvent {
  jobId: string;
  kind: string;
  queue: string;
  /** The attempt that failed (1, 2, …). */
  attempt: number;
  /** The error as stored on the job (`Name: message`). */
  error: string;
  failureClass: FailureClass;
  /** Where the job went: `ready` (it runs again at `runAt`), `dead` or `cancelled`. */
  next: 'ready' | 'dead' | 'cancelled';
  /** When the retry is due (for `next: 'ready'`). */
  runAt: Date;
  workerId: string;
}

/** A job this worker's attempt ended `dead` (after its `failed` event). */
export interface DeadEvent {
  jobId: string;
  kind: string;
  queue: string;
  attempt: number;
  error: string;
  failureClass: FailureClass;
  workerId: string;
}

/** Where a worker-internal error happened. */
export type WorkerErrorSource = 'claim' | 'settle';

/** A worker-internal error: a failed claim round, a settlement that could not be recorded. */
export interface WorkerErrorEvent {
  source: WorkerErrorSource;
  /** A sentence for people. */
  message: string;
  /** What was thrown. */
  error: unknown;
  /** The job, for a settlement. */
  jobId?: string | undefined;
  workerId: string;
}

export interface WorkerEventMap {
  failed: FailedEvent;
  dead: DeadEvent;
  error: WorkerErrorEvent;
}

export type WorkerEventName = keyof WorkerEventMap;
export type WorkerEventListener<E extends WorkerEventName> = (event: WorkerEventMap[E]) => unknown;

const EVENT_NAMES: readonly WorkerEventName[] = ['failed', 'dead', 'error'];

export class WorkerEvents {
  private readonly listeners: { [E in WorkerEventName]: Set<WorkerEventListener<E>> } = {
    failed: new Set(),
    dead: new Set(),
    error: new Set(),
  };

  constructor(private readonly logger: Logger) {}

  /** Adds a listener; returns a function that removes it. */
  on<E extends WorkerEventName>(event: E, listener: WorkerEventListener<E>): () => void {
    if (!EVENT_NAMES.includes(event))
      throw new TypeError(`Leasehold worker: on(${JSON.stringify(event)}): the events are ${EVENT_NAMES.join(', ')}`);
    if (typeof listener !== 'function')
      throw new TypeError(`Leasehold worker: on('${event}', listener): not a function`);
    this.listeners[event].add(listener);
    return () => this.off(event, listener);
  }

  off<E extends WorkerEventName>(event: E, listener: WorkerEventListener<E>): void {
    this.listeners[event]?.delete(listener);
  }

  /** Whether anyone listens (so a caller can skip building the event). */
  has(event: WorkerEventName): boolean {
    return this.listeners[event].size > 0;
  }

  emit<E extends WorkerEventName>(event: E, payload: WorkerEventMap[E]): void {
    for (const listener of this.listeners[event]) {
      try {
        const returned = listener(payload);
        if (returned instanceof Promise) returned.catch((error: unknown) => this.listenerFailed(event, error));
      } catch (error) {
        this.listenerFailed(event, error);
      }
    }
  }

  private listenerFailed(event: WorkerEventName, error: unknown): void {
    this.logger.warn({ err: error, event }, `a '${event}' listener threw; the worker goes on`);
  }
}
