/**
 * The job as the queue API hands it out. Column names become camelCase here, once; the rest
 * of the code never sees a raw row.
 */
import type { FailureClass, JobState } from '../states.ts';
import { FAILURE_CLASSES, JOB_STATES, oneOf } from '../states.ts';
import { toDate, toDateOrNull, type PgTimestamp } from './executor.ts';
import { readJobOptions, type JobBackoff } from './job-options.ts';

export interface Job {
  id: string;
  queue: string;
  kind: string;
  kindVersion: number;
  payload: unknown;
  idempotencyKey: string | null;
  state: JobState;
  priority: number;
  runAt: Date;
  /** Attempts started, charged or not (the fence number of the latest). */
  attempts: number;
  /**
   * Of `attempts`, those given back uncharged: released at shutdown or handed back by a worker
   * where an earlier execution still ran. The charged ones are `attempts - released`.
   */
  released: number;
  /** The job's own cap; the handler's `maxAttempts` may be lower (attemptBudget says which applies). */
  maxAttempts: number;
  leaseToken: string | null;
  leaseUntil: Date | null;
  workerId: string | null;
  failureClass: FailureClass | null;
  lastError: string | null;
  /** The trace id given at enqueue, or the job id without dashes. */
  traceId: string;
  expiresAt: Date | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  updatedAt: Date;
  /** The job's fair group given at enqueue (docs/flow-control.md, "Fair groups"), or null. */
  group: string | null;
  /** The job's tags (docs/jobs.md, "Tags"); empty for none. */
  tags: readonly string[];
  /** The uniqueness key the job took at enqueue (docs/jobs.md, "Uniqueness"), or null. */
  uniqueKey: string | null;
  /** The job's own handler timeout, asked for at enqueue within its kind's bounds, or null. */
  timeoutMs: number | null;
  /** The job's own retry back-off, asked for at enqueue within its kind's bounds, or null. */
  backoff: JobBackoff | null;
  /** Enqueued `awaitable: true`: its end wakes waitForJob. */
  awaitable: boolean;
  /** Times the job snoozed (docs/jobs.md, "Snooze"): counted in `released`, not charged. */
  snoozes: number;
  /** The snoozes' total length, in milliseconds. */
  snoozedMs: number;
}

/**
 * A job as one attempt holds it. `attempt` is the fence: hand it to outside systems so they
 * can reject a late attempt's side effects; `leaseToken` proves ownership to the queue.
 */
export interface ClaimedJob extends Job {
  state: 'running';
  attempt: number;
  leaseToken: string;
  leaseUntil: Date;
}

/** What a settlement needs to prove it still owns the job. */
export interface LeaseRef {
  id: string;
  leaseToken: string;
}

/** A settlement refused: the attempt no longer holds the lease (every settle outcome has it). */
export type LeaseLost = { applied: false; reason: 'lease_lost' };
export type SettleOutcome = { applied: true } | LeaseLost;
export const APPLIED: { applied: true } = Object.freeze({ applied: true });
export const LEASE_LOST: LeaseLost = Object.freeze({ applied: false, reason: 'lease_lost' });

/** Column list shared by every statement that returns whole jobs. */
export const JOB_COLUMNS = `id, queue, kind, kind_version, payload, idempotency_key, state, priority,
  run_at, attempts, released, max_attempts, lease_token, lease_until, worker_id, failure_class, last_error,
  trace_id, expires_at, created_at, started_at, finished_at, updated_at, group_key, tags, options`;

/**
 * JOB_COLUMNS as the producer's statements name them (the enqueues' RETURNING and key look-up):
 * `lease_token` is NULL, never read, so the producer's role needs no right on it and an
 * enqueue's result never carries a running attempt's token (`leaseToken: null`).
 */
export function producerJobColumns(alias?: string): string {
  return JOB_COLUMNS.split(',')
    .map((c) => c.trim())
    .map((c) => (c === 'lease_token' ? 'NULL::uuid AS lease_token' : alias ? `${alias}.${c}` : c))
    .join(', ');
}

/** JOB_COLUMNS qualified by a table alias (`j.id, j.queue, …`). */
export function jobColumns(alias: string): string {
  return qualified(JOB_COLUMNS, alias);
}

/** A column list qualified by a table alias. */
export function qualified(columns: string, alias: string): string {
  return columns
    .split(',')
    .map((c) => `${alias}.${c.trim()}`)
    .join(', ');
}

/** A job without a trace id of its own logs with its id, dashes removed (a W3C trace id). */
function defaultTraceId(id: string): string {
  // Slices of the canonical 8-4-4-4-12 form: cheaper than a replace, once per claimed job.
  return id.length === 36
    ? id.slice(0, 8) + id.slice(9, 13) + id.slice(14, 18) + id.slice(19, 23) + id.slice(24)
    : id.replaceAll('-', '');
}

/** The columns a stored job and a claimed one both return. */
interface CommonJobColumns {
  id: string;
  queue: string;
  kind: string;
  kind_version: number;
  payload: unknown;
  idempotency_key: string | null;
  priority: number;
  run_at: PgTimestamp;
  attempts: number;
  released: number;
  max_attempts: number;
  /** Text: checked against FAILURE_CLASSES when mapped. */
  failure_class: string | null;
  last_error: string | null;
  trace_id: string | null;
  expires_at: PgTimestamp | null;
  created_at: PgTimestamp;
  /** Absent from the ungrouped claim's rows (its jobs have none). */
  group_key?: string | null | undefined;
  /** drizzle/0023; absent from rows of a statement that does not name them. */
  tags?: string[] | null | undefined;
  options?: unknown;
}

/** A row of JOB_COLUMNS, from pg, Drizzle or JSON (`row_to_json`: timestamps as ISO text). */
export interface JobColumnsRow extends CommonJobColumns {
  /** Text: checked against JOB_STATES when mapped. */
  state: string;
  lease_token: string | null;
  lease_until: PgTimestamp | null;
  worker_id: string | null;
  started_at: PgTimestamp | null;
  finished_at: PgTimestamp | null;
  updated_at: PgTimestamp;
}

const failureClassOf = (value: string | null): FailureClass | null =>
  value === null ? null : oneOf(value, FAILURE_CLASSES, 'failure class');

/** A job from a row of JOB_COLUMNS. Column names become camelCase here and in mapClaimedJob. */
export function mapJob(row: JobColumnsRow): Job {
  const id = row.id;
  return {
    id,
    queue: row.queue,
    kind: row.kind,
    kindVersion: row.kind_version,
    payload: row.payload,
    idempotencyKey: row.idempotency_key,
    state: oneOf(row.state, JOB_STATES, 'job state'),
    priority: row.priority,
    runAt: toDate(row.run_at),
    attempts: row.attempts,
    released: row.released,
    maxAttempts: row.max_attempts,
    leaseToken: row.lease_token,
    leaseUntil: toDateOrNull(row.lease_until),
    workerId: row.worker_id,
    failureClass: failureClassOf(row.failure_class),
    lastError: row.last_error,
    traceId: row.trace_id ?? defaultTraceId(id),
    expiresAt: toDateOrNull(row.expires_at),
    createdAt: toDate(row.created_at),
    startedAt: toDateOrNull(row.started_at),
    finishedAt: toDateOrNull(row.finished_at),
    updatedAt: toDate(row.updated_at),
    group: row.group_key ?? null,
    ...extras(row),
  };
}

/** The fields of tags and options (one object spread: a plain job's are the shared constants). */
function extras(
  row: CommonJobColumns,
): Pick<Job, 'tags' | 'uniqueKey' | 'timeoutMs' | 'backoff' | 'awaitable' | 'snoozes' | 'snoozedMs'> {
  if ((row.options === null || row.options === undefined) && !row.tags) return PLAIN_EXTRAS;
  const o = readJobOptions(row.options);
  return {
    tags: row.tags ?? [],
    uniqueKey: o.uniqueKey,
    timeoutMs: o.timeoutMs,
    backoff: o.backoff,
    awaitable: o.awaitable,
    snoozes: o.snoozes,
    snoozedMs: o.snoozedMs,
  };
}
const PLAIN_EXTRAS = Object.freeze({
  tags: Object.freeze([]),
  uniqueKey: null,
  timeoutMs: null,
  backoff: null,
  awaitable: false,
  snoozes: 0,
  snoozedMs: 0,
});

/**
 * What a claim returns per row: the columns that differ between the jobs of one claim, plus the
 * claim's own instants. State, token and worker are the claim's own; `updated_at` is
 * `started_at`.
 */
export const CLAIM_COLUMNS = `id, queue, kind, kind_version, payload, idempotency_key, priority, run_at,
  attempts, released, max_attempts, lease_until, started_at, failure_class, last_error, trace_id, expires_at, created_at,
  tags, options`;

/** A row of CLAIM_COLUMNS (claim.ts reads the instants of the first row of a batch). */
export interface ClaimColumnsRow extends CommonJobColumns {
  lease_until: PgTimestamp;
  started_at: PgTimestamp;
}

/**
 * A row of the bounded claim texts (transitions/claim.ts, `after`): the claim's columns and, on
 * the row of each walk's last job taken, its claim key's `claim_at` as text (exact, where a Date
 * would keep milliseconds only); NULL on the others.
 */
export interface BoundedClaimColumnsRow extends ClaimColumnsRow {
  claim_key: string | null;
}

/** What one claim statement set on every job it leased (one instant for the whole batch). */
export interface ClaimInstant {
  leaseToken: string;
  workerId: string;
  startedAt: number;
  leaseUntil: number;
}

/**
 * Maps a row of CLAIM_COLUMNS as the claimed job an attempt holds: the fields mapJob takes from
 * the row, less state, token, worker and the claim's instants (one per batch, parsed once by
 * claim()), which come from `claim`. Built as a ClaimedJob of its own (not a Job then narrowed)
 * on the hot path: one object per job, no copy.
 */
export function mapClaimedJob(row: ClaimColumnsRow, claim: ClaimInstant): ClaimedJob {
  const id = row.id;
  return {
    id,
    queue: row.queue,
    kind: row.kind,
    kindVersion: row.kind_version,
    payload: row.payload,
    idempotencyKey: row.idempotency_key,
    state: 'running',
    priority: row.priority,
    runAt: toDate(row.run_at),
    attempts: row.attempts,
    released: row.released,
    maxAttempts: row.max_attempts,
    leaseToken: claim.leaseToken,
    leaseUntil: new Date(claim.leaseUntil),
    workerId: claim.workerId,
    failureClass: failureClassOf(row.failure_class),
    lastError: row.last_error,
    traceId: row.trace_id ?? defaultTraceId(id),
    expiresAt: toDateOrNull(row.expires_at),
    createdAt: toDate(row.created_at),
    startedAt: new Date(claim.startedAt),
    finishedAt: null,
    updatedAt: new Date(claim.startedAt),
    group: row.group_key ?? null,
    ...extras(row),
    attempt: row.attempts,
  };
}
