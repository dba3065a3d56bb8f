/**
 * What a stored result and a progress report cost the server (docs/performance.md, "Results and
 * progress"): WAL bytes and backend CPU per job for an acknowledgement of 1,000 jobs without a
 * result, with a 100-byte one and with a 10-kB one, and per progress write (an upsert of the
 * job's row in job_progress). One backend does every statement; its CPU is read from
 * /proc/<pid>/schedstat (run on the database's machine, as its user or root).
 *
 *   npx tsx bench/results-cost.ts [--url postgres://…] [--runs 3]
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { claim, completeManyIfLeaseHeld, enqueueMany, storableResult } from '../db/queue/index.ts';
import { writeProgress } from '../db/queue/results.ts';
import { createScratchDatabase } from '../test/scratch-database.ts';
import { migrateDatabase } from '../db/migrate/index.ts';
import { median } from './lib.ts';

const { values } = parseArgs({
  options: { url: { type: 'string' }, runs: { type: 'string' }, jobs: { type: 'string' } },
});
const serverUrl = values.url ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const RUNS = Number(values.runs ?? 3);
const JOBS = Number(values.jobs ?? 1000);

const scratch = await createScratchDatabase(serverUrl, 'bench_results_cost');
await migrateDatabase(scratch.url);
const client = new pg.Client({ connectionString: scratch.url });
await client.connect();
const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
const cpuNs = () => Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
const lsn = async () => (await client.query<{ l: string }>('SELECT pg_current_wal_insert_lsn()::text AS l')).rows[0]!.l;
const walBetween = async (from: string) =>
  Number(
    (await client.query<{ b: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1)::bigint AS b', [from]))
      .rows[0]!.b,
  );

type Variant = 'none' | '100 B' | '10 kB';
const RESULT: Record<Variant, unknown> = {
  none: undefined,
  // Random text: PostgreSQL would compress a repeated character to nothing.
  '100 B': { text: randomBytes(44).toString('hex') },
  '10 kB': { text: randomBytes(5_114).toString('hex') },
};

async function ackCost(variant: Variant, run: number): Promise<{ wal: number; cpuUs: number }> {
  const queue = `cost-${variant.replace(' ', '')}-${run}`;
  await enqueueMany(
    client,
    Array.from({ length: JOBS }, () => ({ queue, kind: 'cost' })),
  );
  const jobs = await claim(client, { queues: [queue], workerId: 'cost', limit: JOBS });
  const result = storableResult(RESULT[variant]);
  const completions = result ? jobs.map((j) => ({ id: j.id, leaseToken: j.leaseToken, result })) : jobs;
  await client.query('CHECKPOINT');
  const from = await lsn();
  const cpu = cpuNs();
  await completeManyIfLeaseHeld(client, completions);
  const cpuUs = (cpuNs() - cpu) / 1000 / JOBS;
  return { wal: (await walBetween(from)) / JOBS, cpuUs };
}

async function progressCost(run: number): Promise<{ wal: number; cpuUs: number }> {
  const queue = `cost-progress-${run}`;
  await enqueueMany(
    client,
    Array.from({ length: JOBS }, () => ({ queue, kind: 'cost' })),
  );
  const jobs = await claim(client, { queues: [queue], workerId: 'cost', limit: JOBS });
  for (const job of jobs) await writeProgress(client, job, 0.1, 'first report'); // each job's row exists
  await client.query('CHECKPOINT');
  const from = await lsn();
  const cpu = cpuNs();
  for (const job of jobs) await writeProgress(client, job, 0.5, 'copied 500 of 1,000 rows');
  const cpuUs = (cpuNs() - cpu) / 1000 / JOBS;
  const wal = (await walBetween(from)) / JOBS;
  await completeManyIfLeaseHeld(client, jobs);
  return { wal, cpuUs };
}

const figures: Record<string, { wal: number[]; cpu: number[] }> = {};
const add = (name: string, f: { wal: number; cpuUs: number }) => {
  const entry = (figures[name] ??= { wal: [], cpu: [] });
  entry.wal.push(f.wal);
  entry.cpu.push(f.cpuUs);
};
try {
  for (let run = 0; run < RUNS; run++) {
    for (const variant of ['none', '100 B', '10 kB'] as const)
      add(`ack, result ${variant}`, await ackCost(variant, run));
    add('progress write (an update of its row)', await progressCost(run));
  }
  console.log(
    `${JOBS} jobs per measurement, ${RUNS} runs, medians (server: ${(await client.query('SHOW server_version')).rows[0].server_version})`,
  );
  for (const [name, f] of Object.entries(figures)) {
    console.log(
      `${name.padEnd(40)} WAL ${median(f.wal).toFixed(0).padStart(6)} B/job   backend CPU ${median(f.cpu).toFixed(1).padStart(6)} µs/job`,
    );
  }
} finally {
  await client.end();
  await scratch.drop();
}
