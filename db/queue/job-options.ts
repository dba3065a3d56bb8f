/**
 * A job's own settings and counters (`jobs.options`, drizzle/0023; docs/jobs.md): the timeout
 * and retry back-off asked for at enqueue, within the bounds its kind's handler declares
 * (`kinds.job_settings`), the uniqueness key it took, and its snooze counters. NULL for a job
 * that uses none of these, so a plain job carries nothing.
 */

/** `value[key]` when value is an object, else undefined (no import: the worker entry takes this file). */
function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? Reflect.get(value, key) : undefined;
}

/** A per-job retry back-off: attempt n waits about baseMs × 2^(n-1), never more than maxMs. */
export interface JobBackoff {
  baseMs: number;
  maxMs: number;
}

/** What `jobs.options` holds, read. */
export interface JobOptions {
  timeoutMs: number | null;
  backoff: JobBackoff | null;
  uniqueKey: string | null;
  /** Enqueued `awaitable`: its end wakes waitForJob (docs/jobs.md, "Results, progress and waiting"). */
  awaitable: boolean;
  /** Snoozes so far (docs/jobs.md, "Snooze"): not charged, left out of the back-off exponent. */
  snoozes: number;
  /** Their total length in milliseconds. */
  snoozedMs: number;
}

export const NO_OPTIONS: JobOptions = Object.freeze({
  timeoutMs: null,
  backoff: null,
  uniqueKey: null,
  awaitable: false,
  snoozes: 0,
  snoozedMs: 0,
});

const numberOr = (value: unknown, fallback: number): number =>
  typeof value === 'number' && Number.isFinite(value) ? value : fallback;

/** `jobs.options` as stored (an object from pg or JSON, NULL for none) read into JobOptions. */
export function readJobOptions(value: unknown): JobOptions {
  if (value === null || value === undefined) return NO_OPTIONS;
  const o: unknown = typeof value === 'string' ? JSON.parse(value) : value;
  if (typeof o !== 'object' || o === null) return NO_OPTIONS;
  const b = field(o, 'backoff');
  const backoff = { baseMs: numberOr(field(b, 'baseMs'), 0), maxMs: numberOr(field(b, 'maxMs'), 0) };
  const timeoutMs = field(o, 'timeoutMs');
  const uniqueKey = field(o, 'uniqueKey');
  return {
    timeoutMs: typeof timeoutMs === 'number' ? timeoutMs : null,
    backoff: backoff.baseMs > 0 && backoff.maxMs >= backoff.baseMs ? backoff : null,
    uniqueKey: typeof uniqueKey === 'string' ? uniqueKey : null,
    awaitable: field(o, 'awaitable') === true,
    snoozes: numberOr(field(o, 'snoozes'), 0),
    snoozedMs: numberOr(field(o, 'snoozedMs'), 0),
  };
}

/** An inclusive range a kind allows for a per-job setting. */
export type Bounds = readonly [min: number, max: number];

/**
 * What a kind's handler allows a job to ask for, and its snooze cap (`defineHandler(…, {
 * jobSettings })`, registered in `kinds.job_settings`). A setting without bounds may not be set
 * per job.
 */
export interface KindSettings {
  timeoutMs?: Bounds | undefined;
  backoffBaseMs?: Bounds | undefined;
  backoffMaxMs?: Bounds | undefined;
  /** Most snoozes of one job, and their most total time; DEFAULT_SNOOZE_CAP when not given. */
  snooze?: SnoozeCap | undefined;
}

export interface SnoozeCap {
  maxCount: number;
  maxTotalMs: number;
}

/** At most 100 snoozes and 7 days of them, per job, unless its handler says otherwise. */
export const DEFAULT_SNOOZE_CAP: SnoozeCap = Object.freeze({ maxCount: 100, maxTotalMs: 7 * 24 * 3600 * 1000 });

/** The longest one snooze may be: ten years (docs/jobs.md, "Snooze"). */
export const MAX_SNOOZE_MS = 10 * 365 * 24 * 3600 * 1000;

/** The longest per-job timeout (24 h) and back-off step (7 days) a kind may allow. */
export const MAX_JOB_TIMEOUT_MS = 24 * 3600 * 1000;
export const MAX_BACKOFF_MS = 7 * 24 * 3600 * 1000;

/** The problems of a job's timeout and back-off against its kind's settings (none: fine). */
export function settingsProblems(
  label: string,
  asked: { timeoutMs?: number | undefined; backoff?: JobBackoff | undefined },
  kind: KindSettings | null,
): string[] {
  const problems: string[] = [];
  const check = (name: string, value: number | undefined, bounds: Bounds | undefined) => {
    if (value === undefined) return;
    if (!bounds) {
      problems.push(
        `${label}${name}: ${kind ? 'the kind declares no bounds for it' : 'the kind has no registered settings (no worker of this kind version declared jobSettings)'}, so a job may not set its own`,
      );
    } else if (value < bounds[0] || value > bounds[1]) {
      problems.push(`${label}${name}: ${value} is outside the kind's bounds ${bounds[0]} to ${bounds[1]}`);
    }
  };
  check('timeoutMs', asked.timeoutMs, kind?.timeoutMs);
  check('backoff.baseMs', asked.backoff?.baseMs, kind?.backoffBaseMs);
  check('backoff.maxMs', asked.backoff?.maxMs, kind?.backoffMaxMs);
  return problems;
}

/** A value within bounds (the worker's guard when a kind's bounds changed after enqueue). */
export function clamp(value: number, bounds: Bounds | undefined): number {
  return bounds ? Math.min(Math.max(value, bounds[0]), bounds[1]) : value;
}

const boundsOf = (value: unknown): Bounds | undefined => {
  const min = field(value, '0');
  const max = field(value, '1');
  return Array.isArray(value) && typeof min === 'number' && typeof max === 'number' && min <= max
    ? [min, max]
    : undefined;
};

/** `kinds.job_settings` as stored, read (null: the kind declares none). */
export function readKindSettings(value: unknown): KindSettings | null {
  if (value === null || value === undefined || typeof value !== 'object') return null;
  const count = field(field(value, 'snooze'), 'maxCount');
  const total = field(field(value, 'snooze'), 'maxTotalMs');
  return {
    timeoutMs: boundsOf(field(value, 'timeoutMs')),
    backoffBaseMs: boundsOf(field(value, 'backoffBaseMs')),
    backoffMaxMs: boundsOf(field(value, 'backoffMaxMs')),
    snooze: typeof count === 'number' && typeof total === 'number' ? { maxCount: count, maxTotalMs: total } : undefined,
  };
}
