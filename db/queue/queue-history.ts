/**
 * A queue's history (docs/dashboard.md, "History"): what the dashboard's charts over 1 h, 24 h,
 * 7 d and 90 d read. The maintenance loop (workers/maintenance.ts, one process per database by
 * its task lock) calls `recordQueueHistory` about once a minute:
 *
 * 1. it recounts the recent minutes' outcomes per queue from `finished_rollup` (which the
 *    finishing statements already write, per minute) and their failed attempts from
 *    `job_attempts` (by `job_attempts_ended_idx`), from two minutes before the newest minute it
 *    recorded (so a round missed or a late commit is caught up), into `queue_minutes`;
 * 2. it samples live work (ready, scheduled, retrying, running, lease expired) and the oldest due
 *    ready job's age per queue (db/queries/overview.ts `backlog`, the overview's own read) into
 *    this minute's row;
 * 3. it folds the minutes into `queue_hours` from an hour before the newest hour it folded
 *    (sums of outcomes, the highest sample of live work and age);
 * 4. it removes minutes older than 7 days and hours older than 90 days.
 *
 * Nothing here is on the claim or settle path: the rows are a handful per queue and minute,
 * whatever the throughput (WAL per day in docs/performance.md).
 */
import { sql } from 'drizzle-orm';
import { backlog } from '../queries/overview.ts';
import { run, type Executor } from './executor.ts';

const DAY = 24 * 3600;
/** How long a queue's minutes are kept. */
export const HISTORY_MINUTES_KEPT_SECONDS = 7 * DAY;
/** How long a queue's hours are kept. */
export const HISTORY_HOURS_KEPT_SECONDS = 90 * DAY;
/** How often the maintenance loop records history. */
export const HISTORY_INTERVAL_MS = 60_000;

/** The buckets' origin: whole UTC minutes and hours, whatever the session's zone. */
export const BUCKET_ORIGIN = sql`'2000-01-01 00:00:00+00'::timestamptz`;

export interface HistoryRound {
  /** Queue minutes whose outcomes were recounted. */
  minutesCounted: number;
  /** Queues whose live work was sampled. */
  queuesSampled: number;
  /** Queue hours folded. */
  hoursFolded: number;
  /** Minutes and hours removed as too old. */
  removed: number;
}

/** One round of history (see the module's comment); run it inside the maintenance lock. */
export async function recordQueueHistory(executor: Executor): Promise<HistoryRound> {
  const minutesCounted = await countRecentMinutes(executor);
  const queuesSampled = await sampleLiveWork(executor);
  const hoursFolded = await foldHours(executor);
  const removed = await removeOldHistory(executor);
  return { minutesCounted, queuesSampled, hoursFolded, removed };
}

/** Step 1: the recent minutes' outcomes and failed attempts per queue, recounted. */
async function countRecentMinutes(executor: Executor): Promise<number> {
  const rows = await run<{ n: number }>(
    executor,
    sql`
    WITH since AS (
      SELECT greatest(
        coalesce((SELECT max(minute) FROM leasehold.queue_minutes), '-infinity'::timestamptz) - interval '2 minutes',
        statement_timestamp() - make_interval(secs => ${HISTORY_MINUTES_KEPT_SECONDS}::float8)
      ) AS at
    ),
    outcomes AS (
      SELECT r.minute, r.queue,
             coalesce(sum(r.jobs) FILTER (WHERE r.state = 'done'), 0)::int AS done,
             coalesce(sum(r.jobs) FILTER (WHERE r.state = 'dead'), 0)::int AS dead,
             coalesce(sum(r.jobs) FILTER (WHERE r.state = 'cancelled'), 0)::int AS cancelled
      FROM leasehold.finished_rollup r, since WHERE r.minute >= date_bin('1 minute', since.at, ${BUCKET_ORIGIN})
      GROUP BY r.minute, r.queue
    ),
    failures AS (
      SELECT date_bin('1 minute', a.ended_at, ${BUCKET_ORIGIN}) AS minute, a.queue, count(*)::int AS failed
      FROM leasehold.job_attempts a, since
      WHERE a.ended_at >= date_bin('1 minute', since.at, ${BUCKET_ORIGIN}) AND a.outcome IN ('failed', 'lease_expired')
      GROUP BY 1, 2
    ),
    counted AS (
      INSERT INTO leasehold.queue_minutes AS m (minute, queue, done, dead, cancelled, failed_attempts)
      SELECT minute, queue, coalesce(o.done, 0), coalesce(o.dead, 0), coalesce(o.cancelled, 0), coalesce(f.failed, 0)
      FROM outcomes o FULL JOIN failures f USING (minute, queue)
      ON CONFLICT (minute, queue) DO UPDATE SET done = excluded.done, dead = excluded.dead,
        cancelled = excluded.cancelled, failed_attempts = excluded.failed_attempts
      WHERE (m.done, m.dead, m.cancelled, m.failed_attempts)
        IS DISTINCT FROM (excluded.done, excluded.dead, excluded.cancelled, excluded.failed_attempts)
      RETURNING 1
    )
    SELECT count(*)::int AS n FROM counted`,
  );
  return rows[0]?.n ?? 0;
}

/** Step 2: live work and the oldest due ready job's age per queue, into this minute's rows. */
async function sampleLiveWork(executor: Executor): Promise<number> {
  const queues = await backlog(executor);
  if (queues.length === 0) return 0;
  const sample = JSON.stringify(
    queues.map((q) => ({
      queue: q.queue,
      ready: q.ready,
      scheduled: q.scheduled,
      retrying: q.retrying,
      running: q.running,
      lease_expired: q.leaseExpired,
      oldest: q.oldestReadyAgeSeconds,
    })),
  );
  const rows = await run<{ n: number }>(
    executor,
    sql`
    WITH sampled AS (
      INSERT INTO leasehold.queue_minutes AS m
        (minute, queue, ready, scheduled, retrying, running, lease_expired, oldest_ready_seconds)
      SELECT date_bin('1 minute', statement_timestamp(), ${BUCKET_ORIGIN}), s.queue, s.ready, s.scheduled, s.retrying,
             s.running, s.lease_expired, s.oldest
      FROM jsonb_to_recordset(${sample}::jsonb)
        AS s(queue text, ready int, scheduled int, retrying int, running int, lease_expired int, oldest float8)
      ON CONFLICT (minute, queue) DO UPDATE SET ready = excluded.ready, scheduled = excluded.scheduled,
        retrying = excluded.retrying, running = excluded.running, lease_expired = excluded.lease_expired,
        oldest_ready_seconds = excluded.oldest_ready_seconds
      RETURNING 1
    )
    SELECT count(*)::int AS n FROM sampled`,
  );
  return rows[0]?.n ?? 0;
}

/** Step 3: the minutes folded per queue and hour, from an hour before the newest hour folded. */
async function foldHours(executor: Executor): Promise<number> {
  const rows = await run<{ n: number }>(
    executor,
    sql`
    WITH since AS (
      SELECT coalesce((SELECT max(hour) FROM leasehold.queue_hours), '-infinity'::timestamptz) - interval '1 hour' AS at
    ),
    folded AS (
      INSERT INTO leasehold.queue_hours AS h (hour, queue, done, dead, cancelled, failed_attempts,
        ready, scheduled, retrying, running, lease_expired, oldest_ready_seconds)
      SELECT date_bin('1 hour', m.minute, ${BUCKET_ORIGIN}), m.queue, sum(m.done), sum(m.dead), sum(m.cancelled),
             sum(m.failed_attempts), max(m.ready), max(m.scheduled), max(m.retrying), max(m.running),
             max(m.lease_expired), max(m.oldest_ready_seconds)
      FROM leasehold.queue_minutes m, since WHERE m.minute >= since.at
      GROUP BY 1, 2
      ON CONFLICT (hour, queue) DO UPDATE SET done = excluded.done, dead = excluded.dead,
        cancelled = excluded.cancelled, failed_attempts = excluded.failed_attempts, ready = excluded.ready,
        scheduled = excluded.scheduled, retrying = excluded.retrying, running = excluded.running,
        lease_expired = excluded.lease_expired, oldest_ready_seconds = excluded.oldest_ready_seconds
      WHERE (h.done, h.dead, h.cancelled, h.failed_attempts, h.ready, h.scheduled, h.retrying, h.running,
             h.lease_expired, h.oldest_ready_seconds)
        IS DISTINCT FROM (excluded.done, excluded.dead, excluded.cancelled, excluded.failed_attempts, excluded.ready,
             excluded.scheduled, excluded.retrying, excluded.running, excluded.lease_expired, excluded.oldest_ready_seconds)
      RETURNING 1
    )
    SELECT count(*)::int AS n FROM folded`,
  );
  return rows[0]?.n ?? 0;
}

/** Step 4: minutes past 7 days and hours past 90 days. */
async function removeOldHistory(executor: Executor): Promise<number> {
  const rows = await run<{ n: number }>(
    executor,
    sql`
    WITH minutes AS (
      DELETE FROM leasehold.queue_minutes
      WHERE minute < statement_timestamp() - make_interval(secs => ${HISTORY_MINUTES_KEPT_SECONDS}::float8)
      RETURNING 1
    ),
    hours AS (
      DELETE FROM leasehold.queue_hours
      WHERE hour < statement_timestamp() - make_interval(secs => ${HISTORY_HOURS_KEPT_SECONDS}::float8)
      RETURNING 1
    )
    SELECT (SELECT count(*) FROM minutes)::int + (SELECT count(*) FROM hours)::int AS n`,
  );
  return rows[0]?.n ?? 0;
}
