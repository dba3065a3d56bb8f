import 'server-only';
/**
 * Schedules as the dashboard sees them (db/queue/schedule-admin.ts, docs/scheduling.md): every
 * schedule with its next and last ticks and its last job's state; one schedule's settings, its
 * payload masked as a job of its kind version is masked on the job page (for every role), and
 * its recent ticks; an admin's pause, resume, and change of the cron expression or time zone.
 * Each change goes through leasehold.set_schedule, which writes it and its audit row in one
 * statement. Bad input is refused in a sentence (the queue's own checks: croner reads the
 * expression, the zone is IANA's, the kind is registered), and so is a schedule gone since the
 * page was read; nothing is written in either case.
 */
import { z } from 'zod';
import {
  changeSchedule,
  getSchedule,
  LeaseholdInputError,
  listSchedules,
  pauseSchedule,
  recentTicks,
  resumeSchedule,
  type ScheduleChange,
  type ScheduleView,
} from '../../db/queue/index.ts';
import { nameSchema } from '../../db/queue/validate.ts';
import { JOB_STATES, type JobState } from '../../db/states.ts';
import { database } from '../db.ts';
import type { ActionResultDTO, ScheduleDetailDTO, ScheduleDTO, SchedulesDTO } from '../dto.ts';
import { InputError } from '../errors.ts';
import {
  type ScheduleTiming,
  scheduleNotChangedMessage,
  schedulePauseMessage,
  schedulePayloadHiddenMessage,
  scheduleRefusedMessage,
  scheduleTimingMessage,
} from '../present.ts';
import { redact } from '../redaction.ts';
import { parse, reasonSchema } from './input.ts';
import { redactionRulesFor } from './kinds.ts';
import { iso } from './mappers.ts';
import { authorize, permits } from './policy.ts';
import { rulesLookup, type Scrub, scrubFor } from './scrub.ts';

/** The ticks a schedule's page lists, newest first. */
export const TICKS_SHOWN = 50;

/** A state the database names, as the closed list has it (null for none, or one it does not know). */
const jobState = (state: string | null): JobState | null => JOB_STATES.find((s) => s === state) ?? null;

/**
 * A schedule's row. The pause's reason is an admin's words, shown to every viewer: scrubbed of
 * the values its payload masks and of the secret-looking pairs (`scrub`).
 */
function scheduleDto(s: ScheduleView, scrub: Scrub): ScheduleDTO {
  return {
    name: s.name,
    kind: s.kind,
    kindVersion: s.kindVersion,
    queue: s.queue,
    cron: s.cron,
    timezone: s.timezone,
    nextTickAt: iso(s.nextTickAt),
    lastTickAt: iso(s.lastTickAt),
    lastJobId: s.lastJobId,
    lastJobState: jobState(s.lastJobState),
    paused: s.paused,
    pausedReason: s.pausedReason === null ? null : scrub(s.pausedReason),
    source: s.source,
    overridden: s.overridden,
  };
}

/** Every schedule, by name. */
export async function getSchedules(): Promise<SchedulesDTO> {
  await authorize('getSchedules');
  const all = await listSchedules(database());
  // Each schedule's scrub from its payload and its kind version's rules, looked up once per version.
  const rules = rulesLookup(database());
  const schedules = await Promise.all(
    all.map(async (s) => scheduleDto(s, scrubFor(s.payload, await rules(s.kind, s.kindVersion)))),
  );
  return { schedules };
}

/** One schedule with its settings, masked payload and recent ticks, and the change controls for those allowed; null when there is none of that name. */
export async function getScheduleDetail(input: unknown): Promise<ScheduleDetailDTO | null> {
  const user = await authorize('getScheduleDetail');
  const { name } = parse(z.strictObject({ name: nameSchema }), input, 'schedule name');
  const s = await getSchedule(database(), name);
  if (!s) return null;
  // The job page's masking: the paths the workers registered for the kind version, the admins'
  // and the configured defaults; a version no worker registered hides the payload whole.
  const paths = await redactionRulesFor(database(), s.kind, s.kindVersion);
  const masked = redact(s.payload, paths);
  const ticks = await recentTicks(database(), name, TICKS_SHOWN);
  return {
    schedule: {
      ...scheduleDto(s, scrubFor(s.payload, paths)),
      missed: s.missed,
      missedEach: s.missedEach,
      missedAfterMs: s.missedAfterMs,
      horizonMs: s.horizonMs,
      overlap: s.overlap,
      jitterMs: s.jitterMs,
      priority: s.priority,
      maxAttempts: s.maxAttempts,
      declaredAt: iso(s.declaredAt),
    },
    payload: masked.payload,
    redactedPaths: masked.redacted,
    payloadHidden: masked.hidden ? schedulePayloadHiddenMessage(s.kind, s.kindVersion) : null,
    ticks: ticks.map((t) => ({
      tickAt: t.tickAt.toISOString(),
      outcome: t.outcome,
      missedCount: t.missedCount,
      jobId: t.jobId,
      jobState: jobState(t.jobState),
    })),
    can: { pause: permits(user, 'setSchedulePaused'), change: permits(user, 'setScheduleCron') },
  };
}

const pauseInput = z.strictObject({ name: nameSchema, reason: reasonSchema.optional() });
/** What set_schedule says of the schedule before the change (its settings, `paused`, `overridden`). */
const pausedBefore = z.object({ paused: z.boolean() });

/** Admin: pauses (`paused`) or resumes a schedule (audited as `pause_schedule`, `resume_schedule`). */
export async function setSchedulePaused(input: unknown, paused: boolean): Promise<ActionResultDTO> {
  const user = await authorize('setSchedulePaused');
  const { name, reason } = parse(pauseInput, input, 'schedule');
  const note = reason?.trim();
  const change = await (paused ? pauseSchedule : resumeSchedule)(database(), name, {
    actor: user.email,
    ...(note ? { reason: note } : {}),
  });
  if (change.verdict !== 'applied') return { ok: false, message: scheduleRefusedMessage(name, change.verdict) };
  const before = pausedBefore.safeParse(change.before);
  return { ok: true, message: schedulePauseMessage(name, paused, before.success ? before.data.paused : null) };
}

/** A change as the page's dialog sends it: the fields changed, as typed (absent: left as they are). */
const timingInput = z.strictObject({
  name: nameSchema,
  cron: z.string().max(256).optional(),
  timezone: z.string().max(64).optional(),
  reason: reasonSchema.optional(),
});
const timingSchema = z.object({ cron: z.string(), timezone: z.string() });

/** The cron expression and time zone set_schedule reports (its `before` or `after`), else `fallback`. */
function timingOf(json: unknown, fallback: ScheduleTiming): ScheduleTiming {
  const read = timingSchema.safeParse(json);
  return read.success ? { cron: read.data.cron, timezone: read.data.timezone } : fallback;
}

/**
 * Admin: changes a schedule's cron expression, time zone or both (audited as `change_schedule`,
 * the actor the signed-in user). From then on the code's declaration does not apply to it until
 * it is reset. An expression croner does not read or a zone that is not IANA's is refused with
 * the queue's problems in one sentence; nothing is written.
 */
export async function setScheduleCron(input: unknown): Promise<ActionResultDTO> {
  const user = await authorize('setScheduleCron');
  const parsed = parse(timingInput, input, 'schedule change');
  const cron = parsed.cron?.trim();
  const timezone = parsed.timezone?.trim();
  if (cron === undefined && timezone === undefined) {
    throw new InputError(
      scheduleNotChangedMessage(parsed.name, ['nothing to change: give a cron expression, a time zone or both']),
    );
  }
  const current = await getSchedule(database(), parsed.name);
  if (!current) return { ok: false, message: scheduleRefusedMessage(parsed.name, 'not_found') };
  const reason = parsed.reason?.trim();
  let change: ScheduleChange;
  try {
    change = await changeSchedule(
      database(),
      parsed.name,
      { ...(cron === undefined ? {} : { cron }), ...(timezone === undefined ? {} : { timezone }) },
      { actor: user.email, ...(reason ? { reason } : {}) },
    );
  } catch (error) {
    if (error instanceof LeaseholdInputError)
      throw new InputError(scheduleNotChangedMessage(parsed.name, error.problems));
    throw error;
  }
  if (change.verdict !== 'applied') return { ok: false, message: scheduleRefusedMessage(parsed.name, change.verdict) };
  const was = { cron: current.cron, timezone: current.timezone };
  const now = { cron: cron ?? current.cron, timezone: timezone ?? current.timezone };
  return {
    ok: true,
    message: scheduleTimingMessage(
      parsed.name,
      timingOf(change.before, was),
      timingOf(change.after, now),
      current.source === 'code',
    ),
  };
}
