/**
 * Backlog alerts (docs/operations.md, "Reading the health page"): per queue, a threshold for the
 * age of its oldest due ready job, for its dead jobs, and for its ready jobs of a kind no live
 * worker runs. An alert fires while the queue's figure is at or over its threshold.
 *
 * Thresholds come from two places: the configuration (LEASEHOLD_QUEUE_ALERTS, a JSON object of
 * queue name, or `*` for every queue, to its thresholds), and an admin's run-time setting
 * (leasehold.queue_alerts, written only by leasehold.set_queue_alert with its audit row). For
 * each queue and figure the run-time setting wins, then the queue's configured one, then `*`'s.
 * The overview marks a queue over a threshold; the metrics expose each threshold
 * (`leasehold_queue_alert_threshold`), which deploy/prometheus/leasehold-rules.yml compares with.
 */
import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { LeaseholdInputError } from './errors.ts';
import { run, toDate, type Executor, type PgTimestamp } from './executor.ts';
import { parseRetentionDuration } from './retention.ts';
import { actorSchema, nameSchema, parseInput, textSchema } from './validate.ts';

/** The figures a backlog alert watches: the oldest due ready job's age, the dead jobs, the jobs no live worker runs (the table's check lists them too). */
export const ALERT_FIGURES = ['oldest_ready_age_seconds', 'dead', 'waiting_for_kind'] as const;
export type AlertFigure = (typeof ALERT_FIGURES)[number];

/** The most a threshold may be (the table's check). */
export const MAX_ALERT_THRESHOLD = 1e12;

/** Each figure as a sentence names it, and the key the configuration uses for it. */
export const ALERT_FIGURE_TEXT: Record<AlertFigure, { key: string; text: string }> = {
  oldest_ready_age_seconds: { key: 'oldestReadyAge', text: 'oldest ready job’s age' },
  dead: { key: 'dead', text: 'dead jobs' },
  waiting_for_kind: { key: 'waitingForKind', text: 'jobs waiting for a kind no live worker runs' },
};

/** A threshold per figure (seconds for the age, counts for the others). */
export type AlertThresholds = Partial<Record<AlertFigure, number>>;

/**
 * A threshold as given: a positive number (seconds for the age), or for the age a duration
 * (`90s`, `5m`, `2h`, `1d`). Undefined when it is neither, or not more than 0.
 */
export function thresholdValue(figure: AlertFigure, value: unknown): number | undefined {
  const n =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && figure === 'oldest_ready_age_seconds'
        ? parseRetentionDuration(value)
        : typeof value === 'string' && /^\d+(\.\d+)?$/.test(value.trim())
          ? Number(value)
          : undefined;
  return n !== undefined && Number.isFinite(n) && n > 0 && n <= MAX_ALERT_THRESHOLD ? n : undefined;
}

const thresholdProblem = (figure: AlertFigure) =>
  figure === 'oldest_ready_age_seconds'
    ? 'expected a duration such as 90s, 5m, 2h or 1d, or seconds, more than 0'
    : `expected a count of at least 1, at most ${MAX_ALERT_THRESHOLD}`;

/**
 * LEASEHOLD_QUEUE_ALERTS, e.g. `{"*": {"oldestReadyAge": "5m", "dead": 100}, "emails":
 * {"oldestReadyAge": "30s", "waitingForKind": 1}}`: queue (or `*`) → thresholds. Empty or unset:
 * none. Throws a LeaseholdInputError naming each bad entry.
 */
export function parseAlertConfig(text: string | undefined): Map<string, AlertThresholds> {
  const config = new Map<string, AlertThresholds>();
  if (text === undefined || text.trim() === '') return config;
  const fail = (problems: string[]) => {
    throw new LeaseholdInputError('LEASEHOLD_QUEUE_ALERTS', problems);
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    fail(['expected a JSON object of queue names (or "*") to thresholds, e.g. {"*": {"oldestReadyAge": "5m"}}']);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return fail(['expected a JSON object of queue names (or "*") to thresholds']);
  }
  const keys = new Map(ALERT_FIGURES.map((f) => [ALERT_FIGURE_TEXT[f].key, f] as const));
  const problems: string[] = [];
  for (const [queue, given] of Object.entries(parsed)) {
    if (queue !== '*' && !nameSchema.safeParse(queue).success) problems.push(`${queue}: not a queue name`);
    if (typeof given !== 'object' || given === null || Array.isArray(given)) {
      problems.push(`${queue}: expected an object of ${[...keys.keys()].join(', ')}`);
      continue;
    }
    const thresholds: AlertThresholds = {};
    for (const [key, value] of Object.entries(given)) {
      const figure = keys.get(key);
      if (!figure) {
        problems.push(`${queue}.${key}: unknown (expected ${[...keys.keys()].join(', ')})`);
        continue;
      }
      const n = thresholdValue(figure, value);
      if (n === undefined) problems.push(`${queue}.${key}: ${JSON.stringify(value)}: ${thresholdProblem(figure)}`);
      else thresholds[figure] = n;
    }
    config.set(queue, thresholds);
  }
  if (problems.length > 0) fail(problems);
  return config;
}

/** An admin's run-time threshold, as stored. */
export interface StoredAlert {
  queue: string;
  alert: AlertFigure;
  threshold: number;
  setAt: Date;
  setBy: string;
}

export async function listQueueAlerts(executor: Executor): Promise<StoredAlert[]> {
  const rows = await run<{ queue: string; alert: AlertFigure; threshold: number; set_at: PgTimestamp; set_by: string }>(
    executor,
    sql`SELECT queue, alert, threshold, set_at, set_by FROM leasehold.queue_alerts ORDER BY queue, alert`,
  );
  return rows.map((r) => ({
    queue: r.queue,
    alert: r.alert,
    threshold: Number(r.threshold),
    setAt: toDate(r.set_at),
    setBy: r.set_by,
  }));
}

/** A queue's threshold in force for one figure, where it came from, and the figure now. */
export interface QueueAlert {
  queue: string;
  alert: AlertFigure;
  threshold: number;
  source: 'run time' | 'configuration';
  value: number;
  firing: boolean;
  /** Set when firing: `emails: oldest ready job’s age 7 min is at or over its threshold of 5 min`. */
  sentence: string | null;
}

/** The figures of one queue an alert watches (db/queries/overview.ts's QueueBacklog has them). */
export interface AlertFigures {
  queue: string;
  oldestReadyAgeSeconds: number | null;
  dead: number;
  waitingForKind: number;
}

const shown = (figure: AlertFigure, n: number) =>
  figure !== 'oldest_ready_age_seconds'
    ? n.toLocaleString('en-US')
    : n < 120
      ? `${Math.round(n)} s`
      : n < 3600
        ? `${Math.floor(n / 60)} min${Math.round(n % 60) > 0 ? ` ${Math.round(n % 60)} s` : ''}`
        : `${(n / 3600).toFixed(1)} h`;

/** Each queue's alerts in force, evaluated against its figures (run time over configuration over `*`). */
export function evaluateAlerts(
  queues: readonly AlertFigures[],
  config: ReadonlyMap<string, AlertThresholds>,
  stored: readonly StoredAlert[],
): QueueAlert[] {
  const runtime = new Map(stored.map((s) => [`${s.queue}\u0000${s.alert}`, s.threshold]));
  const out: QueueAlert[] = [];
  for (const q of queues) {
    for (const figure of ALERT_FIGURES) {
      const set = runtime.get(`${q.queue}\u0000${figure}`);
      const configured = config.get(q.queue)?.[figure] ?? config.get('*')?.[figure];
      const threshold = set ?? configured;
      if (threshold === undefined) continue;
      const value =
        figure === 'oldest_ready_age_seconds'
          ? (q.oldestReadyAgeSeconds ?? 0)
          : figure === 'dead'
            ? q.dead
            : q.waitingForKind;
      const firing = value >= threshold;
      out.push({
        queue: q.queue,
        alert: figure,
        threshold,
        source: set !== undefined ? 'run time' : 'configuration',
        value,
        firing,
        sentence: firing
          ? `${q.queue}: ${ALERT_FIGURE_TEXT[figure].text} ${shown(figure, value)} is at or over its threshold of ${shown(figure, threshold)}`
          : null,
      });
    }
  }
  return out;
}

const setSchema = z.strictObject({
  queue: nameSchema,
  alert: z.enum(ALERT_FIGURES),
  /** A positive number (seconds for the age) or, for the age, a duration; null clears the run-time threshold. */
  threshold: z.union([z.number(), z.string()]).nullable(),
  actor: actorSchema,
  reason: textSchema(1000).optional(),
});

/** What a change did: its audit row and the run-time threshold before and after (null: none). */
export interface QueueAlertOutcome {
  auditId: number;
  before: number | null;
  after: number | null;
}

/**
 * Admin: sets (or, with `threshold: null`, clears) a queue's run-time threshold for one figure,
 * audited as `set_queue_alert`. Refused, writing nothing: a threshold not more than 0 or not a
 * duration, and a queue that does not exist (no job, no queue row, no live worker serving it).
 */
export async function setQueueAlert(
  executor: Executor,
  input: { queue: string; alert: AlertFigure; threshold: number | string | null; actor: string; reason?: string },
): Promise<QueueAlertOutcome> {
  const given = parseInput('setQueueAlert', setSchema, input);
  const threshold = given.threshold === null ? null : thresholdValue(given.alert, given.threshold);
  if (threshold === undefined) {
    throw new LeaseholdInputError('setQueueAlert', [
      `threshold: ${JSON.stringify(given.threshold)}: ${thresholdProblem(given.alert)}`,
    ]);
  }
  try {
    const [row] = await run<{ audit_id: string; before: number | null; after: number | null }>(
      executor,
      sql`SELECT audit_id, before, after FROM leasehold.set_queue_alert(${given.queue}, ${given.alert},
            ${threshold}::float8, ${given.actor}, ${given.reason ?? null}::text)`,
    );
    return { auditId: Number(row!.audit_id), before: row!.before, after: row!.after };
  } catch (error) {
    // The function's own refusals (a queue that does not exist) are input errors: nothing was written.
    if (
      error instanceof Error &&
      'code' in error &&
      error.code === '22023' &&
      error.message.startsWith('leasehold: ')
    ) {
      throw new LeaseholdInputError('setQueueAlert', [error.message.replace(/^leasehold: /, '')]);
    }
    throw error;
  }
}
