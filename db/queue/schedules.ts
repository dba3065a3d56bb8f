/**
 * Recurring jobs (docs/scheduling.md): schedules declared in code (`defineSchedule`, declared by
 * each worker at start) or made at run time by admins (`createSchedule`…, audited), and the
 * workers' pass that enqueues their ticks.
 *
 * Invariants:
 * - a tick is enqueued at most once: the pass runs on a schedule's row locked by
 *   leasehold.due_schedules (FOR UPDATE SKIP LOCKED), leasehold.run_schedule_ticks enqueues only
 *   ticks after the row's `ticks_after` and moves it past them in the same transaction, and each
 *   tick's job has the key `leasehold:schedule:<name>@<tick>`, kept for the schedule's horizon;
 * - tick times come from the database's clock (the pass transaction's `now()`, from
 *   due_schedules), never a worker host's: a worker whose clock is an hour off enqueues the same ticks;
 * - cron expressions and time zones are croner's (seconds optional), never our own parser;
 * - every tick after `ticks_after` up to the database's now is handled by one pass: enqueued on
 *   time (within `missedAfterMs` of its time), or, when later, as the missed-tick policy says.
 */
import { Cron } from 'croner';
import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { DEFAULT_MAX_ATTEMPTS, MAX_PAYLOAD_BYTES } from '../schema.ts';
import { LeaseholdInputError } from './errors.ts';
import { run, toDate, type Executor } from './executor.ts';
import {
  checkPayload,
  contractGroup,
  isJobContract,
  storedPayload,
  type JobContract,
  type JobInput,
} from './job-contract.ts';
import { NAME_PATTERN } from './validate.ts';

/** A tick no worker enqueued within this long of its time is missed (default). */
export const DEFAULT_MISSED_AFTER_MS = 60_000;
/** At most this many ticks of a schedule are considered missed (and keep a dedupe key): the horizon. */
export const HORIZON_TICKS = 1000;
/** The longest default horizon (a daily schedule's missed ticks: the last 7 days). */
export const MAX_DEFAULT_HORIZON_MS = 7 * 86_400_000;
/** How many due schedules one pass takes. */
export const SCHEDULES_PER_PASS = 100;

/** What happens to ticks missed while no worker ran: none run, the newest runs, or the newest `each`. */
export type MissedPolicy = 'skip' | 'once' | { each: number };

/** A schedule's settings as the database keeps them (leasehold.schedule_settings). */
export interface ScheduleSettings {
  queue: string;
  kind: string;
  kind_version: number;
  payload: unknown;
  group_key: string | null;
  priority: number;
  max_attempts: number;
  cron: string;
  timezone: string;
  missed: 'skip' | 'once' | 'each';
  missed_each: number | null;
  missed_after_ms: number;
  horizon_ms: number;
  overlap: 'allow' | 'skip';
  jitter_ms: number;
  start_within_ms: number | null;
}

/** What defineSchedule takes. */
export interface ScheduleDefinition<Job extends JobContract> {
  /** The schedule's name (default: the job's kind); one schedule per name. */
  name?: string | undefined;
  job: Job;
  /** Five fields (minutes) or six (seconds first): `0 3 * * *`, `*\/10 * * * * *`. */
  cron: string;
  /** An IANA time zone the expression is read in (default `UTC`). */
  timezone?: string | undefined;
  payload: JobInput<Job>;
  /** Missed ticks (all workers down): `skip`, `once` (the default: the newest), or `{ each: N }`. */
  missed?: MissedPolicy | undefined;
  /** A tick not enqueued within this long of its time is missed (default 60 s). */
  missedAfterMs?: number | undefined;
  /** How far back missed ticks count, and how long a tick's key is kept (default: 1,000 ticks, at most 7 days). */
  horizonMs?: number | undefined;
  /** `skip`: pass a tick over while the previous tick's job has not ended (default `allow`). */
  overlap?: 'allow' | 'skip' | undefined;
  /** Each tick's job runs up to this many ms after its tick, at random (default 0). */
  jitterMs?: number | undefined;
  /** Discard a tick's job not started within this many ms of its tick (default: never). */
  startWithinMs?: number | undefined;
  queue?: string | undefined;
  priority?: number | undefined;
  maxAttempts?: number | undefined;
  /** The jobs' fair group (default: the job contract's, from the payload). */
  group?: string | undefined;
}

/** A schedule declared in code: give it to `createWorker({ schedules })`. */
export interface ScheduleDeclaration {
  readonly name: string;
  readonly settings: Readonly<ScheduleSettings>;
  /** The payload's check, when the job's schema is asynchronous (the worker awaits it at start). */
  readonly pending?: Promise<string[]>;
}

/** Whether `value` was made by defineSchedule (its name and settings). */
export function isScheduleDeclaration(value: unknown): value is ScheduleDeclaration {
  if (typeof value !== 'object' || value === null) return false;
  const settings: unknown = Reflect.get(value, 'settings');
  return (
    typeof Reflect.get(value, 'name') === 'string' &&
    typeof settings === 'object' &&
    settings !== null &&
    typeof Reflect.get(settings, 'cron') === 'string'
  );
}

/** A cron expression read by croner: 5 fields (seconds 0) or 6 (seconds first), in `timezone`. */
export function cronOf(expression: string, timezone: string): Cron {
  return new Cron(expression, { timezone, paused: true, mode: '5-or-6-parts' });
}

/** Why `expression` in `timezone` cannot be a schedule's, one line each (none: it can). */
export function cronProblems(expression: unknown, timezone: unknown): string[] {
  const problems: string[] = [];
  let zoneOk = false;
  if (typeof timezone !== 'string' || timezone.length === 0 || timezone.length > 64) {
    problems.push(`timezone: expected an IANA time zone such as Europe/Berlin or UTC, got ${show(timezone)}`);
  } else {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: timezone });
      zoneOk = true;
    } catch {
      problems.push(`timezone: ${show(timezone)} is not an IANA time zone (Europe/Berlin, America/New_York, UTC…)`);
    }
  }
  if (typeof expression !== 'string' || expression.trim().length === 0 || expression.length > 256) {
    problems.push(`cron: expected a cron expression of 5 or 6 fields such as "0 3 * * *", got ${show(expression)}`);
  } else if (zoneOk && typeof timezone === 'string') {
    try {
      if (cronOf(expression, timezone).nextRun(new Date(Date.UTC(2026, 0, 1))) === null) {
        problems.push(`cron: ${show(expression)} has no tick after 2026-01-01`);
      }
    } catch (error) {
      problems.push(
        `cron: ${show(expression)} is not a cron expression of 5 or 6 fields: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }
  return problems;
}

/** The gap between a cron expression's ticks, as the first two after 2026-01-05 show it. */
function periodMs(cron: Cron): number {
  const [a, b] = cron.nextRuns(2, new Date(Date.UTC(2026, 0, 5)));
  return a && b ? b.getTime() - a.getTime() : MAX_DEFAULT_HORIZON_MS;
}

/** The default horizon: 1,000 ticks, at least missedAfterMs, at most 7 days. */
export function defaultHorizonMs(cron: Cron, missedAfterMs: number): number {
  return Math.max(missedAfterMs, Math.min(HORIZON_TICKS * periodMs(cron), MAX_DEFAULT_HORIZON_MS));
}

/** A whole number from `min` to `max` (the schedule options' and the run-time input's). */
export const int = (min: number, max: number) => z.number().int().min(min).max(max);

/** The options every schedule has, however it is made (code, API, CLI, dashboard). */
export const optionsSchema = z.strictObject({
  cron: z.string(),
  timezone: z.string().default('UTC'),
  missed: z.union([z.enum(['skip', 'once']), z.strictObject({ each: int(1, 1000) })]).default('once'),
  missedAfterMs: int(1000, 86_400_000).default(DEFAULT_MISSED_AFTER_MS),
  horizonMs: int(1000, 31_536_000_000).optional(),
  overlap: z.enum(['allow', 'skip']).default('allow'),
  jitterMs: int(0, 3_600_000).default(0),
  startWithinMs: int(1000, 604_800_000).optional(),
  queue: z.string().regex(NAME_PATTERN, '1-128 of A-Z a-z 0-9 _ . : - (starting with a letter or digit)').optional(),
  priority: int(0, 100).default(0),
  maxAttempts: int(1, 1000).optional(),
  group: z.string().min(1).max(256).optional(),
});

export type Options = z.output<typeof optionsSchema>;

export function problemsOf(error: z.ZodError): string[] {
  return error.issues.map((issue) => `${issue.path.join('.') || 'input'}: ${issue.message}`);
}

/**
 * The settings of options already checked by optionsSchema, or the problems: a cron expression
 * and time zone croner reads, a horizon no shorter than missedAfterMs.
 */
export function settingsOf(
  o: Options,
  job: { kind: string; version: number; queue: string; payload: unknown; group: string | null; maxAttempts: number },
): ScheduleSettings | { problems: string[] } {
  const problems = cronProblems(o.cron, o.timezone);
  if (problems.length > 0) return { problems };
  const cron = cronOf(o.cron, o.timezone);
  const horizon = o.horizonMs ?? defaultHorizonMs(cron, o.missedAfterMs);
  if (horizon < o.missedAfterMs) {
    return { problems: [`horizonMs: must be at least missedAfterMs (${o.missedAfterMs}), got ${horizon}`] };
  }
  const bytes = Buffer.byteLength(JSON.stringify(job.payload) ?? '', 'utf8');
  if (bytes > MAX_PAYLOAD_BYTES)
    return { problems: [`payload: ${bytes} bytes of JSON, more than ${MAX_PAYLOAD_BYTES}`] };
  return {
    queue: o.queue ?? job.queue,
    kind: job.kind,
    kind_version: job.version,
    payload: job.payload,
    group_key: o.group ?? job.group,
    priority: o.priority,
    max_attempts: o.maxAttempts ?? job.maxAttempts,
    cron: o.cron,
    timezone: o.timezone,
    missed: typeof o.missed === 'string' ? o.missed : 'each',
    missed_each: typeof o.missed === 'string' ? null : o.missed.each,
    missed_after_ms: o.missedAfterMs,
    horizon_ms: horizon,
    overlap: o.overlap,
    jitter_ms: o.jitterMs,
    start_within_ms: o.startWithinMs ?? null,
  };
}

/**
 * A schedule declared beside its handler. Bad settings (a cron expression or time zone croner
 * does not read, a payload the job's schema refuses, a missed-tick count outside 1..1000) throw
 * LeaseholdInputError naming each, at import time.
 *
 * ```ts
 * export const nightly = defineSchedule({
 *   job: reportJob, cron: '0 3 * * *', timezone: 'Europe/Berlin', payload: { scope: 'all' },
 *   missed: 'once', overlap: 'skip',
 * });
 * ```
 */
export function defineSchedule<Job extends JobContract>(definition: ScheduleDefinition<Job>): ScheduleDeclaration {
  const input: Record<string, unknown> = typeof definition === 'object' && definition !== null ? { ...definition } : {};
  const { name: givenName, job, payload, ...rest } = input;
  const problems: string[] = [];
  if (!isJobContract(job)) problems.push('job: expected a job contract made by defineJob');
  const name =
    typeof givenName === 'string' ? givenName : givenName === undefined && isJobContract(job) ? job.kind : null;
  if (name === null || !NAME_PATTERN.test(name)) {
    problems.push(
      `name: expected 1-128 of A-Z a-z 0-9 _ . : - (starting with a letter or digit), got ${show(givenName)}`,
    );
  }
  const options = optionsSchema.safeParse(rest);
  if (!options.success) problems.push(...problemsOf(options.error));
  if (problems.length > 0 || name === null || !isJobContract(job) || !options.success) {
    throw new LeaseholdInputError('defineSchedule', problems);
  }
  const check = checkPayload(job.schema, payload);
  let stored: unknown = payload;
  let group: string | null = null;
  let pending: Promise<string[]> | undefined;
  if (check instanceof Promise) {
    pending = check.then((c) => ('problems' in c ? c.problems : []));
  } else if ('problems' in check) {
    throw new LeaseholdInputError('defineSchedule', check.problems);
  } else {
    const kept = storedPayload(job.schema, payload, check.value);
    if (kept instanceof Promise) pending = kept.then((k) => ('problems' in k ? k.problems : []));
    else if ('problems' in kept) throw new LeaseholdInputError('defineSchedule', kept.problems);
    else stored = kept.payload;
    const made = contractGroup(job, check.value, 'group', options.data.group);
    if ('problems' in made) throw new LeaseholdInputError('defineSchedule', made.problems);
    group = made.group ?? null;
  }
  const settings = settingsOf(options.data, {
    kind: job.kind,
    version: job.version,
    queue: job.queue,
    payload: stored,
    group,
    maxAttempts: DEFAULT_MAX_ATTEMPTS,
  });
  if ('problems' in settings) throw new LeaseholdInputError('defineSchedule', settings.problems);
  return Object.freeze({ name, settings: Object.freeze(settings), ...(pending ? { pending } : {}) });
}

/**
 * Declares the schedules of a worker's code (at its start): each takes the code's settings
 * unless an admin changed it at run time (until reset). Returns the names whose run-time
 * settings were kept.
 */
export async function declareSchedules(
  executor: Executor,
  declarations: readonly ScheduleDeclaration[],
): Promise<{ kept: string[] }> {
  if (declarations.length === 0) return { kept: [] };
  const names = new Set<string>();
  const problems: string[] = [];
  for (const d of declarations) {
    if (names.has(d.name)) problems.push(`schedules: two schedules are named ${d.name}`);
    names.add(d.name);
    for (const p of (await d.pending) ?? []) problems.push(`schedule ${d.name}: ${p}`);
  }
  if (problems.length > 0) throw new LeaseholdInputError('createWorker', problems);
  const specs = declarations.map((d) => ({ name: d.name, ...d.settings }));
  const rows = await run<{ name: string; applied: boolean }>(
    executor,
    sql`SELECT name, applied FROM leasehold.declare_schedules(${JSON.stringify(specs)}::jsonb)`,
  );
  return { kept: rows.filter((r) => !r.applied).map((r) => r.name) };
}

/** What one pass does with one schedule's ticks (planTicks). */
export interface TickPlan {
  /** The newest tick at or before now (ticks_after when there is none since). */
  through: Date;
  /** Ticks enqueued on time. */
  ticks: Date[];
  /** Missed ticks the policy enqueues all the same. */
  late: Date[];
  /** Missed ticks passed over, and the newest of them. */
  missedCount: number;
  missedLast: Date | null;
  /** The first tick after now. */
  next: Date;
}

/** A due schedule as leasehold.due_schedules returns it. */
export interface DueSchedule {
  name: string;
  cron: string;
  timezone: string;
  missed: 'skip' | 'once' | 'each';
  missedEach: number | null;
  missedAfterMs: number;
  horizonMs: number;
  ticksAfter: Date;
}

/**
 * The ticks of `s` after its `ticksAfter` up to `now` (the database's time), and what becomes
 * of each: on time (within missedAfterMs) they are enqueued; missed ones as the policy says.
 * Ticks older than the horizon are neither enqueued nor counted. Pure: touches no database.
 */
export function planTicks(s: DueSchedule, now: Date): TickPlan {
  const cron = cronOf(s.cron, s.timezone);
  const horizonStart = new Date(now.getTime() - s.horizonMs);
  const from = s.ticksAfter > horizonStart ? s.ticksAfter : horizonStart;
  const all: Date[] = [];
  // At most a horizon's worth (1,000 ticks by default); the cap stops a horizon set far past it.
  for (let t = cron.nextRun(from); t !== null && t <= now && all.length < 100_000; t = cron.nextRun(t)) all.push(t);
  const late = now.getTime() - s.missedAfterMs;
  const missed = all.filter((t) => t.getTime() < late);
  const ticks = all.filter((t) => t.getTime() >= late);
  const chosen = s.missed === 'skip' ? 0 : s.missed === 'once' ? 1 : (s.missedEach ?? 1);
  const lateTicks = missed.slice(Math.max(0, missed.length - chosen));
  const passed = missed.length - lateTicks.length;
  const through = all.at(-1) ?? s.ticksAfter;
  return {
    through,
    ticks,
    late: lateTicks,
    missedCount: passed,
    missedLast: passed > 0 ? missed[passed - 1]! : null,
    // After `through` too: a change committed after this pass's transaction began moved
    // ticksAfter past `now`. No tick ahead (a day of month that never comes): look again in a day.
    next: cron.nextRun(now > through ? now : through) ?? new Date(now.getTime() + 86_400_000),
  };
}

/** A tick a pass handled: its outcome and job. */
export interface TickOutcome {
  schedule: string;
  tickAt: Date;
  outcome: 'enqueued' | 'late' | 'overlap' | 'missed' | 'discarded';
  jobId: string | null;
}

interface Transactional {
  transaction<T>(work: (tx: Executor) => Promise<T>): Promise<T>;
}

/**
 * One pass: takes the due schedules no other worker holds, and enqueues their ticks. One
 * transaction: the ticks, their jobs and the schedules' new positions commit together or not
 * at all. A schedule whose expression croner no longer reads (a raw SQL write) is looked at
 * again in a minute, and reported in `unreadable`.
 */
export async function runDueSchedules(
  db: Transactional,
  limit = SCHEDULES_PER_PASS,
): Promise<{ ticks: TickOutcome[]; unreadable: { name: string; problem: string }[] }> {
  return db.transaction(async (tx) => {
    const due = await run<{
      db_now: unknown;
      name: string;
      cron: string;
      timezone: string;
      missed: 'skip' | 'once' | 'each';
      missed_each: number | null;
      missed_after_ms: number;
      horizon_ms: string | number;
      ticks_after: unknown;
    }>(
      tx,
      sql`SELECT db_now, name, cron, timezone, missed, missed_each, missed_after_ms, horizon_ms, ticks_after
          FROM leasehold.due_schedules(${limit})`,
    );
    const ticks: TickOutcome[] = [];
    const unreadable: { name: string; problem: string }[] = [];
    for (const row of due) {
      const now = toDate(row.db_now);
      const s: DueSchedule = {
        name: row.name,
        cron: row.cron,
        timezone: row.timezone,
        missed: row.missed,
        missedEach: row.missed_each,
        missedAfterMs: row.missed_after_ms,
        horizonMs: Number(row.horizon_ms),
        ticksAfter: toDate(row.ticks_after),
      };
      let plan: TickPlan;
      try {
        plan = planTicks(s, now);
      } catch (error) {
        unreadable.push({ name: s.name, problem: error instanceof Error ? error.message : String(error) });
        plan = {
          through: s.ticksAfter,
          ticks: [],
          late: [],
          missedCount: 0,
          missedLast: null,
          next: new Date(now.getTime() + 60_000),
        };
      }
      const handled = await run<{ tick_at: unknown; outcome: TickOutcome['outcome']; job_id: string | null }>(
        tx,
        sql`SELECT tick_at, outcome, job_id FROM leasehold.run_schedule_ticks(
              ${s.name}, ${s.ticksAfter.toISOString()}::timestamptz, ${plan.through.toISOString()}::timestamptz,
              ${sql.param(plan.ticks.map((t) => t.toISOString()))}::timestamptz[],
              ${sql.param(plan.late.map((t) => t.toISOString()))}::timestamptz[],
              ${plan.missedCount}::integer, ${plan.missedLast?.toISOString() ?? null}::timestamptz,
              ${plan.next.toISOString()}::timestamptz)`,
      );
      for (const h of handled) {
        ticks.push({ schedule: s.name, tickAt: toDate(h.tick_at), outcome: h.outcome, jobId: h.job_id });
      }
    }
    return { ticks, unreadable };
  });
}

/** A list of declarations made by defineSchedule, one per name (createWorker's `schedules`, a handlers file's). */
export function parseSchedules(value: unknown, problems: string[], where = 'schedules'): ScheduleDeclaration[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    problems.push(`${where}: an array of schedules made by defineSchedule, got ${show(value)}`);
    return [];
  }
  const out: ScheduleDeclaration[] = [];
  const names = new Set<string>();
  for (const [i, s] of value.entries()) {
    if (!isScheduleDeclaration(s)) {
      problems.push(`${where}[${i}]: not a schedule made by defineSchedule: ${show(s)}`);
    } else if (names.has(s.name)) {
      problems.push(`${where}[${i}]: a second schedule named ${s.name} (one schedule per name)`);
    } else {
      names.add(s.name);
      out.push(s);
    }
  }
  return out;
}

function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return String(value);
  return value === undefined ? 'nothing' : `an ${Array.isArray(value) ? 'array' : typeof value}`;
}
