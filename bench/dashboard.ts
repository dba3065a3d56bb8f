/**
 * `npm run bench:dashboard`: the dashboard's read models against 1,000,000 jobs of history.
 * Seeds a fresh database (done, dead, cancelled, ready, scheduled, retrying and running jobs,
 * with payloads of 1 to 4 kB of incompressible text, one attempt row per failed attempt),
 * vacuums it, then times every query the dashboard runs: median of 7 runs after a warm-up, in
 * milliseconds of round trip on this machine. Prints a table and JSON; exits 1 if any median is
 * over its budget (250 ms; the health read, 50 ms). The server: the embedded PostgreSQL 18, or the one DATABASE_URL names
 * (e.g. the machine's PostgreSQL 15: DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres).
 *
 *   npm run bench:dashboard -- --jobs 1000000 [--payload-bytes 1000-4000] [--out DIR]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { sql } from 'drizzle-orm';
import { createDb } from '../db/client.ts';
import { selectDatabase } from '../cli/database-select.ts';
import { createScratchDatabase } from '../test/scratch-database.ts';
import { migrateDatabase } from '../db/migrate/index.ts';
import { run } from '../db/queue/executor.ts';
import { PROJECT_DIR } from '../cli/database-select.ts';
import { dashboardQueries, declareSearch, DEFAULT_PAYLOAD_BYTES, seedHistory, timeRuns } from './dashboard-queries.ts';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '1000000' },
    out: { type: 'string' },
    keep: { type: 'boolean', default: false },
    'payload-bytes': { type: 'string', default: `${DEFAULT_PAYLOAD_BYTES.min}-${DEFAULT_PAYLOAD_BYTES.max}` },
  },
});
const total = Number(values.jobs);
const bytes = /^(\d+)-(\d+)$/.exec(values['payload-bytes']!);
if (!bytes || Number(bytes[1]) > Number(bytes[2]))
  throw new Error(
    `--payload-bytes must be MIN-MAX such as 1000-4000 (0-0: tiny payloads), not ${values['payload-bytes']}`,
  );
const payload = { min: Number(bytes[1]), max: Number(bytes[2]) };
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
  await seedHistory(db, total, { live: true, payload });
  const client = await pool.connect();
  await client.query('VACUUM ANALYZE');
  client.release();
  console.error(`[bench] seeded and vacuumed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const searchSeconds = await declareSearch(db, url);
  console.error(`[bench] search indexes (k1: orderId, region) built CONCURRENTLY in ${searchSeconds.toFixed(1)} s`);

  const cases = await dashboardQueries(db);
  const results: {
    name: string;
    medianMs: number;
    minMs: number;
    maxMs: number;
    budgetMs: number;
    withinBudget: boolean;
  }[] = [];
  for (const [label, work, budget = BUDGET_MS] of cases) {
    const times = await timeRuns(work);
    const median = times[3]!;
    results.push({
      name: label,
      medianMs: round(median),
      minMs: round(times[0]!),
      maxMs: round(times[6]!),
      budgetMs: budget,
      withinBudget: median <= budget,
    });
  }
  const [{ version, payloadBytes, jobsMb }] = (await run(
    db,
    sql`SELECT current_setting('server_version') AS version,
               (SELECT round(avg(octet_length(payload::text))) FROM leasehold.jobs) AS "payloadBytes",
               round(pg_total_relation_size('leasehold.jobs') / 1e6) AS "jobsMb"`,
  )) as [{ version: string; payloadBytes: string; jobsMb: string }];
  console.log(
    `\nDashboard queries at ${total.toLocaleString('en')} jobs (PostgreSQL ${version}; payloads ${payloadBytes} bytes on average, jobs ${jobsMb} MB with its indexes and TOAST), median of 7, budget ${BUDGET_MS} ms unless the row says\n`,
  );
  console.log('| query | median ms | min | max | budget ms | within |\n|---|---:|---:|---:|---:|---|');
  for (const r of results)
    console.log(
      `| ${r.name} | ${r.medianMs} | ${r.minMs} | ${r.maxMs} | ${r.budgetMs} | ${r.withinBudget ? 'yes' : '**no**'} |`,
    );
  if (values.out) {
    mkdirSync(values.out, { recursive: true });
    writeFileSync(
      path.join(values.out, 'dashboard.json'),
      JSON.stringify(
        {
          jobs: total,
          postgres: version,
          payloadBytes: Number(payloadBytes),
          jobsMb: Number(jobsMb),
          budgetMs: BUDGET_MS,
          results,
        },
        null,
        2,
      ),
    );
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
