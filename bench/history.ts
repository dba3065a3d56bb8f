/**
 * Leasehold's own history cases: does a table full of finished jobs slow the claim? And how long
 * does each dashboard query take at 1,000,000 jobs? (The anchors have no dashboard, and
 * graphile-worker deletes finished jobs, so these compare Leasehold with itself.)
 */
import pg from 'pg';
import { sql } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { createDb } from '../db/client.ts';
import { migrateDatabase } from '../db/migrate/index.ts';
import { claim, completeManyIfLeaseHeld, enqueueMany } from '../db/queue/index.ts';
import { claimStatement } from '../db/queue/claim.ts';
import { run } from '../db/queue/executor.ts';
import { dashboardQueries, seedHistory, timeRuns } from './dashboard-queries.ts';
import { median } from './lib.ts';
import { QUEUE } from './systems/index.ts';

const CLAIM_BATCH = 100;
const dialect = new PgDialect();

export interface ClaimFigures {
  jobsPerSecond: number;
  /** Shared buffers (hit + read) one claim statement touches, per job it claims. */
  buffersPerJob: number;
  claimMs: number;
}

/** A database with `history` finished jobs (and their attempt rows), vacuumed and analysed. */
export async function historyDatabase(url: string, history: number): Promise<void> {
  await migrateDatabase(url);
  if (history === 0) return;
  const handle = createDb(url, { max: 2, statementTimeoutMs: 1_800_000 });
  try {
    await seedHistory(handle.db, history, { live: false });
    await run(handle.db, sql`VACUUM ANALYZE`);
  } finally {
    await handle.close();
  }
}

/**
 * Enqueues `jobs` ready jobs, EXPLAINs one claim, then claims and acknowledges them all in
 * batches of 100 on one connection (the timed part).
 */
export async function claimThroughput(url: string, jobs: number): Promise<ClaimFigures> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const specs = Array.from({ length: jobs }, (_, seq) => ({ queue: QUEUE, kind: 'bench.noop', payload: { seq } }));
    await enqueueMany(client, specs, { notify: false });
    await client.query('ANALYZE leasehold.jobs, leasehold.ready_jobs, leasehold.leases');
    const options = { queues: [QUEUE], workerId: 'bench', limit: CLAIM_BATCH };
    const { sql: text, params } = dialect.sqlToQuery(claimStatement(options));
    await client.query('BEGIN');
    const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`, params);
    await client.query('ROLLBACK');
    const plan = (rows[0]['QUERY PLAN'] as [{ Plan: Record<string, number>; 'Execution Time': number }])[0];
    const buffers = plan.Plan['Shared Hit Blocks']! + plan.Plan['Shared Read Blocks']!;
    const claimed = plan.Plan['Actual Rows'] || CLAIM_BATCH;

    const claimTimes: number[] = [];
    const t0 = performance.now();
    let done = 0;
    for (;;) {
      const c0 = performance.now();
      const batch = await claim(client, options);
      claimTimes.push(performance.now() - c0);
      if (batch.length === 0) break;
      await completeManyIfLeaseHeld(client, batch);
      done += batch.length;
    }
    const seconds = (performance.now() - t0) / 1000;
    return { jobsPerSecond: done / seconds, buffersPerJob: buffers / claimed, claimMs: median(claimTimes) };
  } finally {
    await client.end();
  }
}

/** Median of 7 round trips of each dashboard query (after one warm-up), in ms. */
export async function dashboardTimes(url: string): Promise<[string, number][]> {
  const handle = createDb(url, { max: 4, statementTimeoutMs: 60_000 });
  try {
    const out: [string, number][] = [];
    for (const [label, work] of await dashboardQueries(handle.db))
      out.push([label.trim(), median(await timeRuns(work))]);
    return out;
  } finally {
    await handle.close();
  }
}
