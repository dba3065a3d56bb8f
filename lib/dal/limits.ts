import 'server-only';
/**
 * The limits as the dashboard sees them (db/queue/limits.ts, docs/flow-control.md): each limit's
 * declared, run-time and enforced maximum and rate, what runs, starts and waits under it, and its
 * pause; and an admin's run-time change of a limit's maximum or rate. The change goes through
 * setLimit, that is leasehold.set_limit, which writes it and its `set_limit` audit row in one
 * statement and refuses, writing nothing, what this layer refuses first (values out of range)
 * and what only the database knows (a limit no handler declares, live workers too old for it).
 */
import { z } from 'zod';
import { LeaseholdInputError, type LimitRate, listLimits, MAX_LIMIT, setLimit } from '../../db/queue/index.ts';
import { type LimitStatus, WAITING_COUNT_CAP } from '../../db/queue/limits.ts';
import { nameSchema } from '../../db/queue/validate.ts';
import { LIMIT_SCOPES } from '../../db/states.ts';
import { database } from '../db.ts';
import type { ActionResultDTO, LimitDTO, LimitsDTO } from '../dto.ts';
import { InputError } from '../errors.ts';
import { parseRate, rateText } from '../../db/queue/limit-rate.ts';
import { limitRefusedMessage, setLimitMessage } from '../present.ts';
import { parse, reasonSchema } from './input.ts';
import { authorize, permits } from './policy.ts';
import { scrubPatterns } from './scrub.ts';

const rateOrNull = (rate: LimitRate | null) => (rate === null ? null : rateText(rate));
const isoOrNull = (date: Date | null) => date?.toISOString() ?? null;

function limitDto(l: LimitStatus): LimitDTO {
  return {
    key: l.key,
    scope: l.scope,
    name: l.name,
    declared: { max: l.declared.max, rate: rateOrNull(l.declared.rate) },
    set: { max: l.set.max, rate: rateOrNull(l.set.rate) },
    enforced: { max: l.max, rate: rateOrNull(l.rate) },
    setBy: l.setBy,
    setAt: isoOrNull(l.setAt),
    running: l.running,
    started: l.started,
    nextStartAt: isoOrNull(l.nextStartAt),
    waiting: l.waiting,
    waitingCapped: l.waiting >= WAITING_COUNT_CAP,
    pausedUntil: isoOrNull(l.pausedUntil),
    // A handler's RateLimitedError words it, and may quote what it sent: the secret-looking pairs go.
    pausedReason: l.pausedReason === null ? null : scrubPatterns(l.pausedReason),
    kinds: l.kinds,
  };
}

/** Every limit, by key, with the change form for admins only. */
export async function getLimits(): Promise<LimitsDTO> {
  const user = await authorize('getLimits');
  const limits = await listLimits(database());
  return { limits: limits.map(limitDto), can: { set: permits(user, 'setLimitValues') } };
}

/**
 * A change as the page's form sends it: each value as typed (a number is taken too), empty or
 * null to clear the run-time value, absent to leave it as it is.
 */
const setInput = z.strictObject({
  scope: z.enum(LIMIT_SCOPES),
  name: nameSchema,
  max: z
    .union([z.number(), z.string().max(64)])
    .nullable()
    .optional(),
  rate: z.string().max(64).nullable().optional(),
  /** Lifts a RateLimitedError's pause. */
  resume: z.literal(true).optional(),
  reason: reasonSchema.optional(),
});

const MAX_TEXT = `a whole number from 1 to ${MAX_LIMIT.toLocaleString('en')}`;

/** The maximum typed, null to clear it, or a problem's sentence. */
function maxOf(value: number | string | null): number | null | { problem: string } {
  if (value === null) return null;
  const text = String(value).trim();
  if (text === '') return null;
  const max = Number(text);
  if (!/^\d+$/.test(text) || max < 1 || max > MAX_LIMIT) {
    return { problem: `the maximum must be ${MAX_TEXT} (empty clears it), not ${JSON.stringify(text)}` };
  }
  return max;
}

/** The rate typed (`100/1s`), null to clear it, or a problem's sentence. */
function rateOf(value: string | null): LimitRate | null | { problem: string } {
  const text = value?.trim() ?? '';
  if (text === '') return null;
  const rate = parseRate(text, 'the rate');
  return typeof rate === 'string' ? { problem: `${rate} (empty clears it)` } : rate;
}

const isProblem = (v: unknown): v is { problem: string } => typeof v === 'object' && v !== null && 'problem' in v;

/**
 * Admin: sets or clears a limit's run-time maximum, rate or both (audited as `set_limit`, the
 * actor the signed-in user). Bad input is refused with every problem in one sentence, before the
 * database is asked; the database's own refusals come back as sentences too. Nothing is written
 * in either case.
 */
export async function setLimitValues(input: unknown): Promise<ActionResultDTO> {
  const user = await authorize('setLimitValues');
  const parsed = parse(setInput, input, 'limit change');
  const key = `${parsed.scope}:${parsed.name}`;
  const max = parsed.max === undefined ? undefined : maxOf(parsed.max);
  const rate = parsed.rate === undefined ? undefined : rateOf(parsed.rate);
  const problems = [max, rate].filter(isProblem).map((p) => p.problem);
  if (max === undefined && rate === undefined && parsed.resume === undefined) {
    problems.push('nothing to change: give a maximum, a rate or both (empty clears one), or lift the pause');
  }
  if (isProblem(max) || isProblem(rate) || problems.length > 0)
    throw new InputError(limitRefusedMessage(key, problems));
  const reason = parsed.reason?.trim();
  try {
    const outcome = await setLimit(database(), {
      scope: parsed.scope,
      name: parsed.name,
      ...(max === undefined ? {} : { max }),
      ...(rate === undefined ? {} : { rate }),
      ...(parsed.resume ? { resume: true as const } : {}),
      actor: user.email,
      ...(reason ? { reason } : {}),
    });
    const changed = { max: max !== undefined, rate: rate !== undefined, resume: parsed.resume === true };
    return { ok: true, message: setLimitMessage(key, changed, outcome) };
  } catch (error) {
    if (error instanceof LeaseholdInputError) throw new InputError(limitRefusedMessage(key, error.problems));
    throw error;
  }
}
