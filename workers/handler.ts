/**
 * What a handler is: a kind, the kind versions it accepts, a zod schema for the payload, its
 * limits, the function that does the work, and what the kinds registry records of it (display
 * name, default queue, redacted payload paths, whether a re-run is safe): a worker writes that
 * to `leasehold.kinds` at start, and the dashboard, which never loads handlers, reads it there.
 */
import type { Logger } from 'pino';
import type { z } from 'zod';
import { type ClaimedJob, type KindRegistration, parseKindRegistrations, type RetryPolicy } from '../db/queue/index.ts';

/**
 * What a handler receives for one attempt. Read its members or destructure them (functions
 * stay bound); `signal`, `logger`, `heartbeat` and `receipt` are getters, made on first read,
 * so a spread copy (`{ ...context }`) carries only the plain fields: pass the context itself on.
 */
export interface HandlerContext<Payload> {
  job: ClaimedJob;
  /** Validated against the handler's schema. */
  payload: Payload;
  /** The attempt number: a fence for outside systems (it only grows). */
  attempt: number;
  /** Stable across attempts: the job's idempotency key, else `<kind>:<job id>`. */
  deliveryKey: string;
  /** Fires when the lease is lost, an operator cancels, the timeout passes, or the worker stops. */
  signal: AbortSignal;
  /** Extends the lease now (the lease keeper also does it on its own at a third of the lease). */
  heartbeat: () => Promise<void>;
  logger: Logger;
  /**
   * Runs a side effect at most once per key (default: the delivery key) as far as this
   * database knows: a recorded result is returned instead of calling `effect` again.
   */
  receipt: <T>(effect: () => Promise<T>, key?: string) => Promise<T>;
}

export interface Handler<Payload = unknown> {
  kind: string;
  /** Kind versions this handler accepts (jobs carry `kindVersion`). */
  versions: readonly number[];
  schema: z.ZodType<Payload>;
  /** Caps the job's own `maxAttempts` for this kind. */
  maxAttempts?: number;
  /** The signal fires with a timeout after this long; the attempt fails as `timeout`. */
  timeoutMs: number;
  retry?: Partial<RetryPolicy>;
  /** What the dashboard calls the kind (default: the kind itself). */
  displayName?: string;
  /** The queue the kind's jobs usually go to (default `default`); shown, not enforced. */
  defaultQueue?: string;
  /**
   * Payload paths the dashboard masks for viewers and operators, for every version this
   * handler accepts: `email`, `card.number`, `recipients[].email` (`[]` is any element).
   * Well-known secret keys (password, token, …) are masked anyway. Adding a path takes effect
   * when the worker starts; removing one takes an admin (workers only ever add paths).
   */
  redact?: readonly string[];
  /**
   * Whether running a job of this kind again after it succeeded does no harm (default false):
   * what an operator reads before re-running one.
   */
  rerunSafe?: boolean;
  handle(context: HandlerContext<Payload>): Promise<unknown>;
}

/** What the kinds registry records of a handler: one entry per version it accepts. */
export function kindRegistrations(handler: Handler): KindRegistration[] {
  return handler.versions.map((version) => ({
    kind: handler.kind,
    version,
    defaultQueue: handler.defaultQueue ?? 'default',
    displayName: handler.displayName ?? handler.kind,
    redactedPaths: [...(handler.redact ?? [])],
    rerunSafe: handler.rerunSafe ?? false,
  }));
}

/** Defines a handler with the payload type taken from its schema. */
export function defineHandler<S extends z.ZodType>(handler: Handler<z.output<S>> & { schema: S }): Handler {
  return handler as unknown as Handler;
}

export class HandlerRegistry {
  private readonly byKind = new Map<string, Handler>();

  constructor(handlers: readonly Handler[] = []) {
    for (const handler of handlers) this.register(handler);
  }

  register(handler: Handler): void {
    if (this.byKind.has(handler.kind)) throw new Error(`Leasehold workers: two handlers for kind ${handler.kind}`);
    if (handler.versions.length === 0) throw new Error(`Leasehold workers: handler ${handler.kind} accepts no version`);
    // A bad redact path or display name fails here, when the handlers load, not at start.
    parseKindRegistrations(kindRegistrations(handler));
    this.byKind.set(handler.kind, handler);
  }

  get(kind: string): Handler | undefined {
    return this.byKind.get(kind);
  }

  kinds(): string[] {
    return [...this.byKind.keys()].sort();
  }

  /** Every kind version of every handler, as the worker records them at start. */
  registrations(): KindRegistration[] {
    return this.kinds().flatMap((kind) => kindRegistrations(this.byKind.get(kind)!));
  }
}
