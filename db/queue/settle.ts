/**
 * Settlement: the attempt that holds a lease ends it (complete, fail, release) or extends it
 * (heartbeat).
 *
 * Invariant: every statement here is one compare-and-set guarded by
 *   state = 'running' AND lease_token = <the attempt's token> AND <effective deadline> > now()
 * (the effective deadline: the job's own lease_until, or its worker's lease while that covers
 * the job's claim; transitions/guards.ts), so a worker whose lease expired, was reaped, re-claimed by someone else or cancelled by an
 * operator changes nothing, even if the reaper has not run yet (the guard `leaseHeld` and the
 * statements are in transitions.ts). A refused settlement is the value
 * `{ applied: false, reason: 'lease_lost' }`, never an exception and never a write.
 *
 * Ending an attempt other than by completing it also writes its `job_attempts` row in the same
 * statement, so history and state cannot disagree. A completion's record is the done job row
 * itself (db/queue/history.ts).
 */
import { z } from 'zod';
import type { FailureClass, JobState } from '../states.ts';
import { FAILURE_CLASSES } from '../states.ts';
import { oneOf } from '../states.ts';
import { run, runText, toDate, type Executor, type PgTimestamp } from './executor.ts';
import { APPLIED, LEASE_LOST, type LeaseLost, type LeaseRef, type SettleOutcome } from './job.ts';
import {
  COMPLETE_MANY,
  completeManyText,
  failStatement,
  heartbeatStatement,
  releaseStatement,
  snoozeStatement,
  workerHeartbeatStatement,
} from './transitions.ts';
import { MAX_ATTEMPTS } from './attempt-cap.ts';
import { MAX_SNOOZE_MS } from './job-options.ts';
import type { StorableResult } from './results.ts';
import { decideRetry, type RetryDecision, type RetryPolicy } from './retry-policy.ts';
import { parseInput, storableText, UUID_PATTERN, uuidSchema } from './validate.ts';
import { errorDetailSchema, type ErrorDetail } from './error-detail.ts';

/** Longest error text stored; longer messages are cut (the stack and causes go to `error_detail`). */
export const MAX_ERROR_LENGTH = 4000;

const leaseSchema = z.object({ id: uuidSchema, leaseToken: uuidSchema });

/** Error text as stored: U+0000 replaced (text columns refuse it), cut to 4,000 characters. */
export function truncateError(message: string): string {
  const text = storableText(String(message));
  return text.length <= MAX_ERROR_LENGTH ? text : `${text.slice(0, MAX_ERROR_LENGTH - 1)}…`;
}

/** The detail as a jsonb parameter: U+0000 (which jsonb refuses) replaced, as in truncateError. */
function storableDetail(detail: ErrorDetail): string {
  return JSON.stringify(detail, (_key, value: unknown) => (typeof value === 'string' ? storableText(value) : value));
}

/** Marks the job `done` if this attempt still holds its lease (a batch of one). */
export async function completeIfLeaseHeld(executor: Executor, lease: LeaseRef): Promise<SettleOutcome> {
  parseInput('complete', leaseSchema, lease);
  const [outcome] = await completeManyIfLeaseHeld(executor, [{ id: lease.id, leaseToken: lease.leaseToken }]);
  return outcome!;
}

/**
 * Completes many jobs (batched acknowledgements). Each job is guarded by its own token; the
 * result lists which applied, in input order. Jobs leased by one claim share its token, so the
 * batch goes as one statement per token: `id = ANY(ids) AND lease_token = token`, looked up by
 * primary key.
 *
 * The statement returns the ids it did not complete (normally none), not the ones it did: at a
 * thousand jobs per acknowledgement, reading back and matching a thousand ids cost more client
 * CPU than the UPDATE cost the database.
 */
export async function completeManyIfLeaseHeld(
  executor: Executor,
  leases: readonly Completion[],
): Promise<SettleOutcome[]> {
  if (!areLeaseRefs(leases)) parseInput('completeMany', leasesSchema, leases); // throws the clear error
  if (leases.length === 0) return [];
  const byToken = new Map<string, string[]>();
  for (const l of leases) {
    const ids = byToken.get(l.leaseToken);
    if (ids) ids.push(l.id);
    else byToken.set(l.leaseToken, [l.id]);
  }
  const lost = new Set<string>();
  // What some attempts returned, and the jobs enqueued awaitable, by token (most batches: none).
  const extras = completionExtras(leases);
  for (const [token, ids] of byToken) {
    const extra = extras?.get(token);
    const rows = extra
      ? await runText<{ id: string }>(
          executor,
          completeManyText(extra.results.length > 0, extra.awaitable.length > 0),
          [
            `{${ids.join(',')}}`,
            token,
            ...(extra.results.length > 0 ? [`[${extra.results.join(',')}]`] : []),
            ...(extra.awaitable.length > 0 ? [`{${extra.awaitable.join(',')}}`] : []),
          ],
          `leasehold_complete_many_${extra.results.length > 0 ? 'r' : ''}${extra.awaitable.length > 0 ? 'n' : ''}`,
        )
      : await runText<{ id: string }>(
          executor,
          COMPLETE_MANY,
          [`{${ids.join(',')}}`, token],
          'leasehold_complete_many',
        );
    // By id and token: two attempts of one job (a stale one and a new one) can be in one batch.
    for (const r of rows) lost.add(`${r.id}/${token}`);
  }
  if (lost.size === 0) return leases.map(() => APPLIED);
  return leases.map((l) => (lost.has(`${l.id}/${l.leaseToken}`) ? LEASE_LOST : APPLIED));
}

/**
 * A completion that carries what its attempt returned (`result`, stored in `job_results` by the
 * acknowledgement that completes it) or whose job was enqueued `awaitable` (its end is announced).
 */
export interface Completion extends LeaseRef {
  result?: StorableResult | null | undefined;
  awaitable?: boolean | undefined;
}

/** Per token, the result rows (JSON objects as text) and the awaitable ids; null when no lease has either. */
function completionExtras(
  leases: readonly Completion[],
): Map<string, { results: string[]; awaitable: string[] }> | null {
  let extras: Map<string, { results: string[]; awaitable: string[] }> | null = null;
  for (const l of leases) {
    if (!l.result && !l.awaitable) continue;
    extras ??= new Map();
    let entry = extras.get(l.leaseToken);
    if (!entry) extras.set(l.leaseToken, (entry = { results: [], awaitable: [] }));
    if (l.result) {
      const { json, marker, bytes } = l.result;
      entry.results.push(
        `{"id":"${l.id}","result":${json ?? 'null'},"marker":${JSON.stringify(marker)},"bytes":${bytes}}`,
      );
    }
    if (l.awaitable) entry.awaitable.push(l.id);
  }
  return extras;
}

/** The batch acknowledgement's text ($1 ids, $2 token), exported for plan tests. */
export { COMPLETE_MANY };

const leasesSchema = z.array(leaseSchema).max(10_000);

/** The happy path of leasesSchema without zod (a worker acknowledges a thousand at a time). */
function areLeaseRefs(leases: unknown): leases is readonly LeaseRef[] {
  if (!Array.isArray(leases) || leases.length > 10_000) return false;
  const list: readonly unknown[] = leases;
  for (const l of list) {
    // `in` narrows without a call per field (field() measured ~10% slower per 1,000 leases).
    if (typeof l !== 'object' || l === null || !('id' in l) || !('leaseToken' in l)) return false;
    const { id, leaseToken } = l;
    if (
      typeof id !== 'string' ||
      typeof leaseToken !== 'string' ||
      !UUID_PATTERN.test(id) ||
      !UUID_PATTERN.test(leaseToken)
    )
      return false;
  }
  return true;
}

const DAY_MS = 24 * 3600 * 1000;
const failSchema = z.strictObject({
  error: z.string(),
  failureClass: z.enum(FAILURE_CLASSES),
  detail: errorDetailSchema.nullable().optional(),
  retryAfterMs: z
    .number()
    .min(0)
    .max(365 * DAY_MS)
    .optional(),
  policy: z
    .strictObject({
      baseDelayMs: z.number().min(0).max(DAY_MS),
      maxDelayMs: z
        .number()
        .min(0)
        .max(30 * DAY_MS),
      leaseExpiredDelayMs: z.number().min(0).max(DAY_MS),
      maxRetryAfterMs: z
        .number()
        .min(0)
        .max(30 * DAY_MS),
    })
    .partial()
    .optional(),
});
const failLeaseSchema = z.object({
  id: uuidSchema,
  leaseToken: uuidSchema,
  attempt: z.int().min(1),
  maxAttempts: z.int().min(1),
});

export interface FailInput {
  /** What went wrong, for people: stored (cut to 4,000 characters) on the job and its attempt. */
  error: string;
  failureClass: FailureClass;
  /**
   * The error's stack and cause chain (errorDetail(error, secrets)), stored on the attempt's
   * row only; within the bounds of db/queue/error-detail.ts, else refused. Already scrubbed:
   * nothing here knows the payload's secrets.
   */
  detail?: ErrorDetail | null;
  /** For `rate_limited`: the provider's Retry-After, in milliseconds. */
  retryAfterMs?: number;
  policy?: Partial<RetryPolicy>;
}

/** Where a failed attempt leaves its job. */
const FAILED_INTO = ['ready', 'dead', 'cancelled'] as const satisfies readonly JobState[];

export type FailOutcome =
  | { applied: true; state: (typeof FAILED_INTO)[number]; failureClass: FailureClass; runAt: Date }
  | LeaseLost;

/**
 * Ends the attempt as failed. The retry policy (docs/contract.md §4) picks `ready` after a
 * delay or `dead` (`cancelled` for the class `cancelled`: the application gave up on it); the
 * UPDATE re-checks the attempt budget and max age in database time.
 */
export async function failIfLeaseHeld(
  executor: Executor,
  lease: LeaseRef & { attempt: number; maxAttempts: number; snoozes?: number | undefined },
  input: FailInput,
): Promise<FailOutcome> {
  parseInput('fail', failLeaseSchema, lease);
  parseInput('fail', failSchema, input);
  // The policy picks by class and delay; the budget (charged attempts, `attempts - released`,
  // against the cap) is decided by the statement, which alone sees how many were released.
  // Snoozes are attempts too (each claim adds one) but not the job's failures: the exponent
  // counts the attempt number less the snoozes (docs/contract.md §6).
  const decision: RetryDecision = decideRetry({
    failureClass: input.failureClass,
    attempt: Math.max(1, lease.attempt - (lease.snoozes ?? 0)),
    maxAttempts: Number.POSITIVE_INFINITY,
    retryAfterMs: input.retryAfterMs,
    policy: input.policy,
  });
  const retry = decision.action === 'retry';
  const rows = await run<{ state: string; failure_class: string; run_at: PgTimestamp }>(
    executor,
    failStatement({
      id: lease.id,
      token: lease.leaseToken,
      retry,
      cap: Math.min(lease.maxAttempts, MAX_ATTEMPTS),
      delaySeconds: retry ? decision.delayMs / 1000 : 0,
      endState: input.failureClass === 'cancelled' ? 'cancelled' : 'dead',
      failureClass: input.failureClass,
      error: truncateError(input.error),
      detail: input.detail ? storableDetail(input.detail) : null,
    }),
  );
  const row = rows[0];
  if (!row) return LEASE_LOST;
  return {
    applied: true,
    state: oneOf(row.state, FAILED_INTO, 'state after a failure'),
    failureClass: oneOf(row.failure_class, FAILURE_CLASSES, 'failure class'),
    runAt: toDate(row.run_at),
  };
}

/**
 * A heartbeat's outcome. Renewed: the new deadline, and how long it is from the statement's
 * own time (`leaseRemainingMs`, database time only: add it to a local clock read before the
 * statement was sent, never compare `leaseUntil` with the worker's clock). `row_locked`: the
 * lease is still held but its row was locked by another transaction, so it was not renewed
 * this round (try again at the next beat; not a lost lease). `lease_lost`: stop.
 */
export type HeartbeatOutcome =
  | { applied: true; leaseUntil: Date; leaseRemainingMs: number }
  | HeartbeatSkipped
  | LeaseLost;

/** A lease still held whose row another transaction had locked: not renewed this round. */
export type HeartbeatSkipped = { applied: false; reason: 'row_locked' };
export const ROW_LOCKED: HeartbeatSkipped = Object.freeze({ applied: false, reason: 'row_locked' });

/** A row of heartbeatStatement: one per requested lease. */
interface HeartbeatRow {
  id: string;
  token: string;
  /** Set when renewed. */
  lease_until: PgTimestamp | null;
  remaining_ms: number | null;
  /** Held at the statement's snapshot (renewed or not). */
  held: boolean;
}

/** A boolean column as a runner's driver hands it back: a boolean, or text ('t', 'true'). */
function pgBool(value: unknown): boolean {
  return value === true || value === 't' || value === 'true';
}

function heartbeatOutcome(row: HeartbeatRow | undefined): HeartbeatOutcome {
  if (row?.lease_until != null && row.remaining_ms != null)
    return { applied: true, leaseUntil: toDate(row.lease_until), leaseRemainingMs: Number(row.remaining_ms) };
  return pgBool(row?.held) ? ROW_LOCKED : LEASE_LOST;
}

/** A heartbeat's options, built once (not per call: heartbeats run for every job in flight). */
const heartbeatOptionsSchema = z.object({
  leaseSeconds: z
    .number()
    .min(1)
    .max(24 * 3600),
});

/**
 * Extends the lease to now() + `leaseSeconds` if this attempt still holds it. Never waits on a
 * row lock: a row locked by another transaction comes back `row_locked` at once.
 */
export async function heartbeatIfLeaseHeld(
  executor: Executor,
  lease: LeaseRef,
  options: { leaseSeconds: number },
): Promise<HeartbeatOutcome> {
  parseInput('heartbeat', leaseSchema, lease);
  parseInput('heartbeat', heartbeatOptionsSchema, options);
  const rows = await run<HeartbeatRow>(
    executor,
    heartbeatStatement([lease.id], [lease.leaseToken], options.leaseSeconds),
  );
  return heartbeatOutcome(rows[0]);
}

/**
 * Gives the job back (graceful shutdown): `ready` again after `delayMs` (default 0). The
 * released attempt is not charged to the retry budget, the job's nor the handler's: the job's
 * `released` count grows by one and the budget is `attempts - released`, while the attempt
 * number (the fence) still only grows. Refused only when the lease is lost, never for the cap.
 */
export async function releaseIfLeaseHeld(
  executor: Executor,
  lease: LeaseRef,
  options: { delayMs?: number; reason?: string } = {},
): Promise<SettleOutcome> {
  parseInput('release', leaseSchema, lease);
  parseInput('release', z.object({ delayMs: z.number().min(0).optional(), reason: z.string().optional() }), options);
  const rows = await run<{ id: string }>(
    executor,
    releaseStatement({
      id: lease.id,
      token: lease.leaseToken,
      delaySeconds: (options.delayMs ?? 0) / 1000,
      reason: truncateError(options.reason ?? 'released by its worker'),
    }),
  );
  return rows.length === 1 ? APPLIED : LEASE_LOST;
}

/** A snooze settled, refused at the cap (nothing written: fail the attempt instead), or the lease lost. */
export type SnoozeOutcome =
  | { applied: true; snoozes: number; snoozedMs: number }
  | { applied: false; reason: 'snooze_cap'; snoozes: number; snoozedMs: number }
  | LeaseLost;

const snoozeSchema = z.strictObject({
  ms: z.int().min(1).max(MAX_SNOOZE_MS),
  cap: z.strictObject({ maxCount: z.int().min(0), maxTotalMs: z.number().min(0) }),
});

/**
 * Puts the job back to `ready` for `ms` without charging the attempt (docs/jobs.md, "Snooze"):
 * `released` grows, and the job's snooze counters, which the back-off exponent leaves out. The
 * cap (its kind's, DEFAULT_SNOOZE_CAP unless the handler says) is checked in the guarded row: a
 * snooze past it writes nothing and comes back `snooze_cap`.
 */
export async function snoozeIfLeaseHeld(
  executor: Executor,
  lease: LeaseRef,
  input: { ms: number; cap: { maxCount: number; maxTotalMs: number } },
): Promise<SnoozeOutcome> {
  parseInput('snooze', leaseSchema, lease);
  parseInput('snooze', snoozeSchema, input);
  const rows = await run<{ snoozed: number; held: unknown; counters: { snoozes: number; snoozedMs: number } | null }>(
    executor,
    snoozeStatement({ id: lease.id, token: lease.leaseToken, ms: input.ms, ...input.cap }),
  );
  const row = rows[0];
  const counters = { snoozes: Number(row?.counters?.snoozes ?? 0), snoozedMs: Number(row?.counters?.snoozedMs ?? 0) };
  if (row && Number(row.snoozed) === 1)
    return { applied: true, snoozes: counters.snoozes + 1, snoozedMs: counters.snoozedMs + input.ms };
  if (row && pgBool(row.held)) return { applied: false, reason: 'snooze_cap', ...counters };
  return LEASE_LOST;
}

/**
 * Extends many leases in one statement (a worker's periodic heartbeat for all its in-flight
 * jobs). Returns, in input order, which leases were renewed, which are held but were skipped
 * this round because another transaction had their row locked (`row_locked`: one foreign lock
 * must not hold up every other lease), and which were lost (reaped, cancelled, expired): those
 * attempts must stop and settle nothing.
 */
export async function heartbeatManyIfLeaseHeld(
  executor: Executor,
  leases: readonly LeaseRef[],
  options: { leaseSeconds: number },
): Promise<HeartbeatOutcome[]> {
  parseInput('heartbeatMany', z.array(leaseSchema).max(10_000), leases);
  parseInput('heartbeatMany', heartbeatOptionsSchema, options);
  if (leases.length === 0) return [];
  const rows = await run<HeartbeatRow>(
    executor,
    heartbeatStatement(
      leases.map((l) => l.id),
      leases.map((l) => l.leaseToken),
      options.leaseSeconds,
    ),
  );
  const byLease = new Map(rows.map((r) => [`${r.id}/${r.token}`, r]));
  return leases.map((l) => heartbeatOutcome(byLease.get(`${l.id}/${l.leaseToken}`)));
}

/** What a worker's heartbeat found for one of its attempts (workerHeartbeat). */
export interface WorkerBeatAttempt {
  /** The job still runs under this attempt's token. */
  running: boolean;
  /** Its claim is covered by the worker lease: renewed with it, no per-job heartbeat needed. */
  covered: boolean;
}

/** A worker heartbeat's outcome: the worker lease, and each attempt's, in input order. */
export interface WorkerBeat {
  /** The worker lease was renewed (or a new one started) to now + leaseSeconds. */
  renewed: boolean;
  /** The worker lease's deadline, and how long it is from the statement's own time. */
  leaseUntil: Date;
  leaseRemainingMs: number;
  attempts: WorkerBeatAttempt[];
  /** Claims detached as lost (`reconcile`): committed, but never known to the worker. */
  lostClaims: number;
}

interface WorkerBeatRow {
  id: string | null;
  token: string | null;
  running: boolean;
  covered: boolean;
  lease_until: PgTimestamp;
  remaining_ms: number;
  renewed: boolean;
  lost: number;
}

const workerBeatSchema = z.object({
  workerId: z.string().min(1).max(200),
  leaseSeconds: heartbeatOptionsSchema.shape.leaseSeconds,
  marginSeconds: z.number().min(0),
  liveSeconds: z.number().positive(),
  leases: z.array(leaseSchema).max(100_000),
  detach: z.array(uuidSchema).max(100_000),
  reconcile: z.object({ known: z.array(uuidSchema).max(100_000) }).optional(),
});

/**
 * Renews the worker lease of `workerId` (one write, whatever the number of jobs) and reports,
 * for each lease given, whether its job still runs under it and whether the worker lease covers
 * it (transitions/settle.ts, workerHeartbeatStatement, says when it does). Attempts not covered
 * are renewed per job with heartbeatManyIfLeaseHeld. Internal to the worker.
 */
export async function workerHeartbeat(
  executor: Executor,
  input: {
    workerId: string;
    leaseSeconds: number;
    marginSeconds: number;
    liveSeconds: number;
    leases: readonly LeaseRef[];
    detach?: readonly string[];
    /**
     * After a failed claim: detach this worker's covered claims whose lease passed and whose
     * token is none of `known` (every attempt the worker holds), as lost (workerHeartbeatStatement).
     */
    reconcile?: { known: readonly string[] } | undefined;
  },
): Promise<WorkerBeat> {
  const detach = input.detach ?? [];
  parseInput('workerHeartbeat', workerBeatSchema, { ...input, detach });
  const rows = await run<WorkerBeatRow>(
    executor,
    workerHeartbeatStatement({
      workerId: input.workerId,
      leaseSeconds: input.leaseSeconds,
      marginSeconds: input.marginSeconds,
      liveSeconds: input.liveSeconds,
      ids: input.leases.map((l) => l.id),
      tokens: input.leases.map((l) => l.leaseToken),
      detach: [...detach],
      reconcile: input.reconcile ? { known: [...input.reconcile.known] } : undefined,
    }),
  );
  const first = rows[0];
  if (!first) throw new Error('workerHeartbeat: the statement returned no row');
  const byLease = new Map(rows.map((r) => [`${r.id}/${r.token}`, r]));
  return {
    renewed: pgBool(first.renewed),
    leaseUntil: toDate(first.lease_until),
    leaseRemainingMs: Number(first.remaining_ms),
    lostClaims: Number(first.lost),
    attempts: input.leases.map((l) => {
      const row = byLease.get(`${l.id}/${l.leaseToken}`);
      return { running: pgBool(row?.running), covered: pgBool(row?.covered) };
    }),
  };
}
