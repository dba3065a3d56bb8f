/**
 * `npm run bench:dashboard`: the dashboard's read models against 1,000,000 jobs of history.
 * Seeds a fresh database (done, dead, cancelled, waiting and running jobs, one attempt row per
 * finished job), vacuums it, then times every query the dashboard runs: median of 7 runs after
 * a warm-up, in milliseconds of round trip on this machine. Prints a table and JSON; exits 1 if
 * any median is over the 250 ms budget.
 *
 *   npm run bench:dashboard -- --jobs 1000000 [--out DIR]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { sql } from 'drizzle-orm';
import { createDb } from '../db/client';
import { createScratchDatabase, selectDatabase } from '../db/database';
import { migrateDatabase } from '../db/migrate';
import { attemptsHistogram, backlog, deadByClass, failureClassesSince, overview, throughputLastHour } from '../db/queries/overview';
import { failureGroups, jobDetail, jobListSchema, listAudit, listJobs, auditListSchema } from '../db/queries/jobs';
import { run } from '../db/queue/executor';
import { PROJECT_DIR } from '../scripts/env';

const { values } = parseArgs({ options: { jobs: { type: 'string', default: '1000000' }, out: { type: 'string' }, keep: { type: 'boolean', default: false } } });
const total = Number(values.jobs);
const BUDGET_MS = 250;

const server = await selectDatabase({
  databaseUrl: process.env.DATABASE_URL,
  dataDir: path.join(PROJECT_DIR, '.leasehold', 'bench-postgres'),
  database: 'postgres',
  unsafeFast: true,
  log: (l) => console.error(`[bench] ${l}`),
});
const scratch = await createScratchDatabase(server.url, 'leasehold_bench');
const { url } = scratch;
await migrateDatabase(url);
const { db, close, pool } = createDb(url, { max: 8, statementTimeoutMs: 600_000 });

try {
  const started = Date.now();
  const live = Math.round(total * 0.01);
  const dead = Math.round(total * 0.03);
  const cancelled = Math.round(total * 0.01);
  const done = total - live - dead - cancelled;
  console.error(`[bench] seeding ${total} jobs (${done} done, ${dead} dead, ${cancelled} cancelled, ${live} ready/running)…`);
  const queues = `(ARRAY['receipts','emails','webhooks','reports'])[1 + g % 4]`;
  await run(db, sql`
    INSERT INTO jobs (id, queue, kind, payload, state, attempts, failure_class, last_error, created_at, run_at, claim_at, started_at, finished_at, updated_at)
    SELECT gen_random_uuid(), ${sql.raw(queues)}, 'k' || (g % 7), jsonb_build_object('n', g),
           'done', 1 + (g % 3 = 0)::int, NULL, NULL, t, t, t, t, t + interval '1 second', t
    FROM generate_series(1, ${done}) g, LATERAL (SELECT now() - (g % 604800) * interval '1 second' AS t) x`);
  await run(db, sql`
    INSERT INTO jobs (id, queue, kind, payload, state, attempts, failure_class, last_error, created_at, run_at, claim_at, started_at, finished_at, updated_at)
    SELECT gen_random_uuid(), ${sql.raw(queues)}, 'k' || (g % 7), jsonb_build_object('n', g), 'dead', 1 + g % 10,
           (ARRAY['permanent','transient','validation','lease_expired','expired'])[1 + g % 5],
           'provider refused order ' || g || ': ' || (400 + g % 30), t, t, t, t, t + interval '1 second', t
    FROM generate_series(1, ${dead}) g, LATERAL (SELECT now() - (g % 604800) * interval '1 second' AS t) x`);
  await run(db, sql`
    INSERT INTO jobs (id, queue, kind, payload, state, attempts, failure_class, last_error, created_at, run_at, claim_at, started_at, finished_at, updated_at)
    SELECT gen_random_uuid(), ${sql.raw(queues)}, 'k', '{}', 'cancelled', 0, 'cancelled', 'cancelled by op', t, t, t, NULL, t, t
    FROM generate_series(1, ${cancelled}) g, LATERAL (SELECT now() - (g % 604800) * interval '1 second' AS t) x`);
  await run(db, sql`
    INSERT INTO jobs (id, queue, kind, payload, state, attempts, run_at, claim_at, lease_token, lease_until, worker_id, started_at)
    SELECT gen_random_uuid(), ${sql.raw(queues)}, 'k', '{}',
           CASE WHEN g % 5 = 0 THEN 'running' ELSE 'ready' END, (g % 3 = 0)::int,
           now() + ((g % 7) - 3) * interval '1 minute', now() + ((g % 7) - 3) * interval '1 minute',
           CASE WHEN g % 5 = 0 THEN gen_random_uuid() END, CASE WHEN g % 5 = 0 THEN now() + interval '30 seconds' END,
           CASE WHEN g % 5 = 0 THEN 'w1' END, CASE WHEN g % 5 = 0 THEN now() END
    FROM generate_series(1, ${live}) g`);
  await run(db, sql`
    INSERT INTO job_attempts (job_id, attempt, queue, kind, worker_id, lease_token, started_at, ended_at, outcome, failure_class, error, duration_ms)
    SELECT id, attempts, queue, kind, 'w1', gen_random_uuid(), started_at, finished_at,
           CASE state WHEN 'done' THEN 'completed' ELSE 'failed' END, failure_class, last_error, 1000
    FROM jobs WHERE state IN ('done', 'dead')`);
  await run(db, sql`
    INSERT INTO audit_log (actor, action, job_ids, requested, affected, outcome)
    SELECT 'op@example.com', 'retry', ARRAY[gen_random_uuid()], 1, 1, 'applied' FROM generate_series(1, 20000)`);
  const client = await pool.connect();
  await client.query('VACUUM ANALYZE');
  client.release();
  console.error(`[bench] seeded and vacuumed in ${((Date.now() - started) / 1000).toFixed(1)} s`);

  const [sample] = await run<{ id: string }>(db, sql`SELECT id FROM jobs WHERE state = 'dead' LIMIT 1`);
  const list = (q: Record<string, string>) => () => listJobs(db, jobListSchema.parse(q));
  const cases: [string, () => Promise<unknown>][] = [
    ['overview (all panels, as /api/overview)', () => overview(db)],
    ['  backlog by queue and state + lag', () => backlog(db)],
    ['  attempts per finished job (latest 20k, 24 h)', () => attemptsHistogram(db)],
    ['  failure classes (1 h)', () => failureClassesSince(db, '1 hour')],
    ['  failure classes (24 h)', () => failureClassesSince(db, '1 day')],
    ['  throughput per minute (1 h)', () => throughputLastHour(db)],
    ['dead jobs by class (/api/metrics)', () => deadByClass(db)],
    ['jobs list: newest', list({})],
    ['jobs list: dead in one queue', list({ state: 'dead', queue: 'emails' })],
    ['jobs list: failure class validation', list({ failureClass: 'validation' })],
    ['jobs list: retrying', list({ state: 'retrying' })],
    ['jobs list: a kind with no jobs', list({ kind: 'no.such.kind' })],
    ['jobs list: a queue with no jobs', list({ queue: 'empty-queue' })],
    ['jobs list: ready in one queue', list({ state: 'ready', queue: 'emails' })],
    ['jobs list: search by id', list({ search: sample!.id })],
    ['job detail', () => jobDetail(db, sample!.id)],
    ['failure groups (7 days)', () => failureGroups(db)],
    ['audit log page', () => listAudit(db, auditListSchema.parse({}))],
  ];
  const results: { name: string; medianMs: number; minMs: number; maxMs: number; withinBudget: boolean }[] = [];
  for (const [label, work] of cases) {
    await work();
    const times: number[] = [];
    for (let i = 0; i < 7; i++) {
      const t0 = performance.now();
      await work();
      times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    const median = times[3]!;
    results.push({ name: label, medianMs: round(median), minMs: round(times[0]!), maxMs: round(times[6]!), withinBudget: median <= BUDGET_MS });
  }
  const [{ version }] = (await run(db, sql`SELECT current_setting('server_version') AS version`)) as [{ version: string }];
  console.log(`\nDashboard queries at ${total.toLocaleString('en')} jobs (PostgreSQL ${version}), median of 7, budget ${BUDGET_MS} ms\n`);
  console.log('| query | median ms | min | max | ≤ 250 ms |\n|---|---:|---:|---:|---|');
  for (const r of results) console.log(`| ${r.name} | ${r.medianMs} | ${r.minMs} | ${r.maxMs} | ${r.withinBudget ? 'yes' : '**no**'} |`);
  if (values.out) {
    mkdirSync(values.out, { recursive: true });
    writeFileSync(path.join(values.out, 'dashboard.json'), JSON.stringify({ jobs: total, postgres: version, budgetMs: BUDGET_MS, results }, null, 2));
  }
  process.exitCode = results.every((r) => r.withinBudget) ? 0 : 1;
} finally {
  await close();
  if (values.keep) {
    console.error(`[bench] kept the database: ${url} (the server keeps running; stop it yourself)`);
  } else {
    await scratch.drop().catch(() => {});
    await server.stop();
  }
}

function round(ms: number) {
  return Math.round(ms * 10) / 10;
}
