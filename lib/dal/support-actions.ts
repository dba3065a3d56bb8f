import 'server-only';
/**
 * The support actions (docs/dashboard.md, "Support actions"): run a scheduled or retrying job
 * now, reschedule it, change a ready job's priority, re-run a done job (operator), and purge a
 * queue's old dead jobs (admin: a preview, then exactly its frozen set). Each authorizes by its
 * row in policy.ts, parses, calls db/queue/support-actions.ts (whose database function makes the
 * guarded change and writes its audit row) and returns a sentence. A job action carries what the
 * page saw (`seen`: state, attempts, updatedAt): a job that changed since is refused, as a value.
 */
import { z } from 'zod';
import {
  MAX_BULK_ACTION,
  MAX_RESCHEDULE_DAYS,
  purgeDeadJobs,
  rerunCopy,
  rescheduleIfUnchanged,
  runNowIfUnchanged,
  setPriorityIfUnchanged,
  type SupportOutcome,
} from '../../db/queue/index.ts';
import { nameSchema, uuidSchema } from '../../db/queue/validate.ts';
import { PURGE_COUNT_CAP, purgePreview } from '../../db/queries/support.ts';
import { JOB_STATES } from '../../db/states.ts';
import { database } from '../db.ts';
import type { ActionResultDTO, PurgePreviewDTO, SupportResultDTO } from '../dto.ts';
import { InputError } from '../errors.ts';
import { invalidateLive } from '../live-cache.ts';
import { purgeOutcomeMessage, type SupportAction, supportOutcomeMessage } from '../present.ts';
import { parse, reasonSchema } from './input.ts';
import { authorize } from './policy.ts';

const isoTime = z.iso.datetime({ offset: true, error: 'expected a date and time (ISO 8601)' });

const seenInput = z.strictObject({
  state: z.enum(JOB_STATES),
  attempts: z.number().int().min(0).max(1_000_000),
  updatedAt: isoTime,
});
const jobInput = z.strictObject({ id: uuidSchema, seen: seenInput, reason: reasonSchema.optional() });
const rescheduleInput = jobInput.extend({ runAt: isoTime });
const priorityInput = jobInput.extend({ priority: z.number().int().min(0).max(100) });

const DAY_MS = 86_400_000;

/** The reschedule's bound, said as the database says it (the database checks again, by its clock). */
export const RESCHEDULE_BOUND = `the new run time must be in the future and at most ${MAX_RESCHEDULE_DAYS} days from now`;

const withReason = (reason: string | undefined) => (reason ? { reason } : {});

/** The answer to a job page: applied, or refused as a value (the page shows it and refreshes). */
function answer(action: SupportAction, outcome: SupportOutcome): SupportResultDTO {
  return {
    ok: outcome.applied,
    message: supportOutcomeMessage(action, outcome),
    ...(outcome.applied ? {} : { refused: true }),
    ...(outcome.applied && outcome.copyId ? { copyId: outcome.copyId } : {}),
  };
}

export async function runJobNow(input: unknown): Promise<SupportResultDTO> {
  const user = await authorize('runJobNow');
  const { id, seen, reason } = parse(jobInput, input, 'run-now request');
  const outcome = await runNowIfUnchanged(database(), { id, seen, actor: user.email, ...withReason(reason) });
  invalidateLive('jobLive', 'overview');
  return answer('runNow', outcome);
}

export async function rescheduleJob(input: unknown): Promise<SupportResultDTO> {
  const user = await authorize('rescheduleJob');
  const { id, seen, runAt, reason } = parse(rescheduleInput, input, 'reschedule request');
  const at = new Date(runAt);
  // Said before the database is asked; its own check (statement time) is the one that holds.
  if (at.getTime() <= Date.now() || at.getTime() > Date.now() + MAX_RESCHEDULE_DAYS * DAY_MS) {
    throw new InputError(`Not rescheduled: ${RESCHEDULE_BOUND}, not ${runAt}. Nothing was changed.`);
  }
  const outcome = await rescheduleIfUnchanged(database(), {
    id,
    runAt: at,
    seen,
    actor: user.email,
    ...withReason(reason),
  });
  invalidateLive('jobLive', 'overview');
  return answer('reschedule', outcome);
}

export async function setJobPriority(input: unknown): Promise<SupportResultDTO> {
  const user = await authorize('setJobPriority');
  const { id, seen, priority, reason } = parse(priorityInput, input, 'priority request');
  const outcome = await setPriorityIfUnchanged(database(), {
    id,
    priority,
    seen,
    actor: user.email,
    ...withReason(reason),
  });
  invalidateLive('jobLive');
  return answer('priority', outcome);
}

/** A copy of a done job of a re-run-safe kind version; `copyId` names it (its page links back). */
export async function rerunJob(input: unknown): Promise<SupportResultDTO> {
  const user = await authorize('rerunJob');
  const { id, seen, reason } = parse(jobInput, input, 're-run request');
  const outcome = await rerunCopy(database(), { id, seen, actor: user.email, ...withReason(reason) });
  invalidateLive('jobLive', 'overview');
  return answer('rerun', outcome);
}

const purgeTarget = { queue: nameSchema, before: isoTime };
const previewInput = z.strictObject(purgeTarget);
const purgeInput = z.strictObject({
  ...purgeTarget,
  ids: z
    .array(uuidSchema)
    .min(1, 'no jobs selected')
    .max(MAX_BULK_ACTION, `at most ${MAX_BULK_ACTION} jobs in one purge`),
  confirm: z.literal(true, { error: 'confirm the purge first' }),
  reason: reasonSchema.optional(),
});

/** A date for a purge: not in the future (the database refuses one too). */
function purgeDate(before: string): Date {
  const at = new Date(before);
  if (at.getTime() > Date.now()) throw new InputError(`The date must not be in the future, not ${before}.`);
  return at;
}

/** Admin: how many dead jobs of the queue finished before the date, and the frozen set (≤ 1,000). */
export async function previewPurgeDead(input: unknown): Promise<PurgePreviewDTO> {
  await authorize('previewPurgeDead');
  const { queue, before } = parse(previewInput, input, 'purge request');
  const preview = await purgePreview(database(), queue, purgeDate(before), MAX_BULK_ACTION);
  return {
    queue,
    before,
    matched: Math.min(preview.matched, PURGE_COUNT_CAP),
    moreThanCounted: preview.matched > PURGE_COUNT_CAP,
    overCap: preview.matched > MAX_BULK_ACTION,
    cap: MAX_BULK_ACTION,
    ids: preview.ids,
  };
}

/** Admin: removes exactly the previewed dead jobs that are still dead and finished before the date. */
export async function purgeDead(input: unknown): Promise<ActionResultDTO> {
  const user = await authorize('purgeDead');
  const { queue, before, ids, reason } = parse(purgeInput, input, 'purge request');
  const result = await purgeDeadJobs(database(), {
    queue,
    before: purgeDate(before),
    ids,
    actor: user.email,
    ...withReason(reason),
  });
  invalidateLive('overview', 'failures');
  return { ok: result.purged > 0, message: purgeOutcomeMessage(queue, result.requested, result.purged) };
}
