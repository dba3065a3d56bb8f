/**
 * Retention: terminal jobs leave the hot table after configurable ages, in bounded batches
 * (short statements, rows another cleaner holds are skipped). Attempt history and idempotency
 * keys keep their own windows; a key is dropped only once its job is gone too, so a key never
 * stops deduplicating while its job still exists.
 *
 * The windows are settings (docs/operations.md, "Retention"): `done`, `dead` and `cancelled`
 * per terminal state and `attempts` for the history, each with a default (1 d, 14 d, 7 d,
 * 14 d), and per queue where a queue overrides a state's window. The worker's flags and
 * environment (`--retention-done 3d`, workers/config.ts) and createWorker's `retention` option
 * both arrive here as RetentionOptions, checked by one schema.
 */
import { sql } from 'drizzle-orm';
import { TERMINAL_STATES } from '../states.ts';
import { z } from 'zod';
import { run, type Executor } from './executor.ts';
import { NAME_PATTERN, parseInput } from './validate.ts';

const DAY = 24 * 3600;
/**
 * The per-minute rollup is kept 7 days: the overview's windows reach a day back, and the history
 * (db/queue/queue-history.ts) recounts its minutes from it.
 */
export const ROLLUP_KEPT_SECONDS = 7 * DAY;

/** Audit rows are kept at least this long (leasehold.remove_old_audit refuses less) … */
export const MIN_AUDIT_DAYS = 90;
/** … and this long by default. */
export const DEFAULT_AUDIT_DAYS = 400;

/** The longest window: a hundred years. */
export const MAX_RETENTION_SECONDS = 100 * 365 * DAY;

const seconds = z.number().min(0).max(MAX_RETENTION_SECONDS);

/** The windows when no setting names them. */
export const DEFAULT_RETENTION = Object.freeze({
  doneAfterSeconds: 1 * DAY,
  deadAfterSeconds: 14 * DAY,
  cancelledAfterSeconds: 7 * DAY,
  attemptsAfterSeconds: 14 * DAY,
});

/** A queue's own windows: each state it names replaces the default for its jobs. */
const queueWindowsSchema = z.strictObject({
  doneAfterSeconds: seconds.optional(),
  deadAfterSeconds: seconds.optional(),
  cancelledAfterSeconds: seconds.optional(),
});

/** Most queues with windows of their own (each is a CASE arm in the statement). */
export const MAX_RETENTION_QUEUES = 100;

const retentionSchema = z.strictObject({
  doneAfterSeconds: seconds.default(DEFAULT_RETENTION.doneAfterSeconds),
  deadAfterSeconds: seconds.default(DEFAULT_RETENTION.deadAfterSeconds),
  cancelledAfterSeconds: seconds.default(DEFAULT_RETENTION.cancelledAfterSeconds),
  attemptsAfterSeconds: seconds.default(DEFAULT_RETENTION.attemptsAfterSeconds),
  /** Per queue, the windows that differ from the ones above: `{ audit: { deadAfterSeconds: 90 * 86400 } }`. */
  queues: z
    .record(z.string().regex(NAME_PATTERN, 'not a queue name'), queueWindowsSchema)
    .refine((q) => Object.keys(q).length <= MAX_RETENTION_QUEUES, `at most ${MAX_RETENTION_QUEUES} queues`)
    .default({}),
  /**
   * Audit rows older than this go (removeOldAudit); never fewer than 90 days (the database
   * function refuses it too), 400 by default.
   */
  auditAfterSeconds: z
    .number()
    .min(MIN_AUDIT_DAYS * DAY, `audit rows are kept at least ${MIN_AUDIT_DAYS} days`)
    .max(MAX_RETENTION_SECONDS)
    .default(DEFAULT_AUDIT_DAYS * DAY),
  /** Most rows removed per call for each terminal state, attempt history, keys and audit rows. */
  limit: z.int().min(1).max(100_000).default(1000),
});

/** Checks retention settings without running anything (the worker does at start): the problems, one line each. */
export function retentionProblems(options: unknown, prefix = 'retention'): string[] {
  const result = retentionSchema.safeParse(options ?? {});
  if (result.success) return [];
  return result.error.issues.map((i) => `${[prefix, ...i.path.map(String)].join('.')}: ${i.message}`);
}

/** `30s`, `15m`, `36h`, `7d` (or `0`): a retention window in seconds, or undefined when it is none of these. */
export function parseRetentionDuration(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)(s|m|h|d)$/.exec(text.trim());
  if (!match) return text.trim() === '0' ? 0 : undefined;
  const unit = { s: 1, m: 60, h: 3600, d: DAY }[match[2] as 's' | 'm' | 'h' | 'd'];
  return Math.round(Number(match[1]) * unit);
}

export type RetentionOptions = z.input<typeof retentionSchema>;

export interface RetentionResult {
  jobs: number;
  attempts: number;
  dedupeKeys: number;
}

/** Removes one bounded batch of expired history. Call again while any count equals `limit`. */
export async function removeExpiredHistory(
  executor: Executor,
  options: RetentionOptions = {},
): Promise<RetentionResult> {
  const o = parseInput('retention', retentionSchema, options);
  const age = (seconds: number) => sql`statement_timestamp() - make_interval(secs => ${seconds}::float8)`;
  const overrides = Object.entries(o.queues);
  // A state's cutoff: the default's, or a CASE on the queue when some queue has its own.
  const cutoff = (key: 'doneAfterSeconds' | 'deadAfterSeconds' | 'cancelledAfterSeconds') => {
    const arms = overrides.flatMap(([queue, windows]) => {
      const own = windows[key];
      return own === undefined ? [] : [sql`WHEN ${queue} THEN ${age(own)}`];
    });
    return arms.length === 0 ? age(o[key]) : sql`CASE queue ${sql.join(arms, sql` `)} ELSE ${age(o[key])} END`;
  };
  const oldest = Math.min(
    o.doneAfterSeconds,
    o.deadAfterSeconds,
    o.cancelledAfterSeconds,
    ...overrides
      .flatMap(([, w]) => [w.doneAfterSeconds, w.deadAfterSeconds, w.cancelledAfterSeconds])
      .filter((n) => n !== undefined),
  );
  const rows = await run<{ jobs: number; attempts: number; dedupe_keys: number }>(
    executor,
    sql`
    WITH old_jobs AS (
      -- No index names state or finished_at (they would stop the claim and the acknowledgement
      -- from being HOT updates), so this walks jobs_created_idx in creation order up to the
      -- shortest window's cutoff: a job finished before a cutoff was created before it.
      SELECT id FROM leasehold.jobs
      WHERE created_at < ${age(oldest)}
        AND ((state = 'done' AND finished_at < ${cutoff('doneAfterSeconds')})
          OR (state = 'dead' AND finished_at < ${cutoff('deadAfterSeconds')})
          OR (state = 'cancelled' AND finished_at < ${cutoff('cancelledAfterSeconds')}))
      ORDER BY created_at
      LIMIT ${o.limit}
      FOR UPDATE SKIP LOCKED
    ),
    removed_jobs AS (
      DELETE FROM leasehold.jobs j USING old_jobs o
      WHERE j.id = o.id AND j.state IN (${sql.raw(TERMINAL_STATES.map((t) => `'${t}'`).join(', '))})
      RETURNING j.id, j.idempotency_key, j.options->>'uniqueKey' AS unique_key
    ),
    removed_results AS (DELETE FROM leasehold.job_results x USING removed_jobs r WHERE x.job_id = r.id RETURNING 1),
    removed_progress AS (DELETE FROM leasehold.job_progress x USING removed_jobs r WHERE x.job_id = r.id RETURNING 1),
    removed_unique_keys AS (
      -- A uniqueness key goes with its holder (a key handed on to a newer job meanwhile stays).
      DELETE FROM leasehold.unique_keys u USING removed_jobs r
      WHERE r.unique_key IS NOT NULL AND u.key = r.unique_key AND u.job_id = r.id
      RETURNING 1
    ),
    old_attempts AS (
      SELECT job_id, attempt, lease_token FROM leasehold.job_attempts
      WHERE ended_at < ${age(o.attemptsAfterSeconds)}
      ORDER BY ended_at
      LIMIT ${o.limit}
    ),
    removed_attempts AS (
      -- By the whole primary key: an id reused after retention has a history of its own, with
      -- the same attempt numbers, that must stay.
      DELETE FROM leasehold.job_attempts a USING old_attempts o
      WHERE a.job_id = o.job_id AND a.attempt = o.attempt AND a.lease_token = o.lease_token
      RETURNING 1
    ),
    old_keys AS (
      -- A key goes once its window ended and its own job (its id carrying this key: not a
      -- newer job that reuses the id) is gone.
      SELECT d.key FROM leasehold.dedupe_keys d
      WHERE d.expires_at < statement_timestamp()
        AND NOT EXISTS (SELECT 1 FROM leasehold.jobs j WHERE j.id = d.job_id AND j.idempotency_key = d.key)
        AND NOT EXISTS (SELECT 1 FROM removed_jobs r WHERE r.id = d.job_id AND r.idempotency_key = d.key)
      ORDER BY d.expires_at
      LIMIT ${o.limit}
    ),
    removed_keys AS (
      DELETE FROM leasehold.dedupe_keys d USING old_keys o WHERE d.key = o.key AND d.expires_at < statement_timestamp() RETURNING 1
    ),
    removed_rollup AS (
      DELETE FROM leasehold.finished_rollup WHERE minute < statement_timestamp() - make_interval(secs => ${ROLLUP_KEPT_SECONDS}::float8)
      RETURNING 1
    )
    SELECT (SELECT count(*) FROM removed_jobs)::int AS jobs,
           (SELECT count(*) FROM removed_attempts)::int AS attempts,
           (SELECT count(*) FROM removed_keys)::int AS dedupe_keys`,
  );
  const row = rows[0];
  return { jobs: row?.jobs ?? 0, attempts: row?.attempts ?? 0, dedupeKeys: row?.dedupe_keys ?? 0 };
}

/**
 * Removes one bounded batch of audit rows older than `auditAfterSeconds` (default 400 days,
 * at least 90), through the SECURITY DEFINER leasehold.remove_old_audit (drizzle/0011): the
 * worker role has no DELETE on the audit log. Call again while it returns `limit`.
 */
export async function removeOldAudit(executor: Executor, options: RetentionOptions = {}): Promise<number> {
  const o = parseInput('retention', retentionSchema, options);
  const rows = await run<{ removed: number }>(
    executor,
    sql`SELECT leasehold.remove_old_audit(make_interval(secs => ${o.auditAfterSeconds}::float8), ${o.limit}::integer) AS removed`,
  );
  return rows[0]?.removed ?? 0;
}
