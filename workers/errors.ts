/**
 * Typed errors a handler throws to say how an attempt failed; the failure class decides the
 * retry (docs/contract.md §6). Anything else thrown counts as `transient`.
 */
import { LeaseholdError } from '../db/errors.ts';
import { boundedScrub, errorDetail, type ErrorDetail } from '../db/queue/error-detail.ts';
import { MAX_ERROR_LENGTH } from '../db/queue/settle.ts';
import type { FailureClass } from '../db/states.ts';

export class JobError extends LeaseholdError {
  /**
   * `job_error`; each subclass's is the failure class it asks for (`transient`, `permanent`, …).
   * Typed `string`: a handler's own subclass may carry a code of its own (`ECONNRESET`), which
   * the attempt's failure detail records (db/queue/error-detail.ts).
   */
  readonly code: string = 'job_error';
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
  override readonly code: string = 'transient';

  constructor(message: string, options?: { cause?: unknown }) {
    super('transient', message, options);
  }
}

/** The provider said "slow down": retried after Retry-After when given. */
export class RateLimitedError extends JobError {
  override readonly code: string = 'rate_limited';

  constructor(message: string, options: { retryAfterMs?: number; cause?: unknown } = {}) {
    super('rate_limited', message, options);
  }
}

/** The call timed out: it may or may not have happened. Retried with the same delivery key. */
export class UnknownOutcomeError extends JobError {
  override readonly code: string = 'unknown_outcome';

  constructor(message: string, options?: { cause?: unknown }) {
    super('unknown_outcome', message, options);
  }
}

/** Will fail the same way every time (a 4xx, a rule broken): `dead` at once. */
export class PermanentError extends JobError {
  override readonly code: string = 'permanent';

  constructor(message: string, options?: { cause?: unknown }) {
    super('permanent', message, options);
  }
}

/** The payload is wrong for this kind: `dead` at once. */
export class ValidationError extends JobError {
  override readonly code: string = 'validation';

  constructor(message: string, options?: { cause?: unknown }) {
    super('validation', message, options);
  }
}

/** The job should not run any more (the application gave up on it): ends `cancelled`. */
export class CancelledJobError extends JobError {
  override readonly code: string = 'cancelled';

  constructor(message: string, options?: { cause?: unknown }) {
    super('cancelled', message, options);
  }
}

/**
 * How an attempt failed, as stored: the class, the one-line error (`Name: message`, at most
 * MAX_ERROR_LENGTH characters) and its detail (stack frames and `cause` chain, bounded:
 * db/queue/error-detail.ts), both with every value of `secrets` (redactedValues of the job's
 * payload) replaced by MASK.
 */
export function classify(
  error: unknown,
  secrets: readonly string[] = [],
): { failureClass: FailureClass; retryAfterMs?: number; message: string; detail: ErrorDetail | null } {
  const detail = errorDetail(error, secrets);
  const line = (raw: string) => boundedScrub(raw, MAX_ERROR_LENGTH, secrets).text;
  if (error instanceof JobError) {
    return {
      failureClass: error.failureClass,
      ...(error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {}),
      message: line(`${error.name}: ${error.message}`),
      detail,
    };
  }
  if (error instanceof Error)
    return { failureClass: 'transient', message: line(`${error.name}: ${error.message}`), detail };
  return { failureClass: 'transient', message: line(`thrown: ${String(error)}`), detail };
}
