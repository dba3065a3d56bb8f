/**
 * What worker processes contend on while they drain: starts an embedded PostgreSQL 18 of its
 * own with `pg_stat_statements` loaded, runs the bench's drain case against it (`npm run bench
 * -- --cases drain`, the systems named in SYSTEMS), and meanwhile samples, every SAMPLE_MS,
 * the client backends' wait events and the ungranted locks of every bench database. At the end
 * it prints, per database (one per system, case and run), the samples by wait event, the
 * ungranted locks by type and relation, and the statements by total execution time with their
 * time per call and per job.
 *
 *   npx tsx bench/probes/contention.ts                       # leasehold,graphile-worker, 1 run
 *   SYSTEMS=leasehold RUNS=3 SAMPLE_MS=5 npx tsx bench/probes/contention.ts
 *
 * Its server lives in .leasehold/contention-server (stopped at the end); the report goes to
 * stdout and, with the bench's JSON, to .leasehold/contention (PROBE_OUT to change).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { PROJECT_DIR, selectDatabase } from '../../cli/database-select.ts';

const SYSTEMS = process.env.SYSTEMS ?? 'leasehold,graphile-worker';
const RUNS = process.env.RUNS ?? '1';
const SAMPLE_MS = Number(process.env.SAMPLE_MS ?? 10);
const OUT = process.env.PROBE_OUT ?? path.join(PROJECT_DIR, '.leasehold', 'contention');
mkdirSync(OUT, { recursive: true });

const server = await selectDatabase({
  dataDir: path.join(PROJECT_DIR, '.leasehold', 'contention-server'),
  database: 'postgres',
  settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.max': 10000 },
  log: (line) => console.error(`[contention] ${line}`),
});

const admin = new pg.Client({ connectionString: server.url });
await admin.connect();
await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
await admin.query('SELECT pg_stat_statements_reset()');

interface DbTally {
  name: string;
  samples: number;
  backends: number;
  waits: Map<string, number>;
  locks: Map<string, number>;
}
const tallies = new Map<number, DbTally>();
const tallyOf = (oid: number, name: string) => {
  let t = tallies.get(oid);
  if (!t) {
    t = { name, samples: 0, backends: 0, waits: new Map(), locks: new Map() };
    tallies.set(oid, t);
  }
  return t;
};
const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);

let sampling = true;
const sampler = (async () => {
  while (sampling) {
    const activity = await admin.query<{ datid: number; datname: string; state: string | null; wait: string | null }>(
      `SELECT datid, datname, state,
              CASE WHEN wait_event IS NULL THEN NULL ELSE wait_event_type || ':' || wait_event END AS wait
         FROM pg_stat_activity
        WHERE backend_type = 'client backend' AND datname LIKE 'bench%' AND pid <> pg_backend_pid()`,
    );
    const seen = new Set<number>();
    for (const row of activity.rows) {
      const t = tallyOf(row.datid, row.datname);
      if (!seen.has(row.datid)) {
        t.samples++;
        seen.add(row.datid);
      }
      if (row.state === null) continue; // a backend still starting
      if (row.state === 'idle') bump(t.waits, 'idle (waiting for the client)');
      else if (row.state.startsWith('idle in transaction')) bump(t.waits, `${row.state}`);
      else {
        t.backends++;
        bump(t.waits, row.wait ?? 'on CPU (active, no wait event)');
      }
    }
    const locks = await admin.query<{ datid: number; what: string }>(
      `SELECT l.database AS datid,
              l.locktype || ' ' || l.mode || ' ' || coalesce(c.relname, l.relation::text, l.transactionid::text, '') AS what
         FROM pg_locks l LEFT JOIN pg_class c ON c.oid = l.relation
        WHERE NOT l.granted`,
    );
    for (const row of locks.rows) {
      const t = tallies.get(row.datid);
      if (t) bump(t.locks, row.what);
      else bump(tallyOf(-1, '(lock without a database: transaction ids, tuples)').locks, row.what);
    }
    await new Promise((r) => setTimeout(r, SAMPLE_MS));
  }
})();

const bench = spawn(
  'npm',
  ['run', 'bench', '--', '--cases', 'drain', '--systems', SYSTEMS, '--runs', RUNS, '--out', OUT],
  { stdio: 'inherit', env: { ...process.env, DATABASE_URL: server.url } },
);
const code = await new Promise<number>((resolve) => bench.once('exit', (c) => resolve(c ?? 1)));
sampling = false;
await sampler;

const statements = await admin.query<{
  dbid: number;
  calls: string;
  total: number;
  rows: string;
  query: string;
  hit: string;
  read: string;
  dirtied: string;
  wal: string;
}>(
  `SELECT dbid, calls, total_exec_time AS total, rows, shared_blks_hit AS hit, shared_blks_read AS read,
          shared_blks_dirtied AS dirtied, wal_bytes AS wal, left(regexp_replace(query, '\\s+', ' ', 'g'), 160) AS query
     FROM pg_stat_statements ORDER BY dbid, total_exec_time DESC`,
);
await admin.end();
await server.stop();

const lines: string[] = [];
const top = (m: Map<string, number>, n: number, total: number) =>
  [...m.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(
      ([k, v]) => `    ${((100 * v) / Math.max(1, total)).toFixed(1).padStart(5)}%  ${v.toString().padStart(6)}  ${k}`,
    );
for (const [oid, t] of tallies) {
  if (oid === -1) continue;
  const all = [...t.waits.values()].reduce((a, b) => a + b, 0);
  lines.push(
    `== ${t.name} (oid ${oid}): ${t.samples} samples, ${(t.backends / Math.max(1, t.samples)).toFixed(2)} active backends a sample`,
  );
  lines.push('  backend states and wait events (share of backend samples):', ...top(t.waits, 12, all));
  const lockTotal = [...t.locks.values()].reduce((a, b) => a + b, 0);
  lines.push(`  ungranted locks seen: ${lockTotal}`, ...top(t.locks, 8, lockTotal));
  const mine = statements.rows.filter((s) => s.dbid === oid);
  const sum = mine.reduce((a, s) => a + s.total, 0);
  lines.push(`  statements: ${sum.toFixed(0)} ms of execution in all`);
  for (const s of mine.slice(0, 8)) {
    lines.push(
      `    ${s.total.toFixed(0).padStart(7)} ms  ${s.calls.padStart(6)} calls  ${(s.total / Number(s.calls)).toFixed(3).padStart(8)} ms/call  rows ${s.rows.padStart(7)}  hit ${s.hit}  dirtied ${s.dirtied}  wal ${s.wal}  ${s.query}`,
    );
  }
}
const other = tallies.get(-1);
if (other) lines.push('== ungranted locks outside a database', ...top(other.locks, 8, 1));
const report = lines.join('\n');
writeFileSync(path.join(OUT, 'contention.txt'), `${report}\n`);
console.log(report);
process.exit(code);
