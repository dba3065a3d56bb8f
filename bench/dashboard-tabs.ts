/**
 * `npm run bench:tabs`: the overview's database time with 20 open tabs. Seeds a fresh database
 * with --jobs of history (bench/dashboard-queries.ts), then runs --tabs simulated tabs, each
 * polling the overview every --poll-ms (the page's POLL.overview) for --seconds, their first
 * polls spread over one interval as real tabs are: once reading the database on every poll,
 * once through the dashboard's shared cache (lib/live-cache.ts, FRESHNESS.overview). Each tab's
 * poll is the overview's read as GET /api/overview makes it (db/queries/overview.ts, then the
 * queue alerts), without the HTTP and the session.
 *
 * Database time: PostgreSQL's own count of the time its sessions spent running statements in the
 * bench's database (pg_stat_database.active_time: the sum of statement durations, PostgreSQL 14+;
 * pg_stat_statements is not loaded on every server), read before and after each phase, the
 * phase's pool ended so its sessions report; statements as xact_commit (each read autocommits).
 * A phase with no tab first measures what the server counts meanwhile without the dashboard.
 * Also the time spent awaiting the reads, as the client saw it.
 *
 * Run with the react-server condition (the npm script does): lib/live-cache.ts is server-only.
 *
 *   npm run bench:tabs -- [--jobs 100000] [--tabs 20] [--seconds 60] [--poll-ms 5000] [--out DIR]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { PROJECT_DIR, selectDatabase } from '../cli/database-select.ts';
import { createDb } from '../db/client.ts';
import { migrateDatabase } from '../db/migrate/index.ts';
import { evaluateAlerts, listQueueAlerts } from '../db/queue/alerts.ts';
import { overview } from '../db/queries/overview.ts';
import { FRESHNESS, liveQuery } from '../lib/live-cache.ts';
import { createScratchDatabase } from '../test/scratch-database.ts';
import { seedHistory } from './dashboard-queries.ts';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '100000' },
    tabs: { type: 'string', default: '20' },
    seconds: { type: 'string', default: '60' },
    'poll-ms': { type: 'string', default: '5000' },
    out: { type: 'string' },
  },
});
const total = Number(values.jobs);
const tabs = Number(values.tabs);
const seconds = Number(values.seconds);
const pollMs = Number(values['poll-ms']);

const server = await selectDatabase({
  databaseUrl: process.env.DATABASE_URL,
  dataDir: path.join(PROJECT_DIR, '.leasehold', 'bench-postgres'),
  database: 'postgres',
  unsafeFast: true,
  log: (l) => console.error(`[bench] ${l}`),
});
const scratch = await createScratchDatabase(server.url, 'leasehold_tabs');
const { url } = scratch;
const database = new URL(url).pathname.slice(1);

interface DbCounters {
  activeMs: number;
  statements: number;
}

/** The bench database's counters, from a connection of its own (to `postgres`), a fresh snapshot. */
async function counters(): Promise<DbCounters> {
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  try {
    await client.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await client.query<{ active: number; xacts: string }>(
      'SELECT active_time::float8 AS active, xact_commit::text AS xacts FROM pg_stat_database WHERE datname = $1',
      [database],
    );
    return { activeMs: rows[0]!.active, statements: Number(rows[0]!.xacts) };
  } finally {
    await client.end();
  }
}

interface Phase {
  phase: string;
  polls: number;
  reads: number;
  readsPerSecond: number;
  statements: number;
  dbActiveMs: number;
  dbMsPerSecond: number;
  awaitedReadMs: number;
  pollMedianMs: number;
}

/** The overview's read as GET /api/overview makes it (lib/dal/overview.ts), counted and timed. */
function overviewRead(db: ReturnType<typeof createDb>['db'], tally: { reads: number; awaitedMs: number }) {
  return async () => {
    tally.reads++;
    const started = performance.now();
    const o = await overview(db);
    const alerts = evaluateAlerts(o.queues, new Map(), await listQueueAlerts(db));
    tally.awaitedMs += performance.now() - started;
    return { o, alerts };
  };
}

/**
 * One phase: `tabs` tabs polling for `seconds`, each poll a read, or the shared cache's answer;
 * or none (`idle`): what the server counts for the database meanwhile without a tab (autovacuum,
 * statistics), the floor under the other two.
 */
async function phase(name: string, mode: 'idle' | 'direct' | 'cached'): Promise<Phase> {
  const cached = mode === 'cached';
  // Plans and buffers warm first, on a pool of its own (its statements not counted).
  const warmUp = createDb(url, { max: 2 });
  await overviewRead(warmUp.db, { reads: 0, awaitedMs: 0 })();
  await warmUp.close();
  // The web's pool (lib/db.ts).
  const { db, close } = createDb(url, { max: 10, applicationName: 'leasehold-dashboard' });
  const tally = { reads: 0, awaitedMs: 0 };
  const read = overviewRead(db, tally);
  const shared = liveQuery('overview', read);
  const poll = cached ? () => shared.read() : read;
  const before = await counters();
  const end = Date.now() + seconds * 1000;
  const pollTimes: number[] = [];
  const tab = async (offset: number) => {
    await sleep(offset);
    while (Date.now() < end) {
      const started = performance.now();
      await poll();
      pollTimes.push(performance.now() - started);
      await sleep(pollMs);
    }
  };
  if (mode === 'idle') await sleep(seconds * 1000);
  else await Promise.all(Array.from({ length: tabs }, (_, i) => tab((i * pollMs) / tabs + Math.random() * 50)));
  await close();
  // Ended sessions report their statistics; give the collector a moment.
  await sleep(1_500);
  const after = await counters();
  pollTimes.sort((a, b) => a - b);
  const dbActiveMs = after.activeMs - before.activeMs;
  const result = {
    phase: name,
    polls: pollTimes.length,
    reads: tally.reads,
    readsPerSecond: round(tally.reads / seconds),
    statements: after.statements - before.statements,
    dbActiveMs: round(dbActiveMs),
    dbMsPerSecond: round(dbActiveMs / seconds),
    awaitedReadMs: round(tally.awaitedMs),
    pollMedianMs: round(pollTimes[Math.floor(pollTimes.length / 2)] ?? 0),
  };
  console.error(`[bench] ${name}: ${JSON.stringify(result)}`);
  return result;
}

try {
  await migrateDatabase(url);
  const { db, close, pool } = createDb(url, { max: 8, statementTimeoutMs: 600_000 });
  const started = Date.now();
  await seedHistory(db, total, { live: true });
  const client = await pool.connect();
  await client.query('VACUUM ANALYZE');
  const version = (await client.query<{ v: string }>(`SELECT current_setting('server_version') AS v`)).rows[0]!.v;
  client.release();
  await close();
  console.error(`[bench] seeded and vacuumed in ${((Date.now() - started) / 1000).toFixed(1)} s`);

  const results = [
    await phase('no tab (the floor)', 'idle'),
    await phase('without the cache', 'direct'),
    await phase('with the shared cache', 'cached'),
  ];
  console.log(
    `\nThe overview with ${tabs} tabs polling every ${pollMs / 1000} s for ${seconds} s, ${total.toLocaleString('en')} jobs (PostgreSQL ${version}; cache freshness ${FRESHNESS.overview / 1000} s)\n`,
  );
  console.log(
    '| | polls | database reads | reads/s | statements | database time ms | database ms/s | awaited ms | poll median ms |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  for (const r of results)
    console.log(
      `| ${r.phase} | ${r.polls} | ${r.reads} | ${r.readsPerSecond} | ${r.statements} | ${r.dbActiveMs} | ${r.dbMsPerSecond} | ${r.awaitedReadMs} | ${r.pollMedianMs} |`,
    );
  if (values.out) {
    mkdirSync(values.out, { recursive: true });
    writeFileSync(
      path.join(values.out, 'dashboard-tabs.json'),
      JSON.stringify({ jobs: total, tabs, seconds, pollMs, postgres: version, results }, null, 2),
    );
  }
} finally {
  await scratch.drop().catch(() => {});
  await server.stop();
}

function sleep(ms: number) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function round(n: number) {
  return Math.round(n * 10) / 10;
}
