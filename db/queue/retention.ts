/**
 * Retention: terminal jobs leave the hot table after configurable ages, in bounded batches
 * (short statements, rows another cleaner holds are skipped). Attempt history and idempotency
 * keys keep their own windows; a key is dropped only once its job is gone too, so a key never
 * stops deduplicating while its job still exists.
 */
import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { run, type Executor } from './executor';
import { parseInput } from './validate';

const DAY = 24 * 3600;
const seconds = z
  .number()
  .min(0)
  .max(100 * 365 * DAY);

const retentionSchema = z.strictObject({
  doneAfterSeconds: seconds.default(1 * DAY),
  deadAfterSeconds: seconds.default(14 * DAY),
  cancelledAfterSeconds: seconds.default(7 * DAY),
  attemptsAfterSeconds: seconds.default(14 * DAY),
  /** Most rows removed per call for each terminal state, attempt history and keys. */
  limit: z.int().min(1).max(100_000).default(1000),
});

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
  const terminal = (state: string, age: number, name: string) => sql`
    ${sql.raw(name)} AS (
      SELECT id FROM jobs
      WHERE state = ${state} AND finished_at < statement_timestamp() - make_interval(secs => ${age}::float8)
      ORDER BY finished_at
      LIMIT ${o.limit}
      FOR UPDATE SKIP LOCKED
    )`;
  const rows = await run(
    executor,
    sql`
    WITH ${terminal('done', o.doneAfterSeconds, 'old_done')},
    ${terminal('dead', o.deadAfterSeconds, 'old_dead')},
    ${terminal('cancelled', o.cancelledAfterSeconds, 'old_cancelled')},
    removed_jobs AS (
      DELETE FROM jobs j
      USING (SELECT id FROM old_done UNION ALL SELECT id FROM old_dead UNION ALL SELECT id FROM old_cancelled) o
      WHERE j.id = o.id AND j.state IN ('done', 'dead', 'cancelled')
      RETURNING j.id
    ),
    old_attempts AS (
      SELECT job_id, attempt FROM job_attempts
      WHERE ended_at < statement_timestamp() - make_interval(secs => ${o.attemptsAfterSeconds}::float8)
      ORDER BY ended_at
      LIMIT ${o.limit}
    ),
    removed_attempts AS (
      DELETE FROM job_attempts a USING old_attempts o
      WHERE a.job_id = o.job_id AND a.attempt = o.attempt
      RETURNING 1
    ),
    old_keys AS (
      SELECT d.key FROM dedupe_keys d
      WHERE d.expires_at < statement_timestamp()
        AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = d.job_id)
        AND d.job_id NOT IN (SELECT id FROM removed_jobs)
      ORDER BY d.expires_at
      LIMIT ${o.limit}
    ),
    removed_keys AS (
      DELETE FROM dedupe_keys d USING old_keys o WHERE d.key = o.key AND d.expires_at < statement_timestamp() RETURNING 1
    )
    SELECT (SELECT count(*) FROM removed_jobs)::int AS jobs,
           (SELECT count(*) FROM removed_attempts)::int AS attempts,
           (SELECT count(*) FROM removed_keys)::int AS dedupe_keys`,
  );
  const row = rows[0] ?? {};
  return { jobs: Number(row.jobs ?? 0), attempts: Number(row.attempts ?? 0), dedupeKeys: Number(row.dedupe_keys ?? 0) };
}
