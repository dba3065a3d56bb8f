/**
 * Schedules at run time (docs/scheduling.md): an admin's changes (the API, `leasehold schedules`,
 * the dashboard), each through leasehold.set_schedule with its audit row, and the reads the
 * dashboard and the CLI show. Checks what the database cannot: the cron expression and time zone
 * (croner), a kind some worker declared.
 */
import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { DEFAULT_MAX_ATTEMPTS } from '../schema.ts';
import { LeaseholdInputError } from './errors.ts';
import { run, toDate, toDateOrNull, type Executor } from './executor.ts';
import {
  cronOf,
  int,
  optionsSchema,
  problemsOf,
  settingsOf,
  type ScheduleSettings,
  type TickOutcome,
} from './schedules.ts';
import { NAME_PATTERN } from './validate.ts';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';

/** What an admin gives to create a schedule, or the fields to change (the kind's own settings by name). */
export const runtimeScheduleSchema = optionsSchema.extend({
  kind: z.string().regex(NAME_PATTERN, '1-128 of A-Z a-z 0-9 _ . : - (starting with a letter or digit)'),
  kindVersion: int(1, 1_000_000).default(1),
  payload: z.unknown().default({}),
});
export type RuntimeScheduleInput = z.input<typeof runtimeScheduleSchema>;

/** Who acts, and why (the audit row). */
export interface ScheduleActor {
  actor: string;
  reason?: string | null | undefined;
}

export type ScheduleAction = 'create' | 'change' | 'pause' | 'resume' | 'reset' | 'delete';

/** What a run-time change came to. */
export type ScheduleChange =
  | { verdict: 'applied'; auditId: string; before: unknown; after: unknown }
  | { verdict: 'exists' | 'not_found' | 'not_declared' };

/**
 * The settings of a run-time schedule, or the problems: its options, a cron expression and time
 * zone croner reads, a kind some worker has declared (the kinds registry), a JSON payload.
 */
export async function runtimeSettings(
  executor: Executor,
  input: unknown,
): Promise<{ settings: ScheduleSettings } | { problems: string[] }> {
  const parsed = runtimeScheduleSchema.safeParse(input);
  if (!parsed.success) return { problems: problemsOf(parsed.error) };
  const { kind, kindVersion, payload, ...options } = parsed.data;
  const problems: string[] = [];
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
    problems.push('payload: expected a JSON object');
  }
  const [known] = await run<{ queue: string | null; max_attempts: number | null; payload_schema: unknown }>(
    executor,
    sql`SELECT default_queue AS queue, max_attempts, payload_schema FROM leasehold.kinds
        WHERE kind = ${kind} AND version = ${kindVersion}`,
  );
  if (!known) {
    problems.push(
      `kind: no worker has declared kind ${kind} version ${kindVersion} (start a worker that runs it first)`,
    );
  } else if (problems.length === 0) {
    problems.push(...payloadProblems(known.payload_schema, payload));
  }
  if (problems.length > 0 || !known) return { problems };
  const settings = settingsOf(options, {
    kind,
    version: kindVersion,
    queue: known.queue ?? 'default',
    payload,
    group: null,
    maxAttempts: known.max_attempts ?? DEFAULT_MAX_ATTEMPTS,
  });
  return 'problems' in settings ? settings : { settings };
}

/** Creates a schedule at run time (an admin's; audited). Bad input: LeaseholdInputError, nothing written. */
export async function createSchedule(
  executor: Executor,
  name: string,
  input: RuntimeScheduleInput,
  who: ScheduleActor,
): Promise<ScheduleChange> {
  if (!NAME_PATTERN.test(name))
    throw new LeaseholdInputError('createSchedule', [`name: ${JSON.stringify(name)} is not a schedule name`]);
  const made = await runtimeSettings(executor, input);
  if ('problems' in made) throw new LeaseholdInputError('createSchedule', made.problems);
  return setSchedule(executor, 'create', name, made.settings, who);
}

/**
 * Changes a schedule at run time: the fields given replace its own, the others stay. From then
 * on the code's declaration does not apply to it until `resetSchedule`. A new cron expression or
 * time zone takes effect at its next tick, without a restart.
 */
export async function changeSchedule(
  executor: Executor,
  name: string,
  input: Partial<RuntimeScheduleInput>,
  who: ScheduleActor,
): Promise<ScheduleChange> {
  const current = await getSchedule(executor, name);
  if (!current) return { verdict: 'not_found' };
  const merged = {
    cron: current.cron,
    timezone: current.timezone,
    missed: current.missed === 'each' ? { each: current.missedEach ?? 1 } : current.missed,
    missedAfterMs: current.missedAfterMs,
    ...(input.cron !== undefined || input.timezone !== undefined || input.missedAfterMs !== undefined
      ? {}
      : { horizonMs: current.horizonMs }),
    overlap: current.overlap,
    jitterMs: current.jitterMs,
    ...(current.startWithinMs === null ? {} : { startWithinMs: current.startWithinMs }),
    queue: current.queue,
    priority: current.priority,
    maxAttempts: current.maxAttempts,
    ...(current.groupKey === null ? {} : { group: current.groupKey }),
    kind: current.kind,
    kindVersion: current.kindVersion,
    payload: current.payload,
    ...input,
  };
  const made = await runtimeSettings(executor, merged);
  if ('problems' in made) throw new LeaseholdInputError('changeSchedule', made.problems);
  return setSchedule(executor, 'change', name, made.settings, who);
}

/** Pauses a schedule: no tick is enqueued until it is resumed. */
export function pauseSchedule(executor: Executor, name: string, who: ScheduleActor): Promise<ScheduleChange> {
  return setSchedule(executor, 'pause', name, null, who);
}

/** Resumes a paused schedule from its next tick (the ticks of the pause are not run). */
export function resumeSchedule(executor: Executor, name: string, who: ScheduleActor): Promise<ScheduleChange> {
  return setSchedule(executor, 'resume', name, null, who);
}

/** Puts a schedule changed at run time back to what its code declares. */
export function resetSchedule(executor: Executor, name: string, who: ScheduleActor): Promise<ScheduleChange> {
  return setSchedule(executor, 'reset', name, null, who);
}

/**
 * Deletes a schedule and its ticks. One that code still declares comes back at the next worker
 * start that declares it: take it out of the code first, or pause it instead.
 */
export function deleteSchedule(executor: Executor, name: string, who: ScheduleActor): Promise<ScheduleChange> {
  return setSchedule(executor, 'delete', name, null, who);
}

async function setSchedule(
  executor: Executor,
  action: ScheduleAction,
  name: string,
  settings: ScheduleSettings | null,
  who: ScheduleActor,
): Promise<ScheduleChange> {
  const [row] = await run<{
    audit_id: string | null;
    verdict: 'applied' | 'exists' | 'not_found' | 'not_declared';
    before: unknown;
    after: unknown;
  }>(
    executor,
    sql`SELECT audit_id, verdict, before, after FROM leasehold.set_schedule(
          ${`${action}_schedule`}, ${name}, ${settings === null ? null : JSON.stringify(settings)}::jsonb,
          ${who.actor}, ${who.reason ?? null})`,
  );
  if (!row) throw new Error('Leasehold: set_schedule returned no row');
  if (row.verdict === 'applied') {
    return { verdict: 'applied', auditId: String(row.audit_id), before: row.before, after: row.after };
  }
  return { verdict: row.verdict };
}

// ---------------------------------------------------------------------------------------------
// Reads: the dashboard, the CLI.

/** A schedule as the dashboard and the CLI show it. */
export interface ScheduleView {
  name: string;
  queue: string;
  kind: string;
  kindVersion: number;
  payload: unknown;
  groupKey: string | null;
  priority: number;
  maxAttempts: number;
  cron: string;
  timezone: string;
  missed: 'skip' | 'once' | 'each';
  missedEach: number | null;
  missedAfterMs: number;
  horizonMs: number;
  overlap: 'allow' | 'skip';
  jitterMs: number;
  /** A tick's job not started within this many ms of its tick is discarded (null: never). */
  startWithinMs: number | null;
  paused: boolean;
  pausedReason: string | null;
  source: 'code' | 'runtime';
  overridden: boolean;
  declaredAt: Date | null;
  /** The first tick after the database's now (null while paused or unreadable). */
  nextTickAt: Date | null;
  /**
   * How long the schedule's next due tick has waited for a worker's pass: the database's now
   * less the next tick the last pass computed, 0 when none is due yet, when paused, or before
   * the first pass. Above a few seconds: no worker runs the scheduler (docs/scheduling.md).
   */
  overdueMs: number;
  /** The database's now less the last enqueued tick (null: none yet). */
  lastTickAgeMs: number | null;
  lastTickAt: Date | null;
  lastJobId: string | null;
  lastJobState: string | null;
}

const VIEW_COLUMNS = sql`s.name, s.queue, s.kind, s.kind_version, s.payload, s.group_key, s.priority, s.max_attempts,
  s.cron, s.timezone, s.missed, s.missed_each, s.missed_after_ms, s.horizon_ms, s.overlap, s.jitter_ms, s.start_within_ms, s.paused,
  s.paused_reason, s.source, s.overridden, s.declared_at, s.last_tick_at, s.last_job_id, j.state AS last_job_state,
  s.next_tick_at, statement_timestamp() AS db_now`;

/** A row of VIEW_COLUMNS: the settings (horizon_ms a bigint, text from the driver), the state, the last job's. */
type ViewRow = Omit<ScheduleSettings, 'horizon_ms'> & {
  name: string;
  horizon_ms: string | number;
  paused: boolean;
  paused_reason: string | null;
  source: ScheduleView['source'];
  overridden: boolean;
  declared_at: unknown;
  last_tick_at: unknown;
  last_job_id: string | null;
  last_job_state: string | null;
  next_tick_at: unknown;
  db_now: unknown;
};

function overdue(r: ViewRow): number {
  const due = toDateOrNull(r.next_tick_at);
  if (r.paused || due === null) return 0;
  return Math.max(0, toDate(r.db_now).getTime() - due.getTime());
}

function toView(r: ViewRow): ScheduleView {
  const lastTick = toDateOrNull(r.last_tick_at);
  let next: Date | null = null;
  if (!r.paused) {
    try {
      next = cronOf(r.cron, r.timezone).nextRun(toDate(r.db_now));
    } catch {
      next = null;
    }
  }
  return {
    name: r.name,
    queue: r.queue,
    kind: r.kind,
    kindVersion: r.kind_version,
    payload: r.payload,
    groupKey: r.group_key,
    priority: r.priority,
    maxAttempts: r.max_attempts,
    cron: r.cron,
    timezone: r.timezone,
    missed: r.missed,
    missedEach: r.missed_each,
    missedAfterMs: r.missed_after_ms,
    horizonMs: Number(r.horizon_ms),
    overlap: r.overlap,
    jitterMs: r.jitter_ms,
    startWithinMs: r.start_within_ms,
    paused: r.paused,
    pausedReason: r.paused_reason,
    source: r.source,
    overridden: r.overridden,
    declaredAt: toDateOrNull(r.declared_at),
    nextTickAt: next,
    overdueMs: overdue(r),
    lastTickAgeMs: lastTick === null ? null : Math.max(0, toDate(r.db_now).getTime() - lastTick.getTime()),
    lastTickAt: lastTick,
    lastJobId: r.last_job_id,
    lastJobState: r.last_job_state,
  };
}

/** Every schedule, by name, with its next and last ticks and its last job's state. */
export async function listSchedules(executor: Executor): Promise<ScheduleView[]> {
  const rows = await run<ViewRow>(
    executor,
    sql`SELECT ${VIEW_COLUMNS} FROM leasehold.schedules s LEFT JOIN leasehold.jobs j ON j.id = s.last_job_id ORDER BY s.name`,
  );
  return rows.map(toView);
}

/** One schedule, or null. */
export async function getSchedule(executor: Executor, name: string): Promise<ScheduleView | null> {
  const [row] = await run<ViewRow>(
    executor,
    sql`SELECT ${VIEW_COLUMNS} FROM leasehold.schedules s LEFT JOIN leasehold.jobs j ON j.id = s.last_job_id
        WHERE s.name = ${name}`,
  );
  return row ? toView(row) : null;
}

/** A schedule's recent ticks, newest first, with their jobs' states. */
export async function recentTicks(
  executor: Executor,
  name: string,
  limit = 50,
): Promise<(TickOutcome & { missedCount: number | null; at: Date; jobState: string | null })[]> {
  const rows = await run<{
    tick_at: unknown;
    outcome: TickOutcome['outcome'];
    job_id: string | null;
    missed_count: number | null;
    at: unknown;
    state: string | null;
  }>(
    executor,
    sql`SELECT t.tick_at, t.outcome, t.job_id, t.missed_count, t.at, j.state
        FROM leasehold.schedule_ticks t LEFT JOIN leasehold.jobs j ON j.id = t.job_id
        WHERE t.schedule = ${name} ORDER BY t.tick_at DESC LIMIT ${Math.min(Math.max(1, limit), 100)}`,
  );
  return rows.map((r) => ({
    schedule: name,
    tickAt: toDate(r.tick_at),
    outcome: r.outcome,
    jobId: r.job_id,
    missedCount: r.missed_count,
    at: toDate(r.at),
    jobState: r.state,
  }));
}

/**
 * Why `payload` does not fit the JSON Schema its kind's handler registered (its Standard
 * Schema's JSON side; ajv reads it), one line per place: `payload.scope: must be equal to one of
 * the allowed values`. None when it fits, or when the kind registered no schema (its handler's
 * schema then checks the payload when the job runs).
 */
export function payloadProblems(schema: unknown, payload: unknown): string[] {
  if (typeof schema !== 'object' || schema === null) return [];
  let check: ValidateFunction;
  try {
    check = new Ajv2020({ allErrors: true, strict: false }).compile(schema);
  } catch {
    return [];
  }
  if (check(payload)) return [];
  return (check.errors ?? []).map((e) => `payload${e.instancePath.replaceAll('/', '.')}: ${e.message ?? 'is refused'}`);
}
