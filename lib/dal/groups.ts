import 'server-only';
/**
 * A queue's fair groups as the dashboard sees them (db/queue/group-limits.ts,
 * docs/flow-control.md, "Per-group limits"): each group's waiting and running jobs, its oldest
 * waiting job's age, its maximum and its pause, the first 50 by age and the rest summed; an
 * admin's change of the default or one group's maximum, and an operator's pause or resume of one
 * group. Each change goes through leasehold.set_group_limit, which writes it and its audit row
 * in one statement; bad input is refused in a sentence before the database is asked, and the
 * database's refusals (live workers too old for it) come back as sentences; nothing is written.
 */
import { z } from 'zod';
import {
  LeaseholdInputError,
  listGroups,
  MAX_GROUP_LIMIT,
  pauseGroup,
  resumeGroup,
  setGroupLimit,
  type GroupLimitOutcome,
} from '../../db/queue/index.ts';
import { groupKeySchema, nameSchema } from '../../db/queue/validate.ts';
import { database } from '../db.ts';
import type { ActionResultDTO, QueueGroupsDTO } from '../dto.ts';
import { InputError } from '../errors.ts';
import { parse, reasonSchema } from './input.ts';
import { authorize, permits } from './policy.ts';
import { scrubPatterns } from './scrub.ts';

/** The groups listed by name on a queue's page; the rest are summed. */
export const GROUPS_LISTED = 50;

/** A queue's groups, with the change forms for those allowed. */
export async function getQueueGroups(input: unknown): Promise<QueueGroupsDTO> {
  const user = await authorize('getQueueGroups');
  const { queue } = parse(z.strictObject({ queue: nameSchema }), input, 'queue');
  const listed = await listGroups(database(), { queue, top: GROUPS_LISTED });
  return {
    ...listed,
    // An operator's words, shown to every viewer: the secret-looking pairs go.
    groups: listed.groups.map((g) => ({
      ...g,
      pausedReason: g.pausedReason === null ? null : scrubPatterns(g.pausedReason),
    })),
    can: {
      setMax: permits(user, 'setGroupMax'),
      pause: permits(user, 'setGroupPaused'),
      purgeDead: permits(user, 'previewPurgeDead') && permits(user, 'purgeDead'),
    },
  };
}

const maxInput = z.strictObject({
  queue: nameSchema,
  /** Absent: the default for every group of the queue. */
  group: groupKeySchema.optional(),
  /** As typed (a number is taken too); empty or null clears it. */
  max: z.union([z.number(), z.string().max(64)]).nullable(),
  reason: reasonSchema.optional(),
});

const whose = (queue: string, group: string | undefined) =>
  group === undefined ? `the default group maximum of queue ${queue}` : `group ${group} of queue ${queue}`;
const shown = (max: number | null) => (max === null ? 'none' : max.toLocaleString('en'));

/** The maximum typed, null to clear it, or a problem's sentence. */
function maxOf(value: number | string | null): number | null | { problem: string } {
  const text = value === null ? '' : String(value).trim();
  if (text === '') return null;
  const max = Number(text);
  if (!/^\d+$/.test(text) || max < 1 || max > MAX_GROUP_LIMIT) {
    return {
      problem: `the maximum must be a whole number from 1 to ${MAX_GROUP_LIMIT.toLocaleString('en')} (empty clears it), not ${JSON.stringify(text)}`,
    };
  }
  return max;
}

/** The database's refusal as the dashboard's, or the error as it is. */
function refused(what: string, error: unknown): unknown {
  return error instanceof LeaseholdInputError
    ? new InputError(`${what} was not changed: ${error.problems.join('; ')}.`)
    : error;
}

/** Admin: sets or clears the default maximum of a queue's groups, or one group's own (audited as `set_group_limit`). */
export async function setGroupMax(input: unknown): Promise<ActionResultDTO> {
  const user = await authorize('setGroupMax');
  const parsed = parse(maxInput, input, 'group limit');
  const what = whose(parsed.queue, parsed.group);
  const max = maxOf(parsed.max);
  if (typeof max === 'object' && max !== null) throw new InputError(`${what} was not changed: ${max.problem}.`);
  const reason = parsed.reason?.trim();
  let outcome: GroupLimitOutcome;
  try {
    outcome = await setGroupLimit(database(), {
      queue: parsed.queue,
      ...(parsed.group === undefined ? {} : { group: parsed.group }),
      max,
      actor: user.email,
      ...(reason ? { reason } : {}),
    });
  } catch (error) {
    throw refused(what, error);
  }
  const after =
    max === null
      ? parsed.group === undefined
        ? 'is cleared: its groups have no maximum but their own'
        : "is cleared: the queue's default applies"
      : `is ${shown(max)}`;
  return {
    ok: true,
    message: `Saved: the maximum of ${what} ${after} (was ${shown(outcome.before.max)}). The next claim of the queue uses it (recorded in the audit log).`,
  };
}

const pauseInput = z.strictObject({ queue: nameSchema, group: groupKeySchema, reason: reasonSchema.optional() });

/** Operator: pauses (`paused`) or resumes one group of a queue (audited as `pause_group`, `resume_group`). */
export async function setGroupPaused(input: unknown, paused: boolean): Promise<ActionResultDTO> {
  const user = await authorize('setGroupPaused');
  const { queue, group, reason } = parse(pauseInput, input, 'group');
  const what = whose(queue, group);
  let outcome: GroupLimitOutcome;
  try {
    const change = { queue, group, actor: user.email, ...(reason?.trim() ? { reason: reason.trim() } : {}) };
    outcome = await (paused ? pauseGroup : resumeGroup)(database(), change);
  } catch (error) {
    throw refused(what, error);
  }
  if (outcome.before.paused === paused) {
    return { ok: true, message: `${what} was already ${paused ? 'paused' : 'running'} (recorded in the audit log).` };
  }
  return {
    ok: true,
    message: paused
      ? `Paused ${what}: workers start none of its jobs until it is resumed; what runs finishes.`
      : `Resumed ${what}.`,
  };
}
