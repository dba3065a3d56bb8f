/**
 * The 1,000,000-job history the dashboard and history benchmarks run against, and the list of
 * queries the dashboard runs (bench/dashboard.ts and the dashboard case of `npm run bench`).
 */
import { createHash } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { readHealth } from '../db/queries/health.ts';
import type { Db } from '../db/client.ts';
import { attemptsHistogram, backlog, deadByClass, failureClassesSince, overview } from '../db/queries/overview.ts';
import { queueHistory } from '../db/queries/history.ts';
import { recordQueueHistory } from '../db/queue/queue-history.ts';
import { auditListSchema, failureGroups, jobDetail, jobListSchema, listAudit, listJobs } from '../db/queries/jobs.ts';
import { searchableKinds } from '../db/queries/kinds.ts';
import { run } from '../db/queue/executor.ts';
import { registerKinds } from '../db/queue/kinds.ts';
import { buildSearchIndexes } from '../db/migrate/index.ts';

/**
 * A payload of about `min` to `max` bytes for row `g` (SQL): an order with a customer and a
 * `notes` field of md5 text, different in every row and every 32 characters, so that
 * PostgreSQL's compression cannot make it small (a repeated string would shrink to nothing).
 * With `max` 0, the small `{"n": g}` of the older figures.
 */
function payloadSql(bytes: { min: number; max: number }): string {
  if (bytes.max === 0) return `jsonb_build_object('n', g)`;
  const chunks = (n: number) => Math.max(1, Math.round(n / 33));
  const lo = chunks(bytes.min);
  const span = Math.max(1, chunks(bytes.max) - lo + 1);
  return `jsonb_build_object('n', g, 'orderId', md5(g::text), 'region', (ARRAY['north','south'])[1 + g % 2],
    'customer', jsonb_build_object('email', 'c' || g || '@example.com'),
    'notes', (SELECT string_agg(md5(g::text || ':' || i), ' ') FROM generate_series(1, ${lo} + g % ${span}) i))`;
}

/**
 * The kind the search cases search (one of the seeded k0 … k6, a seventh of the jobs) and its
 * searchable paths: `orderId` (each value one job of the done ones past the dead ones' range)
 * and `region` (north or south: half the kind's jobs each).
 */
export const SEARCH_KIND = 'k1';
export const SEARCH_PATHS = ['orderId', 'region'] as const;

/**
 * Declares SEARCH_PATHS searchable on SEARCH_KIND (as its worker would at start) and builds
 * their indexes as `leasehold search-index` does; the build's seconds for the bench's log.
 */
export async function declareSearch(db: Db, url: string): Promise<number> {
  await registerKinds(db, [
    {
      kind: SEARCH_KIND,
      version: 1,
      defaultQueue: 'receipts',
      displayName: SEARCH_KIND,
      redactedPaths: [],
      rerunSafe: false,
      searchablePaths: [...SEARCH_PATHS],
    },
  ]);
  const started = performance.now();
  await buildSearchIndexes(url, { allowProxy: true, lockTimeoutMs: 60_000 });
  const seconds = (performance.now() - started) / 1000;
  // The indexes' expression statistics, as autovacuum's next analyze would gather them.
  await run(db, sql`ANALYZE leasehold.jobs`);
  return seconds;
}

/** What seedHistory puts in each job's payload, in bytes (roughly): the dashboard bench's 1–4 kB by default. */
export const DEFAULT_PAYLOAD_BYTES = { min: 1000, max: 4000 } as const;

/**
 * Inserts `total` jobs spread over the last 7 days: 94% done, 3% dead, 1% cancelled and (with
 * `live`) 1% ready, scheduled, retrying or running, plus an attempt row per failed attempt (a
 * third of the done jobs took two attempts) and 20,000 audit entries. Payloads are `payload`
 * bytes each (min to max, spread evenly; `{ min: 0, max: 0 }`: a tiny one).
 */
export async function seedHistory(
  db: Db,
  total: number,
  options: { live: boolean; payload?: { min: number; max: number } },
): Promise<void> {
  const payload = payloadSql(options.payload ?? { min: 0, max: 0 });
  const live = options.live ? Math.round(total * 0.01) : 0;
  const dead = Math.round(total * 0.03);
  const cancelled = Math.round(total * 0.01);
  const done = total - live - dead - cancelled;
  console.error(
    `[bench] seeding ${total} jobs (${done} done, ${dead} dead, ${cancelled} cancelled, ${live} ready/running)…`,
  );
  const queues = `(ARRAY['receipts','emails','webhooks','reports'])[1 + g % 4]`;
  await run(
    db,
    sql`
    INSERT INTO leasehold.jobs (id, queue, kind, payload, state, attempts, failure_class, last_error, created_at, run_at, claim_at, started_at, finished_at, updated_at)
    SELECT gen_random_uuid(), ${sql.raw(queues)}, 'k' || (g % 7), ${sql.raw(payload)},
           'done', 1 + (g % 3 = 0)::int, NULL, NULL, t, t, t, t, t + interval '1 second', t
    FROM generate_series(1, ${done}) g, LATERAL (SELECT now() - (g % 604800) * interval '1 second' AS t) x`,
  );
  await run(
    db,
    sql`
    INSERT INTO leasehold.jobs (id, queue, kind, payload, state, attempts, failure_class, last_error, created_at, run_at, claim_at, started_at, finished_at, updated_at)
    SELECT gen_random_uuid(), ${sql.raw(queues)}, 'k' || (g % 7), ${sql.raw(payload)}, 'dead', 1 + g % 10,
           (ARRAY['permanent','transient','validation','lease_expired','expired'])[1 + g % 5],
           'provider refused order ' || g || ': ' || (400 + g % 30), t, t, t, t, t + interval '1 second', t
    FROM generate_series(1, ${dead}) g, LATERAL (SELECT now() - (g % 604800) * interval '1 second' AS t) x`,
  );
  await run(
    db,
    sql`
    INSERT INTO leasehold.jobs (id, queue, kind, payload, state, attempts, failure_class, last_error, created_at, run_at, claim_at, started_at, finished_at, updated_at)
    SELECT gen_random_uuid(), ${sql.raw(queues)}, 'k', ${sql.raw(payload)}, 'cancelled', 0, 'cancelled', 'cancelled by op', t, t, t, NULL, t, t
    FROM generate_series(1, ${cancelled}) g, LATERAL (SELECT now() - (g % 604800) * interval '1 second' AS t) x`,
  );
  await run(
    db,
    sql`
    INSERT INTO leasehold.jobs (id, queue, kind, payload, state, attempts, run_at, claim_at, lease_token, lease_until, worker_id, started_at)
    SELECT gen_random_uuid(), ${sql.raw(queues)}, 'k', ${sql.raw(payload)},
           CASE WHEN g % 5 = 0 THEN 'running' ELSE 'ready' END, (g % 3 = 0)::int,
           now() + ((g % 7) - 3) * interval '1 minute', now() + ((g % 7) - 3) * interval '1 minute',
           CASE WHEN g % 5 = 0 THEN gen_random_uuid() END, CASE WHEN g % 5 = 0 THEN now() + interval '30 seconds' END,
           CASE WHEN g % 5 = 0 THEN 'w1' END, CASE WHEN g % 5 = 0 THEN now() END
    FROM generate_series(1, ${live}) g`,
  );
  // As the queue writes them: a row per attempt that did not complete (a completion is the
  // done row itself). Done jobs that took two attempts failed their first; dead jobs failed
  // their last.
  await run(
    db,
    sql`
    INSERT INTO leasehold.job_attempts (job_id, attempt, queue, kind, worker_id, lease_token, started_at, ended_at, outcome, failure_class, error, duration_ms)
    SELECT id, attempts - 1, queue, kind, 'w1', gen_random_uuid(), started_at - interval '2 seconds', started_at - interval '1 second',
           'failed', 'transient', 'provider timed out', 1000
    FROM leasehold.jobs WHERE state = 'done' AND attempts > 1
    UNION ALL
    SELECT id, attempts, queue, kind, 'w1', gen_random_uuid(), started_at, finished_at, 'failed', failure_class, last_error, 1000
    FROM leasehold.jobs WHERE state = 'dead'`,
  );
  // The per-minute rollup the finishing statements write (7 days of it), and the queues'
  // history the maintenance records from it: recorded once as the first round after an upgrade
  // would (7 days recounted), plus 83 older days of hours as 90 days of rounds would leave.
  await run(
    db,
    sql`
    INSERT INTO leasehold.finished_rollup (minute, queue, kind, state, attempts, shard, jobs)
    SELECT date_trunc('minute', finished_at), queue, kind, state, attempts, 0, count(*)::int
    FROM leasehold.jobs WHERE state IN ('done', 'dead', 'cancelled') GROUP BY 1, 2, 3, 4, 5`,
  );
  const started = performance.now();
  await recordQueueHistory(db);
  console.error(`[bench] first history round (7 days recounted): ${Math.round(performance.now() - started)} ms`);
  await run(
    db,
    sql`
    INSERT INTO leasehold.queue_hours (hour, queue, done, dead, failed_attempts, ready, running, oldest_ready_seconds)
    SELECT date_bin('1 hour', now(), '2000-01-01 00:00:00+00'::timestamptz) - h * interval '1 hour', q, 200 + h % 50, h % 7,
           h % 13, 50 + h % 40, 8, (h % 90)::float8
    FROM generate_series(7 * 24 + 1, 90 * 24 - 1) h, unnest(ARRAY['receipts','emails','webhooks','reports']) q`,
  );
  await run(
    db,
    sql`
    INSERT INTO leasehold.audit_log (actor, action, job_ids, requested, affected, outcome)
    SELECT 'op@example.com', 'retry', ARRAY[gen_random_uuid()], 1, 1, 'applied' FROM generate_series(1, 20000)`,
  );
}

/** Every query the dashboard runs, as [label, run] pairs (the overview's panels first). */
/** The health page's read has a budget of its own (issue 41): it runs on every refresh of the page and every scrape. */
export const HEALTH_BUDGET_MS = 50;

export async function dashboardQueries(db: Db): Promise<[string, () => Promise<unknown>, number?][]> {
  const [sample] = await run<{ id: string }>(db, sql`SELECT id FROM leasehold.jobs WHERE state = 'dead' LIMIT 1`);
  const list = (q: Record<string, string>) => () => listJobs(db, jobListSchema.parse(q));
  // A payload search as the dashboard runs it: the kinds resolved (searchableKinds), then the page.
  const search = (path: string, value: string) => async () => {
    const kinds = (await searchableKinds(db, path, SEARCH_KIND)).map((k) => k.kind);
    return listJobs(db, jobListSchema.parse({ kind: SEARCH_KIND, path, value }), { path, value, kinds });
  };
  // A done job's orderId (g = 70,001: kind k1, past the dead and cancelled jobs' range of g): one job has it.
  const g = 70_001;
  return [
    ['overview (all panels, as /api/overview)', () => overview(db)],
    ['  backlog by queue and state + lag', () => backlog(db)],
    ['  attempts per finished job (latest 20k, 24 h)', () => attemptsHistogram(db)],
    // Labels lose their parentheses in case names: these two must differ outside them.
    ['  failure classes, last hour', () => failureClassesSince(db, '1 hour')],
    ['  failure classes, last 24 h', () => failureClassesSince(db, '1 day')],
    ['history 1 h, every queue (per minute)', () => queueHistory(db, '1h')],
    ['history 24 h, every queue (per 15 min)', () => queueHistory(db, '24h')],
    ['history 7 d, one queue (per hour)', () => queueHistory(db, '7d', 'emails')],
    ['history 90 d, every queue (per day)', () => queueHistory(db, '90d')],
    ['history round (maintenance, once a minute)', () => recordQueueHistory(db)],
    ['dead jobs by class (/api/metrics)', () => deadByClass(db)],
    ['jobs list: newest', list({})],
    ['jobs list: dead in one queue', list({ state: 'dead', queue: 'emails' })],
    ['jobs list: failure class validation', list({ failureClass: 'validation' })],
    ['jobs list: retrying', list({ state: 'retrying' })],
    ['jobs list: a kind with no jobs', list({ kind: 'no.such.kind' })],
    ['jobs list: a queue with no jobs', list({ queue: 'empty-queue' })],
    ['jobs list: ready in one queue', list({ state: 'ready', queue: 'emails' })],
    ['jobs list: search by id', list({ search: sample!.id })],
    ['search: orderId matching one job', search('orderId', md5(String(g)))],
    ['search: region matching half the kind (first page of 50)', search('region', 'north')],
    ['job detail', () => jobDetail(db, sample!.id)],
    ['failure groups (7 days)', () => failureGroups(db)],
    ['audit log page', () => listAudit(db, auditListSchema.parse({}))],
    ['health (as /health and the metrics)', () => readHealth(db, { admin: true }), HEALTH_BUDGET_MS],
  ];
}

/** Round trips of `work` in ms, sorted, after one warm-up run. */
export async function timeRuns(work: () => Promise<unknown>, runs = 7): Promise<number[]> {
  await work();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await work();
    times.push(performance.now() - t0);
  }
  return times.sort((a, b) => a - b);
}

const md5 = (text: string) => createHash('md5').update(text).digest('hex');
