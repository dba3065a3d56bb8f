/**
 * Read models for the overview and /api/metrics. No query walks the jobs by state (no index
 * names it: docs/design/schema-v1.md): live counts read the ready rows and the lease rows
 * (small: the backlog and what runs), dead and cancelled counts the class indexes, time
 * windows the per-minute rollup and job_attempts_ended_idx, so the page stays fast with
 * millions of finished jobs (figures: docs/operations.md).
 */
import { sql } from 'drizzle-orm';
import { run, type Executor } from '../queue/executor.ts';
import { LIVE_WORKER_SECONDS, listWorkers } from '../queue/worker-registry.ts';
import { readyRowIn } from './sub-states.ts';

export interface QueueBacklog {
  queue: string;
  paused: boolean;
  ready: number;
  scheduled: number;
  retrying: number;
  running: number;
  leaseExpired: number;
  dead: number;
  cancelled: number;
  doneLastHour: number;
  /** Age of the oldest due ready job, in seconds (queue lag); null when none is due. */
  oldestReadyAgeSeconds: number | null;
  /**
   * Ready, scheduled and retrying jobs whose kind version no live worker runs: they wait for
   * one (a worker claims only its handlers' kind versions) and end `dead` after the grace.
   */
  waitingForKind: number;
}

export interface Overview {
  generatedAt: Date;
  queues: QueueBacklog[];
  /** Attempts used by the latest finished jobs (at most 20,000, within 24 hours). */
  attempts: { attempts: number; jobs: number }[];
  failureClasses: {
    lastHour: { failureClass: string; count: number }[];
    lastDay: { failureClass: string; count: number }[];
  };
  /** Per minute over the last hour: attempts completed and failed (including lost leases). */
  workers: Awaited<ReturnType<typeof listWorkers>>;
  /** Of all queues: jobs waiting for a kind version no live worker runs (QueueBacklog.waitingForKind). */
  waitingForKind: number;
}

const emptyBacklog = (queue: string): QueueBacklog => ({
  queue,
  paused: false,
  ready: 0,
  scheduled: 0,
  retrying: 0,
  running: 0,
  leaseExpired: 0,
  dead: 0,
  cancelled: 0,
  doneLastHour: 0,
  oldestReadyAgeSeconds: null,
  waitingForKind: 0,
});

export async function backlog(executor: Executor): Promise<QueueBacklog[]> {
  // Live counts come from where live jobs are (ready rows, lease rows), history from the
  // class indexes and the rollup: no index on the jobs names their state
  // (docs/design/schema-v1.md).
  const [ready, running, terminal, done, paused] = await Promise.all([
    run<{
      queue: string;
      ready: number;
      scheduled: number;
      retrying: number;
      oldest: number | null;
      waiting_for_kind: number;
    }>(
      executor,
      // The kind versions live workers run are few: a hash of them, not a lookup per ready row.
      sql`
      WITH live AS (
        SELECT DISTINCT wk.kind, wk.version FROM leasehold.worker_kinds wk
        JOIN leasehold.workers w ON w.id = wk.worker_id
        WHERE w.last_seen_at >= now() - make_interval(secs => ${LIVE_WORKER_SECONDS})
      )
      SELECT queue,
             count(*) FILTER (WHERE ${readyRowIn('ready')})::int AS ready,
             count(*) FILTER (WHERE ${readyRowIn('scheduled')})::int AS scheduled,
             count(*) FILTER (WHERE ${readyRowIn('retrying')})::int AS retrying,
             extract(epoch FROM now() - min(run_at) FILTER (WHERE run_at <= now()))::float8 AS oldest,
             count(*) FILTER (WHERE l.kind IS NULL)::int AS waiting_for_kind
      FROM leasehold.ready_rows r LEFT JOIN live l ON l.kind = r.kind AND l.version = r.kind_version
      GROUP BY queue`,
    ),
    run<{ queue: string; running: number; lease_expired: number }>(
      executor,
      // A lease row's deadline is never later than its jobs' effective ones: only rows already
      // due can hold expired jobs, and only their jobs are looked at.
      sql`
      SELECT l.queue, (sum(l.running) - coalesce(max(x.expired), 0))::int AS running, coalesce(max(x.expired), 0)::int AS lease_expired
      FROM leasehold.leases l
      LEFT JOIN (
        SELECT d.queue, count(*) AS expired
        FROM leasehold.leases d JOIN leasehold.jobs j ON j.id = ANY(d.job_ids)
        WHERE d.lease_until <= now() AND j.lease_token = d.token AND j.state = 'running'
          AND leasehold.effective_lease_until(j.lease_until, j.lease_token, j.queue) <= now()
        GROUP BY d.queue
      ) x ON x.queue = l.queue
      GROUP BY l.queue`,
    ),
    run<{ queue: string; state: string; n: number }>(
      executor,
      sql`
      SELECT queue, state, count(*)::int AS n FROM leasehold.jobs
      WHERE failure_class IS NOT NULL AND state IN ('dead', 'cancelled') GROUP BY queue, state`,
    ),
    run<{ queue: string; n: number }>(
      executor,
      sql`
      SELECT queue, sum(jobs)::int AS n FROM leasehold.finished_rollup
      WHERE state = 'done' AND minute > now() - interval '1 hour' GROUP BY queue`,
    ),
    run<{ name: string; paused: boolean }>(executor, sql`SELECT name, paused FROM leasehold.queues`),
  ]);
  const byQueue = new Map<string, QueueBacklog>();
  const get = (queue: string) => {
    let entry = byQueue.get(queue);
    if (!entry) byQueue.set(queue, (entry = emptyBacklog(queue)));
    return entry;
  };
  for (const r of ready) {
    const entry = get(r.queue);
    entry.ready = r.ready;
    entry.scheduled = r.scheduled;
    entry.retrying = r.retrying;
    entry.oldestReadyAgeSeconds = r.oldest === null ? null : Math.max(0, r.oldest);
    entry.waitingForKind = r.waiting_for_kind;
  }
  for (const r of running) {
    const entry = get(r.queue);
    entry.running = r.running;
    entry.leaseExpired = r.lease_expired;
  }
  for (const r of terminal) get(r.queue)[r.state === 'dead' ? 'dead' : 'cancelled'] = r.n;
  for (const r of done) get(r.queue).doneLastHour = r.n;
  for (const r of paused) get(r.name).paused = r.paused;
  return [...byQueue.values()].sort((a, b) => a.queue.localeCompare(b.queue));
}

/** Attempts used by the jobs finished in the last 24 hours (done, dead or cancelled), from the rollup. */
export async function attemptsHistogram(executor: Executor) {
  const rows = await run<{ attempts: number; jobs: number }>(
    executor,
    sql`
    SELECT attempts, sum(jobs)::int AS jobs FROM leasehold.finished_rollup
    WHERE minute > now() - interval '1 day' GROUP BY attempts ORDER BY attempts`,
  );
  return rows.map((r) => ({ attempts: r.attempts, jobs: r.jobs }));
}

export async function overview(executor: Executor): Promise<Overview> {
  const [queues, attempts, lastHour, lastDay, workers] = await Promise.all([
    backlog(executor),
    attemptsHistogram(executor),
    failureClassesSince(executor, '1 hour'),
    failureClassesSince(executor, '1 day'),
    listWorkers(executor, LIVE_WORKER_SECONDS),
  ]);
  const waitingForKind = queues.reduce((n, q) => n + q.waitingForKind, 0);
  return {
    generatedAt: new Date(),
    queues,
    attempts,
    failureClasses: { lastHour, lastDay },
    workers,
    waitingForKind,
  };
}

export async function failureClassesSince(executor: Executor, window: '1 hour' | '1 day') {
  const rows = await run<{ failure_class: string; n: number }>(
    executor,
    sql`
    SELECT coalesce(failure_class, 'unknown') AS failure_class, count(*)::int AS n FROM leasehold.job_attempts
    WHERE ended_at > now() - ${window}::interval AND outcome <> 'completed' AND outcome IN ('failed', 'lease_expired')
    GROUP BY 1 ORDER BY 2 DESC`,
  );
  return rows.map((r) => ({ failureClass: r.failure_class, count: r.n }));
}

/** Dead jobs by queue and failure class, for /api/metrics. */
export async function deadByClass(executor: Executor) {
  const rows = await run<{ queue: string; failure_class: string; n: number }>(
    executor,
    sql`
    SELECT queue, coalesce(failure_class, 'unknown') AS failure_class, count(*)::int AS n
    FROM leasehold.jobs WHERE failure_class IS NOT NULL AND state = 'dead' GROUP BY 1, 2`,
  );
  return rows.map((r) => ({ queue: r.queue, failureClass: r.failure_class, count: r.n }));
}

/**
 * How full the cluster's NOTIFY queue is (0–1), for /api/metrics: past NOTIFY_QUEUE_LIMIT
 * enqueues stop sending wake-ups and workers find jobs by polling (db/queue/wake.ts).
 */
export async function notifyQueueUsage(executor: Executor): Promise<number> {
  const rows = await run<{ usage: number }>(executor, sql`SELECT pg_catalog.pg_notification_queue_usage() AS usage`);
  return Number(rows[0]?.usage ?? 0);
}
