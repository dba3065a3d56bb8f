/**
 * The retry matrix of docs/contract.md §4 as one pure function: given how an attempt failed,
 * say whether the job runs again and after how long. No clock, no database: the caller
 * applies the decision in one guarded UPDATE, which also enforces the attempt budget and the
 * job's max age in database time (a job past `expires_at` goes `dead` as `expired`).
 *
 * | class                        | retry?                | delay                                 |
 * |------------------------------|-----------------------|---------------------------------------|
 * | transient                    | while attempts remain | exponential backoff, equal jitter, cap|
 * | rate_limited                 | while attempts remain | Retry-After when given, else backoff  |
 * | timeout, unknown_outcome     | while attempts remain | backoff (same delivery key next time) |
 * | lease_expired                | while attempts remain | fixed short delay                     |
 * | permanent, validation        | never                 | —                                     |
 * | cancelled, expired           | never                 | —                                     |
 */
import type { FailureClass } from '../states.ts';

export interface RetryPolicy {
  /** First backoff step. Attempt n waits about base × 2^(n-1). */
  baseDelayMs: number;
  /** Backoff never exceeds this (before jitter is taken off). */
  maxDelayMs: number;
  /** Delay after a lost lease: the worker died or stalled, the job itself may be fine. */
  leaseExpiredDelayMs: number;
  /** Longest Retry-After honoured; a provider asking for more gets this. */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({
  baseDelayMs: 1_000,
  maxDelayMs: 60 * 60 * 1000,
  leaseExpiredDelayMs: 5_000,
  maxRetryAfterMs: 6 * 60 * 60 * 1000,
});

export type RetryDecision =
  | { action: 'retry'; delayMs: number }
  | { action: 'dead'; reason: 'not_retryable' | 'attempts_exhausted' };

export interface RetryInput {
  failureClass: FailureClass;
  /** The attempt that just failed (1 for the first). */
  attempt: number;
  maxAttempts: number;
  /** From a rate limiter's Retry-After, for `rate_limited`. */
  retryAfterMs?: number | undefined;
  policy?: Partial<RetryPolicy> | undefined;
  /** A number in [0, 1); injectable so tests can pin the jitter. */
  random?: (() => number) | undefined;
}

const NOT_RETRYABLE: ReadonlySet<FailureClass> = new Set(['permanent', 'validation', 'cancelled', 'expired']);

export function isRetryable(failureClass: FailureClass): boolean {
  return !NOT_RETRYABLE.has(failureClass);
}

/**
 * Exponential backoff with "equal jitter": half the step is fixed, half random, so retries
 * spread out but never come back sooner than half the nominal delay.
 */
export function backoffDelayMs(attempt: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), 40);
  const step = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** exponent);
  return Math.round(step / 2 + random() * (step / 2));
}

export function decideRetry(input: RetryInput): RetryDecision {
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...input.policy };
  const random = input.random ?? Math.random;
  if (!isRetryable(input.failureClass)) return { action: 'dead', reason: 'not_retryable' };
  if (input.attempt >= input.maxAttempts) return { action: 'dead', reason: 'attempts_exhausted' };
  switch (input.failureClass) {
    case 'lease_expired':
      return { action: 'retry', delayMs: policy.leaseExpiredDelayMs };
    case 'rate_limited':
      if (input.retryAfterMs !== undefined && Number.isFinite(input.retryAfterMs) && input.retryAfterMs >= 0) {
        return { action: 'retry', delayMs: Math.min(Math.round(input.retryAfterMs), policy.maxRetryAfterMs) };
      }
      return { action: 'retry', delayMs: backoffDelayMs(input.attempt, policy, random) };
    default:
      return { action: 'retry', delayMs: backoffDelayMs(input.attempt, policy, random) };
  }
}
