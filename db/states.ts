/**
 * The closed lists of job states, failure classes and attempt outcomes, with no imports: the
 * schema builds its CHECKs from them, and the client-safe `lib/dto.ts` re-exports them, so a
 * browser bundle that needs the list of states does not pull in drizzle's pg-core or `pg`.
 */

export const JOB_STATES = ['ready', 'running', 'done', 'dead', 'cancelled'] as const;
export type JobState = (typeof JOB_STATES)[number];
export const TERMINAL_STATES = ['done', 'dead', 'cancelled'] as const satisfies readonly JobState[];

/**
 * States a list can filter by: the stored states and the sub-states the dashboard tells apart
 * (a ready job waiting for its run time or its backoff, a running job whose lease ran out).
 */
export const LIST_STATES = [...JOB_STATES, 'scheduled', 'retrying', 'lease_expired'] as const;
export type ListState = (typeof LIST_STATES)[number];

/** What an operator's retry accepts; the guard in db/queue/operator.ts checks the same two. */
export const RETRYABLE_FROM: readonly JobState[] = ['dead', 'cancelled'];
/** What an operator's cancel accepts (a running job only with the lease token seen). */
export const CANCELLABLE_FROM: readonly JobState[] = ['ready', 'running'];

export const FAILURE_CLASSES = [
  'transient',
  'rate_limited',
  'timeout',
  'unknown_outcome',
  'lease_expired',
  'permanent',
  'validation',
  'cancelled',
  'expired',
] as const;
export type FailureClass = (typeof FAILURE_CLASSES)[number];

export const ATTEMPT_OUTCOMES = ['completed', 'failed', 'lease_expired', 'released', 'cancelled'] as const;
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];
