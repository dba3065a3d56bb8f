/**
 * The history charts' read model (docs/dashboard.md, "History"): a queue's (or every queue's)
 * outcomes, failure rate, live work and oldest-ready age per interval, from `queue_minutes`
 * (1 h in minutes, 24 h in quarter hours) and `queue_hours` (7 d in hours, 90 d in days), which
 * db/queue/queue-history.ts writes. Every bucket of the range is returned, in order: outcomes
 * are 0 where nothing finished, live work is null where no sample was taken (no worker ran the
 * maintenance then).
 */
import { sql } from 'drizzle-orm';
import { run, toDate, type Executor, type PgTimestamp } from '../queue/executor.ts';
import { BUCKET_ORIGIN } from '../queue/queue-history.ts';

export const HISTORY_RANGES = {
  '1h': { table: 'minutes', bucketSeconds: 60, buckets: 60 },
  '24h': { table: 'minutes', bucketSeconds: 15 * 60, buckets: 96 },
  '7d': { table: 'hours', bucketSeconds: 3600, buckets: 168 },
  '90d': { table: 'hours', bucketSeconds: 86_400, buckets: 90 },
} as const;

export type HistoryRange = keyof typeof HISTORY_RANGES;

export const isHistoryRange = (value: unknown): value is HistoryRange =>
  typeof value === 'string' && Object.hasOwn(HISTORY_RANGES, value);

export interface HistoryPoint {
  /** The bucket's start. */
  at: Date;
  done: number;
  dead: number;
  cancelled: number;
  failedAttempts: number;
  /** failed attempts ÷ (failed attempts + completions); null when neither happened. */
  failureRate: number | null;
  /** The highest sample in the bucket (summed over queues per sample); null when none was taken. */
  ready: number | null;
  scheduled: number | null;
  retrying: number | null;
  running: number | null;
  leaseExpired: number | null;
  /** The oldest due ready job's highest sampled age in the bucket (over every queue), in seconds. */
  oldestReadySeconds: number | null;
}

export interface QueueHistory {
  range: HistoryRange;
  bucketSeconds: number;
  /** The queue, or null for every queue together. */
  queue: string | null;
  points: HistoryPoint[];
}

interface Row {
  at: PgTimestamp;
  done: number;
  dead: number;
  cancelled: number;
  failed: number;
  ready: number | null;
  scheduled: number | null;
  retrying: number | null;
  running: number | null;
  lease_expired: number | null;
  oldest: number | null;
}

/** The buckets of `range` ending with the current one, for `queue` or (null) every queue. */
export async function queueHistory(
  executor: Executor,
  range: HistoryRange,
  queue: string | null = null,
): Promise<QueueHistory> {
  const r = HISTORY_RANGES[range];
  const source = r.table === 'minutes' ? sql`leasehold.queue_minutes` : sql`leasehold.queue_hours`;
  const column = r.table === 'minutes' ? sql`minute` : sql`hour`;
  const width = sql`make_interval(secs => ${r.bucketSeconds}::float8)`;
  const rows = await run<Row>(
    executor,
    sql`
    WITH span AS (
      SELECT date_bin(${width}, statement_timestamp(), ${BUCKET_ORIGIN}) - ${width} * ${r.buckets - 1} AS first
    ),
    -- Per stored row's time, every queue (or the one asked for) together: live work summed.
    per_time AS (
      SELECT t.${column} AS at, sum(t.done) AS done, sum(t.dead) AS dead, sum(t.cancelled) AS cancelled,
             sum(t.failed_attempts) AS failed, sum(t.ready) AS ready, sum(t.scheduled) AS scheduled,
             sum(t.retrying) AS retrying, sum(t.running) AS running, sum(t.lease_expired) AS lease_expired,
             max(t.oldest_ready_seconds) AS oldest
      FROM ${source} t, span WHERE t.${column} >= span.first AND (${queue}::text IS NULL OR t.queue = ${queue}::text)
      GROUP BY t.${column}
    ),
    per_bucket AS (
      SELECT date_bin(${width}, at, ${BUCKET_ORIGIN}) AS at, sum(done)::int AS done, sum(dead)::int AS dead,
             sum(cancelled)::int AS cancelled, sum(failed)::int AS failed, max(ready)::int AS ready,
             max(scheduled)::int AS scheduled, max(retrying)::int AS retrying, max(running)::int AS running,
             max(lease_expired)::int AS lease_expired, max(oldest)::float8 AS oldest
      FROM per_time GROUP BY 1
    )
    SELECT b.at, coalesce(p.done, 0) AS done, coalesce(p.dead, 0) AS dead, coalesce(p.cancelled, 0) AS cancelled,
           coalesce(p.failed, 0) AS failed, p.ready, p.scheduled, p.retrying, p.running, p.lease_expired, p.oldest
    FROM span, generate_series(span.first, span.first + ${width} * ${r.buckets - 1}, ${width}) AS b(at)
    LEFT JOIN per_bucket p ON p.at = b.at
    ORDER BY b.at`,
  );
  return {
    range,
    bucketSeconds: r.bucketSeconds,
    queue,
    points: rows.map((row) => ({
      at: toDate(row.at),
      done: row.done,
      dead: row.dead,
      cancelled: row.cancelled,
      failedAttempts: row.failed,
      failureRate: row.failed + row.done === 0 ? null : row.failed / (row.failed + row.done),
      ready: row.ready,
      scheduled: row.scheduled,
      retrying: row.retrying,
      running: row.running,
      leaseExpired: row.lease_expired,
      oldestReadySeconds: row.oldest,
    })),
  };
}
