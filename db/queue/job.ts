/**
 * The job as the queue API hands it out. Column names become camelCase here, once; the rest
 * of the code never sees a raw row.
 */
import type { FailureClass, JobState } from '../schema';
import { toDate, toDateOrNull, toInt } from './executor';

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
  attempts: number;
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

export type SettleOutcome = { applied: true } | { applied: false; reason: 'lease_lost' };
export const APPLIED: SettleOutcome = Object.freeze({ applied: true });
export const LEASE_LOST: SettleOutcome = Object.freeze({ applied: false, reason: 'lease_lost' });

/** Column list shared by every statement that returns whole jobs. */
export const JOB_COLUMNS = `id, queue, kind, kind_version, payload, idempotency_key, state, priority,
  run_at, attempts, max_attempts, lease_token, lease_until, worker_id, failure_class, last_error,
  trace_id, expires_at, created_at, started_at, finished_at, updated_at`;

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

/** A job from a row of JOB_COLUMNS. */
export function mapJob(row: Record<string, unknown>): Job {
  return jobFromRow(row, null);
}

/**
 * The one row-to-Job mapping. With `claim`, the row is a claim's (CLAIM_COLUMNS): state, token,
 * worker and the claim's instants (one per batch, parsed once by claim()) come from `claim`.
 */
function jobFromRow(row: Record<string, unknown>, claim: ClaimInstant | null): Job {
  const id = row.id as string;
  return {
    id,
    queue: row.queue as string,
    kind: row.kind as string,
    kindVersion: toInt(row.kind_version),
    payload: row.payload,
    idempotencyKey: (row.idempotency_key as string | null) ?? null,
    state: claim ? 'running' : (row.state as JobState),
    priority: toInt(row.priority),
    runAt: toDate(row.run_at),
    attempts: toInt(row.attempts),
    maxAttempts: toInt(row.max_attempts),
    leaseToken: claim ? claim.leaseToken : ((row.lease_token as string | null) ?? null),
    leaseUntil: claim ? new Date(claim.leaseUntil) : toDateOrNull(row.lease_until),
    workerId: claim ? claim.workerId : ((row.worker_id as string | null) ?? null),
    failureClass: (row.failure_class as FailureClass | null) ?? null,
    lastError: (row.last_error as string | null) ?? null,
    traceId: (row.trace_id as string | null) ?? defaultTraceId(id),
    expiresAt: toDateOrNull(row.expires_at),
    createdAt: toDate(row.created_at),
    startedAt: claim ? new Date(claim.startedAt) : toDateOrNull(row.started_at),
    finishedAt: claim ? null : toDateOrNull(row.finished_at),
    updatedAt: claim ? new Date(claim.startedAt) : toDate(row.updated_at),
  };
}

/**
 * What a claim returns per row: the columns that differ between the jobs of one claim, plus the
 * claim's own instants. State, token and worker are the claim's own; `updated_at` is
 * `started_at`.
 */
export const CLAIM_COLUMNS = `id, queue, kind, kind_version, payload, idempotency_key, priority, run_at,
  attempts, max_attempts, lease_until, started_at, failure_class, last_error, trace_id, expires_at, created_at`;

/** What one claim statement set on every job it leased (one instant for the whole batch). */
export interface ClaimInstant {
  leaseToken: string;
  workerId: string;
  startedAt: number;
  leaseUntil: number;
}

/** Maps a row of CLAIM_COLUMNS as the claimed job an attempt holds. */
export function mapClaimedJob(row: Record<string, unknown>, claim: ClaimInstant): ClaimedJob {
  const job = jobFromRow(row, claim) as ClaimedJob;
  job.attempt = job.attempts;
  return job;
}
