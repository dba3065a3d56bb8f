/**
 * Operator actions: retry, cancel, pause, resume. Each is one call of its SECURITY DEFINER
 * function (drizzle/0011), one statement that changes the jobs and writes its `audit_log` row
 * together, so an action is never applied without its audit entry nor audited without being
 * applied; the dashboard's role may call them and write nothing else (db/roles.sql). Refusals
 * are audited too (outcome `refused`).
 *
 * Guards (every transition is a compare-and-set on what the operator saw):
 * - retry: only `dead` or `cancelled` jobs go back to `ready`;
 * - cancel: a `ready` job, or a `running` job only with the lease token the operator saw, so
 *   "the job changed since you looked" is a refusal and never cancels a newer attempt. The
 *   cancelled attempt learns it at its next heartbeat or settlement (`lease_lost`).
 * - bulk forms take an explicit, frozen id set of at most 1,000 jobs.
 */
import { sql, type SQL } from 'drizzle-orm';
import { z } from 'zod';
import type { JobState } from '../states.ts';
import { JOB_STATES, oneOf } from '../states.ts';
import { run, type Executor } from './executor.ts';
import { actorSchema, nameSchema, parseInput, textSchema, uuidSchema } from './validate.ts';

export const MAX_BULK_ACTION = 1000;

/**
 * Why a job was not changed: gone; no longer in the state the action takes; or, for a retry, its
 * uniqueness key is held by another job waiting or running (docs/jobs.md, "Uniqueness").
 */
export type RefusalReason = 'not_found' | 'changed_since_viewed' | 'unique_key_held';

export interface ActionRefusal {
  id: string;
  reason: RefusalReason;
  /** The job's state when the action was refused (absent when not found). */
  state?: JobState;
}

export interface ActionResult {
  requested: number;
  affected: number;
  applied: string[];
  refused: ActionRefusal[];
  auditId: number;
}

export type SingleActionOutcome =
  | { applied: true; auditId: number }
  | { applied: false; reason: RefusalReason; state?: JobState; auditId: number };

const actorFields = { actor: actorSchema, reason: textSchema(1000).optional() };

const bulkIds = z
  .array(uuidSchema)
  .min(1)
  .max(MAX_BULK_ACTION, `at most ${MAX_BULK_ACTION} jobs per action`)
  .refine((ids) => new Set(ids).size === ids.length, 'ids repeat');

const retryManySchema = z.strictObject({ ids: bulkIds, ...actorFields });
const retryOneSchema = z.strictObject({ id: uuidSchema, ...actorFields });
const cancelTarget = z.strictObject({ id: uuidSchema, leaseToken: uuidSchema.nullish() });
const cancelManySchema = z.strictObject({
  jobs: z
    .array(cancelTarget)
    .min(1)
    .max(MAX_BULK_ACTION, `at most ${MAX_BULK_ACTION} jobs per action`)
    .refine((jobs) => new Set(jobs.map((j) => j.id)).size === jobs.length, 'ids repeat'),
  ...actorFields,
});
const cancelOneSchema = z.strictObject({ id: uuidSchema, leaseToken: uuidSchema.nullish(), ...actorFields });

/** The action functions' rows: its audit row's id, the ids it changed, and each requested job as it was. */
type ActionRow =
  | { row_type: 'audit'; id: string | null; state: null }
  | { row_type: 'changed'; id: string; state: null }
  | { row_type: 'seen'; id: string; state: string }
  /** A retry refused because another job holds the job's uniqueness key (`state`: the key). */
  | { row_type: 'held'; id: string; state: string };

/**
 * Calls the action's SECURITY DEFINER function (drizzle/0011: `leasehold.operator_retry`,
 * `leasehold.operator_cancel`), which makes the guarded change and writes the audit row in one
 * statement, then reads the pre-action state of every requested id to explain refusals.
 */
async function actAndAudit(executor: Executor, ids: string[], call: SQL): Promise<ActionResult> {
  const rows = await run<ActionRow>(executor, sql`SELECT row_type, id, state FROM ${call}`);
  const changed = new Set<string>();
  const seen = new Map<string, JobState>();
  const held = new Set<string>();
  let auditId = Number.NaN;
  for (const r of rows) {
    if (r.row_type === 'changed') changed.add(r.id);
    else if (r.row_type === 'held') held.add(r.id);
    else if (r.row_type === 'seen') seen.set(r.id, oneOf(r.state, JOB_STATES, 'job state'));
    else auditId = Number(r.id);
  }
  const refused: ActionRefusal[] = ids
    .filter((id) => !changed.has(id))
    .map((id) => {
      const state = seen.get(id);
      if (state && held.has(id)) return { id, reason: 'unique_key_held', state };
      return state ? { id, reason: 'changed_since_viewed', state } : { id, reason: 'not_found' };
    });
  return {
    requested: ids.length,
    affected: changed.size,
    applied: ids.filter((id) => changed.has(id)),
    refused,
    auditId,
  };
}

function single(result: ActionResult): SingleActionOutcome {
  const refusal = result.refused[0];
  if (!refusal) return { applied: true, auditId: result.auditId };
  return {
    applied: false,
    reason: refusal.reason,
    ...(refusal.state ? { state: refusal.state } : {}),
    auditId: result.auditId,
  };
}

function retrySql(executor: Executor, action: string, actor: string, reason: string | undefined, ids: string[]) {
  // A retry gives the job at least one more attempt; a max age restarts from now.
  return actAndAudit(
    executor,
    ids,
    sql`leasehold.operator_retry(${action}, ${actor}, ${reason ?? null}::text, ${sql.param(ids)}::uuid[])`,
  );
}

/** dead or cancelled → ready. Refused (a value) when the job is in any other state. */
export async function retryIfTerminal(
  executor: Executor,
  input: { id: string; actor: string; reason?: string },
): Promise<SingleActionOutcome> {
  const { id, actor, reason } = parseInput('retry', retryOneSchema, input);
  return single(await retrySql(executor, 'retry', actor, reason, [id]));
}

/** Bulk retry over a frozen id set (at most 1,000); one audit row for the whole action. */
export async function retryManyIfTerminal(
  executor: Executor,
  input: { ids: string[]; actor: string; reason?: string },
): Promise<ActionResult> {
  const { ids, actor, reason } = parseInput('retryMany', retryManySchema, input);
  return retrySql(executor, 'bulk_retry', actor, reason, ids);
}

function cancelSql(
  executor: Executor,
  action: string,
  actor: string,
  reason: string | undefined,
  jobs: { id: string; leaseToken?: string | null | undefined }[],
) {
  const ids = jobs.map((j) => j.id);
  return actAndAudit(
    executor,
    ids,
    sql`leasehold.operator_cancel(${action}, ${actor}, ${reason ?? null}::text, ${sql.param(ids)}::uuid[],
                                  ${sql.param(jobs.map((j) => j.leaseToken ?? null))}::uuid[])`,
  );
}

/**
 * ready → cancelled; running → cancelled only when `leaseToken` is the token the operator saw
 * (otherwise refused as `changed_since_viewed`).
 */
export async function cancelIfUnchanged(
  executor: Executor,
  input: { id: string; leaseToken?: string | null; actor: string; reason?: string },
): Promise<SingleActionOutcome> {
  const { id, leaseToken, actor, reason } = parseInput('cancel', cancelOneSchema, input);
  return single(await cancelSql(executor, 'cancel', actor, reason, [{ id, leaseToken }]));
}

/** Bulk cancel over a frozen set (at most 1,000), each running job with the token seen. */
export async function cancelManyIfUnchanged(
  executor: Executor,
  input: { jobs: { id: string; leaseToken?: string | null }[]; actor: string; reason?: string },
): Promise<ActionResult> {
  const { jobs, actor, reason } = parseInput('cancelMany', cancelManySchema, input);
  return cancelSql(executor, 'bulk_cancel', actor, reason, jobs);
}

const queueActionSchema = z.strictObject({ queue: nameSchema, ...actorFields });

export type QueueActionOutcome = { applied: boolean; auditId: number };

async function setPaused(
  executor: Executor,
  operation: 'pause' | 'resume',
  input: unknown,
): Promise<QueueActionOutcome> {
  const { queue, actor, reason } = parseInput(operation, queueActionSchema, input);
  const rows = await run<{ audit_id: string; applied: boolean }>(
    executor,
    sql`SELECT audit_id, applied FROM leasehold.operator_set_paused(${operation}, ${queue}, ${actor}, ${reason ?? null}::text)`,
  );
  return { applied: rows[0]?.applied === true, auditId: Number(rows[0]?.audit_id) };
}

/** Stops claims from `queue` (jobs keep their place). Refused when already paused. */
export function pauseQueue(executor: Executor, input: { queue: string; actor: string; reason?: string }) {
  return setPaused(executor, 'pause', input);
}

/** Lets claims from `queue` start again. Refused when not paused. */
export function resumeQueue(executor: Executor, input: { queue: string; actor: string; reason?: string }) {
  return setPaused(executor, 'resume', input);
}
