/**
 * The closed lists of job states, failure classes and attempt outcomes, with no imports: the
 * schema builds its CHECKs from them, and the client-safe `lib/dto.ts` re-exports them, so a
 * browser bundle that needs the list of states does not pull in drizzle's pg-core or `pg`.
 */

export const JOB_STATES = ['ready', 'running', 'done', 'dead', 'cancelled'] as const;
export type JobState = (typeof JOB_STATES)[number];
export const TERMINAL_STATES = ['done', 'dead', 'cancelled'] as const satisfies readonly JobState[];

/**
 * The sub-states of `ready`, disjoint and together all of it, in one place: the dashboard's
 * badge (readySubstate), the jobs list's filter and the overview's counts (their SQL twins in
 * db/queries/sub-states.ts) all split a ready job the same way.
 *
 * - `ready`: never attempted and due (`run_at <= now`): the next claims take it;
 * - `scheduled`: never attempted, not yet due (enqueued with a delay or a run time);
 * - `retrying`: attempted before, waiting for its backoff or due again.
 */
export const READY_SUBSTATES = ['ready', 'scheduled', 'retrying'] as const;
export type ReadySubstate = (typeof READY_SUBSTATES)[number];

const millis = (at: Date | number) => (typeof at === 'number' ? at : at.getTime());

export function readySubstate(job: { runAt: Date; attempts: number }, now: Date | number): ReadySubstate {
  if (job.attempts > 0) return 'retrying';
  return job.runAt.getTime() > millis(now) ? 'scheduled' : 'ready';
}

/**
 * The sub-states of `running`: `lease_expired` once its lease deadline has passed (the reaper
 * has not taken it back yet), `running` before.
 */
export const RUNNING_SUBSTATES = ['running', 'lease_expired'] as const;
export type RunningSubstate = (typeof RUNNING_SUBSTATES)[number];

export function runningSubstate(job: { leaseUntil: Date | null }, now: Date | number): RunningSubstate {
  return job.leaseUntil !== null && job.leaseUntil.getTime() <= millis(now) ? 'lease_expired' : 'running';
}

/**
 * States a list can filter by, one per badge: the sub-states of `ready` and `running`, and the
 * terminal states. Each job is in exactly one (subStateOf).
 */
export const LIST_STATES = [...READY_SUBSTATES, ...RUNNING_SUBSTATES, ...TERMINAL_STATES] as const;
export type ListState = (typeof LIST_STATES)[number];

/** The one list state (and badge) of a job. */
export function subStateOf(
  job: { state: JobState; runAt: Date; attempts: number; leaseUntil: Date | null },
  now: Date | number,
): ListState {
  if (job.state === 'ready') return readySubstate(job, now);
  if (job.state === 'running') return runningSubstate(job, now);
  return job.state;
}

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

export const ATTEMPT_OUTCOMES = ['completed', 'failed', 'lease_expired', 'released', 'cancelled', 'snoozed'] as const;
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];

/**
 * `value` as a member of the closed list `list`, or an error naming it: how text the database
 * returns (a state, a class, an outcome, a role) becomes a union member, checked instead of
 * asserted. A CHECK keeps unknown values out of the tables, so the error means code and
 * database disagree (an older Leasehold reading a newer one's rows). A walk over a few
 * literals, no allocation: cheap enough for every row of a claim.
 */
export function oneOf<const T extends string>(value: unknown, list: readonly T[], what: string): T {
  for (const item of list) if (item === value) return item;
  throw new Error(
    `Leasehold: ${what} ${JSON.stringify(value)} from the database is not one of ${list.join(', ')} (a newer Leasehold writing to it?)`,
  );
}

/** What a concurrency limit applies to (leasehold.limits.scope; db/queue/limits.ts). */
export const LIMIT_SCOPES = ['queue', 'kind', 'resource'] as const;
export type LimitScope = (typeof LIMIT_SCOPES)[number];
