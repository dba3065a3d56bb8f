import 'server-only';
/**
 * Operator actions: retry, cancel, bulk preview and apply, pause and resume. Each authorizes,
 * parses, calls the guarded statement in db/queue (which writes its own audit row) and returns
 * a sentence. A refusal (the job changed since it was viewed) is a value, `ok: false`; bad
 * input the queue refuses after our parse (LeaseholdInputError) goes to lib/errors.ts as is.
 */
import { z } from 'zod';
import {
  cancelIfUnchanged,
  cancelManyIfUnchanged,
  MAX_BULK_ACTION,
  pauseQueue,
  resumeQueue,
  retryIfTerminal,
  retryManyIfTerminal,
} from '../../db/queue/index.ts';
import { nameSchema, uuidSchema } from '../../db/queue/validate.ts';
import {
  BULK_ACTIONS,
  failureGroupFilter,
  jobFilterSchema,
  previewForAction,
  previewIds,
} from '../../db/queries/jobs.ts';
import { database } from '../db.ts';
import type { ActionResultDTO, BulkPreviewDTO } from '../dto.ts';
import { invalidateLive } from '../live-cache.ts';
import { actionOutcomeMessage, bulkOutcomeMessage, queuePauseMessage } from '../present.ts';
import { parse, reasonSchema } from './input.ts';
import { authorize } from './policy.ts';
import { resolveSearch } from './search.ts';

const retryInput = z.strictObject({ id: uuidSchema, reason: reasonSchema.optional() });
const cancelInput = z.strictObject({
  id: uuidSchema,
  leaseToken: uuidSchema.nullish(),
  reason: reasonSchema.optional(),
});

export async function retryJob(input: unknown): Promise<ActionResultDTO> {
  const user = await authorize('retryJob');
  const { id, reason } = parse(retryInput, input, 'retry request');
  const outcome = await retryIfTerminal(database(), { id, actor: user.email, ...(reason ? { reason } : {}) });
  // The operator's own change shows at once, not after the live cache's freshness.
  invalidateLive('jobLive', 'overview', 'failures');
  return { ok: outcome.applied, message: actionOutcomeMessage('retry', outcome) };
}

export async function cancelJob(input: unknown): Promise<ActionResultDTO> {
  const user = await authorize('cancelJob');
  const { id, leaseToken, reason } = parse(cancelInput, input, 'cancel request');
  const outcome = await cancelIfUnchanged(database(), {
    id,
    leaseToken: leaseToken ?? null,
    actor: user.email,
    ...(reason ? { reason } : {}),
  });
  invalidateLive('jobLive', 'overview', 'failures');
  return { ok: outcome.applied, message: actionOutcomeMessage('cancel', outcome) };
}

const bulkFilterInput = z.strictObject({ action: z.enum(BULK_ACTIONS), filter: jobFilterSchema });

/** Admin: how many jobs a bulk action by filter would touch, and the frozen id set (≤ 1,000). */
export async function previewBulk(input: unknown): Promise<BulkPreviewDTO> {
  const user = await authorize('previewBulk');
  const { action, filter } = parse(bulkFilterInput, input, 'bulk request');
  // A payload search's filter resolves as the list's does (an admin's: nothing is masked).
  const { search } = await resolveSearch(user, filter);
  const preview = await previewForAction(database(), action, filter, MAX_BULK_ACTION, search);
  return { action, matched: preview.total, overCap: preview.overCap, cap: MAX_BULK_ACTION, jobs: preview.jobs };
}

const groupInput = z.strictObject({ failureClass: z.string().max(40), fingerprint: z.string().max(400) });

/** Admin: the failure group's dead jobs as a frozen retry set. */
export async function previewFailureGroup(input: unknown): Promise<BulkPreviewDTO> {
  await authorize('previewFailureGroup');
  const { failureClass, fingerprint } = parse(groupInput, input, 'group');
  const preview = await previewIds(database(), failureGroupFilter(failureClass, fingerprint), MAX_BULK_ACTION);
  return {
    action: 'retry',
    matched: preview.total,
    overCap: preview.overCap,
    cap: MAX_BULK_ACTION,
    jobs: preview.jobs,
  };
}

const bulkApplyInput = z.strictObject({
  action: z.enum(BULK_ACTIONS),
  jobs: z
    .array(z.strictObject({ id: uuidSchema, leaseToken: uuidSchema.nullish() }))
    .min(1, 'no jobs selected')
    .max(MAX_BULK_ACTION, `at most ${MAX_BULK_ACTION} jobs in one bulk action`),
  confirm: z.literal(true, { error: 'confirm the bulk action first' }),
  reason: reasonSchema.optional(),
});

/** Admin: applies a bulk action to exactly the previewed jobs, each through the guarded SQL. */
export async function applyBulk(input: unknown): Promise<ActionResultDTO> {
  const user = await authorize('applyBulk');
  const { action, jobs, reason } = parse(bulkApplyInput, input, 'bulk request');
  const result =
    action === 'retry'
      ? await retryManyIfTerminal(database(), {
          ids: jobs.map((j) => j.id),
          actor: user.email,
          ...(reason ? { reason } : {}),
        })
      : await cancelManyIfUnchanged(database(), { jobs, actor: user.email, ...(reason ? { reason } : {}) });
  invalidateLive('jobLive', 'overview', 'failures');
  return { ok: result.affected > 0, message: bulkOutcomeMessage(action, result) };
}

const queueInput = z.strictObject({ queue: nameSchema, reason: reasonSchema.optional() });

/** Admin: pauses (`paused`) or resumes a queue, with the confirm dialog's optional reason; refused when it already is that way. */
export async function setQueuePaused(input: unknown, paused: boolean): Promise<ActionResultDTO> {
  const user = await authorize('setQueuePaused');
  const { queue, reason } = parse(queueInput, input, 'queue');
  const outcome = await (paused ? pauseQueue : resumeQueue)(database(), {
    queue,
    actor: user.email,
    ...(reason ? { reason } : {}),
  });
  invalidateLive('overview');
  return { ok: outcome.applied, message: queuePauseMessage(queue, paused, outcome.applied) };
}
