/**
 * The actions support staff ask for (issue 42): run a scheduled or retrying job now, reschedule
 * it, change a waiting job's priority, re-run a done job (a copy), purge a queue's old dead
 * jobs. Each is one call of its SECURITY DEFINER function (drizzle/0029), a row of EDGES
 * (transitions.ts), which makes the guarded change and writes its `audit_log` row together; the
 * dashboard's role may call them and write nothing else (db/roles.sql). Refusals are audited
 * (outcome `refused`) and answered as values; bad input (a run time in the past or more than 365
 * days ahead, a priority outside 0 to 100) is a LeaseholdInputError and writes nothing.
 *
 * Guards: a job action is a compare-and-set on what the operator saw (`seen`: the job's state,
 * attempts and updated_at), so "the job changed since you looked" (claimed, finished, moved by
 * someone else) is a refusal and never acts on a job the operator did not see. The functions
 * lock a ready job's ready row before the job, the claim's lock order.
 */
import { sql, type SQL } from 'drizzle-orm';
import { z } from 'zod';
import { JOB_STATES, oneOf, type JobState } from '../states.ts';
import { LeaseholdInputError } from './errors.ts';
import { run, type Executor } from './executor.ts';
import { MAX_BULK_ACTION } from './operator.ts';
import { actorSchema, nameSchema, parseInput, textSchema, uuidSchema } from './validate.ts';

/** How far ahead a reschedule may go (the function's bound: 365 days). */
export const MAX_RESCHEDULE_DAYS = 365;

/** Why a support action left the job alone. */
export type SupportRefusalReason =
  /** Gone (retention, a purge). */
  | 'not_found'
  /** Not in the state, attempts or update the operator saw. */
  | 'changed_since_viewed'
  /** Run now, reschedule: not a scheduled or retrying job; priority: not ready. */
  | 'not_waiting'
  /** Re-run: the job is not done. */
  | 'not_done'
  /** Re-run: its kind version is not registered re-run safe (kinds.rerun_safe). */
  | 'not_rerun_safe';

const REASONS = ['not_found', 'changed_since_viewed', 'not_waiting', 'not_done', 'not_rerun_safe'] as const;

export type SupportOutcome =
  | { applied: true; auditId: number; copyId?: string }
  | { applied: false; reason: SupportRefusalReason; state?: JobState; auditId: number };

/** What the operator's page showed of the job: the guard compares all three. */
export interface JobSeen {
  state: JobState;
  attempts: number;
  /** updated_at as the page had it (compared to the millisecond). */
  updatedAt: Date | string;
}

const seenSchema = z.strictObject({
  state: z.enum(JOB_STATES),
  attempts: z.number().int().min(0).max(1_000_000),
  updatedAt: z.union([z.date(), z.iso.datetime({ offset: true })]).transform((d) => new Date(d)),
});
const actor = { actor: actorSchema, reason: textSchema(1000).optional() };
const jobSchema = z.strictObject({ id: uuidSchema, seen: seenSchema, ...actor });
const rescheduleSchema = jobSchema.extend({ runAt: z.date() });
const prioritySchema = jobSchema.extend({ priority: z.number().int() });
const purgeSchema = z.strictObject({
  queue: nameSchema,
  before: z.date(),
  ids: z
    .array(uuidSchema)
    .min(1)
    .max(MAX_BULK_ACTION, `at most ${MAX_BULK_ACTION} jobs per purge`)
    .refine((ids) => new Set(ids).size === ids.length, 'ids repeat'),
  ...actor,
});

/** A function's own refusal of its input (22023 and a sentence): nothing was written. */
async function refusingInput<T>(operation: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (
      error instanceof Error &&
      'code' in error &&
      error.code === '22023' &&
      error.message.startsWith('leasehold: ')
    ) {
      throw new LeaseholdInputError(operation, [error.message.replace(/^leasehold: /, '')]);
    }
    throw error;
  }
}

type Row = { audit_id: string; verdict: string; state: string | null; copy_id?: string | null };

async function jobAction(executor: Executor, operation: string, call: SQL): Promise<SupportOutcome> {
  const [row] = await refusingInput(operation, () => run<Row>(executor, sql`SELECT * FROM ${call}`));
  if (!row) throw new Error(`leasehold: ${operation} returned no row`);
  const auditId = Number(row.audit_id);
  if (row.verdict === 'applied') return { applied: true, auditId, ...(row.copy_id ? { copyId: row.copy_id } : {}) };
  return {
    applied: false,
    reason: oneOf(row.verdict, REASONS, 'support action refusal'),
    ...(row.state ? { state: oneOf(row.state, JOB_STATES, 'job state') } : {}),
    auditId,
  };
}

const seenArgs = (seen: z.output<typeof seenSchema>) =>
  sql`${seen.state}::text, ${seen.attempts}::int, ${seen.updatedAt.toISOString()}::timestamptz`;

/** A scheduled or retrying job (ready, not due or attempted before) → due now, as seen. */
export function runNowIfUnchanged(
  executor: Executor,
  input: { id: string; seen: JobSeen; actor: string; reason?: string },
): Promise<SupportOutcome> {
  const { id, seen, actor, reason } = parseInput('runNow', jobSchema, input);
  return jobAction(
    executor,
    'runNow',
    sql`leasehold.operator_run_now(${actor}, ${reason ?? null}::text, ${id}::uuid, ${seenArgs(seen)})`,
  );
}

/** A scheduled or retrying job → waiting for `runAt` (in the future, at most 365 days ahead), as seen. */
export function rescheduleIfUnchanged(
  executor: Executor,
  input: { id: string; runAt: Date; seen: JobSeen; actor: string; reason?: string },
): Promise<SupportOutcome> {
  const { id, runAt, seen, actor, reason } = parseInput('reschedule', rescheduleSchema, input);
  return jobAction(
    executor,
    'reschedule',
    sql`leasehold.operator_reschedule(${actor}, ${reason ?? null}::text, ${id}::uuid,
          ${runAt.toISOString()}::timestamptz, ${seenArgs(seen)})`,
  );
}

/** A ready job's priority (0 to 100), its claim order moved with it (the queue's aging step), as seen. */
export function setPriorityIfUnchanged(
  executor: Executor,
  input: { id: string; priority: number; seen: JobSeen; actor: string; reason?: string },
): Promise<SupportOutcome> {
  const { id, priority, seen, actor, reason } = parseInput('setPriority', prioritySchema, input);
  return jobAction(
    executor,
    'setPriority',
    sql`leasehold.operator_set_priority(${actor}, ${reason ?? null}::text, ${id}::uuid, ${priority}::int, ${seenArgs(seen)})`,
  );
}

/**
 * A copy of a done job of a re-run-safe kind version, enqueued ready now (`copyId`; its
 * `rerun_of` the original). The done job itself is not changed.
 */
export function rerunCopy(
  executor: Executor,
  input: { id: string; seen: JobSeen; actor: string; reason?: string },
): Promise<SupportOutcome> {
  const { id, seen, actor, reason } = parseInput('rerun', jobSchema, input);
  return jobAction(
    executor,
    'rerun',
    sql`leasehold.operator_rerun(${actor}, ${reason ?? null}::text, ${id}::uuid, ${seenArgs(seen)})`,
  );
}

export interface PurgeResult {
  requested: number;
  purged: number;
  auditId: number;
}

/**
 * Removes exactly the previewed ids (at most 1,000) that are still dead jobs of `queue` finished
 * before `before`, with their attempts, results and progress; one audit row for the set.
 */
export async function purgeDeadJobs(
  executor: Executor,
  input: { queue: string; before: Date; ids: string[]; actor: string; reason?: string },
): Promise<PurgeResult> {
  const { queue, before, ids, actor, reason } = parseInput('purgeDead', purgeSchema, input);
  const [row] = await refusingInput('purgeDead', () =>
    run<{ audit_id: string; purged: number }>(
      executor,
      sql`SELECT audit_id, purged FROM leasehold.operator_purge_dead(${actor}, ${reason ?? null}::text, ${queue},
            ${before.toISOString()}::timestamptz, ${sql.param(ids)}::uuid[])`,
    ),
  );
  return { requested: ids.length, purged: row?.purged ?? 0, auditId: Number(row?.audit_id) };
}
