/**
 * Typed errors a handler throws to say how an attempt failed; the failure class decides the
 * retry (docs/contract.md §6). Anything else thrown counts as `transient`.
 */
import type { FailureClass } from '../db/schema.ts';

export class JobError extends Error {
  readonly failureClass: FailureClass;
  readonly retryAfterMs: number | undefined;

  constructor(failureClass: FailureClass, message: string, options: { cause?: unknown; retryAfterMs?: number } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.failureClass = failureClass;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** Worth retrying with backoff: a 503, a reset connection. */
export class TransientError extends JobError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('transient', message, options);
  }
}

/** The provider said "slow down": retried after Retry-After when given. */
export class RateLimitedError extends JobError {
  constructor(message: string, options: { retryAfterMs?: number; cause?: unknown } = {}) {
    super('rate_limited', message, options);
  }
}

/** The call timed out: it may or may not have happened. Retried with the same delivery key. */
export class UnknownOutcomeError extends JobError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('unknown_outcome', message, options);
  }
}

/** Will fail the same way every time (a 4xx, a rule broken): `dead` at once. */
export class PermanentError extends JobError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('permanent', message, options);
  }
}

/** The payload is wrong for this kind: `dead` at once. */
export class ValidationError extends JobError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('validation', message, options);
  }
}

/** The job should not run any more (the application gave up on it): ends `cancelled`. */
export class CancelledJobError extends JobError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('cancelled', message, options);
  }
}

export function classify(error: unknown): { failureClass: FailureClass; retryAfterMs?: number; message: string } {
  if (error instanceof JobError) {
    return {
      failureClass: error.failureClass,
      ...(error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {}),
      message: `${error.name}: ${error.message}`,
    };
  }
  if (error instanceof Error) return { failureClass: 'transient', message: `${error.name}: ${error.message}` };
  return { failureClass: 'transient', message: `thrown: ${String(error)}` };
}
