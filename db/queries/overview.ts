/**
 * Read models for the overview and /api/metrics. Every query reads a partial index: live
 * counts walk the ready/running indexes (small: the backlog), history counts are index-only
 * scans of jobs_terminal_idx and job_attempts_ended_idx (INCLUDE columns), so the page stays
 * fast with millions of finished jobs (figures: docs/operations.md).
 */
import { sql } from 'drizzle-orm';
import { run, toDate, type Executor } from '../queue/executor';
import { listWorkers } from '../queue/worker-registry';
import { inListState } from './sub-states';

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
  throughput: { minute: Date; completed: number; failed: number }[];
  workers: Awaited<ReturnType<typeof listWorkers>>;
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
});

export async function backlog(executor: Executor): Promise<QueueBacklog[]> {
  const [ready, running, terminal, done, paused] = await Promise.all([
    run(
      executor,
      sql`
      SELECT queue,
             count(*) FILTER (WHERE ${inListState('ready')})::int AS ready,
             count(*) FILTER (WHERE ${inListState('scheduled')})::int AS scheduled,
             count(*) FILTER (WHERE ${inListState('retrying')})::int AS retrying,
             extract(epoch FROM now() - min(run_at) FILTER (WHERE run_at <= now()))::float8 AS oldest
      FROM jobs WHERE state = 'ready' GROUP BY queue`,
    ),
    run(
      executor,
      sql`
      SELECT queue, count(*) FILTER (WHERE ${inListState('running')})::int AS running,
             count(*) FILTER (WHERE ${inListState('lease_expired')})::int AS lease_expired
      FROM jobs WHERE state = 'running' GROUP BY queue`,
    ),
    run(
      executor,
      sql`
      SELECT queue, state, count(*)::int AS n FROM jobs WHERE state IN ('dead', 'cancelled') GROUP BY queue, state`,
    ),
    run(
      executor,
      sql`
      SELECT queue, count(*)::int AS n FROM jobs
      WHERE state = 'done' AND finished_at > now() - interval '1 hour' GROUP BY queue`,
    ),
    run(executor, sql`SELECT name, paused FROM queues`),
  ]);
  const byQueue = new Map<string, QueueBacklog>();
  const get = (queue: string) => {
    let entry = byQueue.get(queue);
    if (!entry) byQueue.set(queue, (entry = emptyBacklog(queue)));
    return entry;
  };
  for (const r of ready) {
    Object.assign(get(r.queue as string), {
      ready: r.ready,
      scheduled: r.scheduled,
      retrying: r.retrying,
      oldestReadyAgeSeconds: r.oldest === null ? null : Math.max(0, Number(r.oldest)),
    });
  }
  for (const r of running) Object.assign(get(r.queue as string), { running: r.running, leaseExpired: r.lease_expired });
  for (const r of terminal) get(r.queue as string)[r.state === 'dead' ? 'dead' : 'cancelled'] = Number(r.n);
  for (const r of done) get(r.queue as string).doneLastHour = Number(r.n);
  for (const r of paused) get(r.name as string).paused = r.paused === true;
  return [...byQueue.values()].sort((a, b) => a.queue.localeCompare(b.queue));
}

/** How many jobs the attempt histogram looks at: the latest finished, within a day. */
export const ATTEMPTS_SAMPLE = 20_000;

/**
 * Attempts used by the latest finished jobs (at most ATTEMPTS_SAMPLE, within 24 hours): one
 * backward index-only walk per terminal state, so the cost is bounded whatever the volume.
 */
export async function attemptsHistogram(executor: Executor) {
  const arm = (state: string) => sql`(SELECT attempts, finished_at FROM jobs
    WHERE state = ${state} AND finished_at > now() - interval '1 day'
    ORDER BY finished_at DESC LIMIT ${ATTEMPTS_SAMPLE})`;
  const rows = await run(
    executor,
    sql`
    SELECT attempts, count(*)::int AS jobs FROM (
      SELECT attempts FROM (${arm('done')} UNION ALL ${arm('dead')} UNION ALL ${arm('cancelled')}) a
      ORDER BY finished_at DESC LIMIT ${ATTEMPTS_SAMPLE}
    ) latest GROUP BY attempts ORDER BY attempts`,
  );
  return rows.map((r) => ({ attempts: Number(r.attempts), jobs: Number(r.jobs) }));
}

/** Every minute of the last hour, zeros included, so the chart's time axis is honest. */
export async function throughputLastHour(executor: Executor) {
  // Completions are the done jobs themselves (db/queue/history.ts); failures are attempt rows.
  const rows = await run(
    executor,
    sql`
    SELECT minute, sum(completed)::int AS completed, sum(failed)::int AS failed FROM (
      SELECT date_trunc('minute', finished_at) AS minute, count(*) AS completed, 0 AS failed
      FROM jobs WHERE state = 'done' AND finished_at > now() - interval '1 hour' GROUP BY 1
      UNION ALL
      SELECT date_trunc('minute', ended_at), 0, count(*)
      FROM job_attempts WHERE ended_at > now() - interval '1 hour' AND outcome IN ('failed', 'lease_expired') GROUP BY 1
    ) t GROUP BY 1 ORDER BY 1`,
  );
  const perMinute = new Map(rows.map((r) => [toDate(r.minute).getTime(), r]));
  const start = Math.floor(Date.now() / 60_000) * 60_000 - 59 * 60_000;
  return Array.from({ length: 60 }, (_, i) => {
    const minute = start + i * 60_000;
    const row = perMinute.get(minute);
    return { minute: new Date(minute), completed: Number(row?.completed ?? 0), failed: Number(row?.failed ?? 0) };
  });
}

export async function overview(executor: Executor): Promise<Overview> {
  const [queues, attempts, lastHour, lastDay, throughput, workers] = await Promise.all([
    backlog(executor),
    attemptsHistogram(executor),
    failureClassesSince(executor, '1 hour'),
    failureClassesSince(executor, '1 day'),
    throughputLastHour(executor),
    listWorkers(executor, 60),
  ]);
  return { generatedAt: new Date(), queues, attempts, failureClasses: { lastHour, lastDay }, throughput, workers };
}

export async function failureClassesSince(executor: Executor, window: '1 hour' | '1 day') {
  const rows = await run(
    executor,
    sql`
    SELECT coalesce(failure_class, 'unknown') AS failure_class, count(*)::int AS n FROM job_attempts
    WHERE ended_at > now() - ${window}::interval AND outcome <> 'completed' AND outcome IN ('failed', 'lease_expired')
    GROUP BY 1 ORDER BY 2 DESC`,
  );
  return rows.map((r) => ({ failureClass: r.failure_class as string, count: Number(r.n) }));
}

/** Dead jobs by queue and failure class, for /api/metrics. */
export async function deadByClass(executor: Executor) {
  const rows = await run(
    executor,
    sql`
    SELECT queue, coalesce(failure_class, 'unknown') AS failure_class, count(*)::int AS n
    FROM jobs WHERE state = 'dead' GROUP BY 1, 2`,
  );
  return rows.map((r) => ({ queue: r.queue as string, failureClass: r.failure_class as string, count: Number(r.n) }));
}
