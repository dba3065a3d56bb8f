/**
 * The held-horizon case: what a long transaction elsewhere in the database does to the claim.
 * While any session holds a transaction with an xid, VACUUM cannot remove the row versions a
 * drain leaves, so each claim walks more dead entries than the last. Rounds of `perRound` jobs
 * (one bulk enqueue, then claims of 500 with batched acknowledgements until empty) run back to
 * back, with and without such a transaction held; each round gives its rate and its claims'
 * median, and the end gives the dead row versions and the size of every table on the hot path.
 *
 * The claims are made as a worker's producer makes them: with its kinds and through a cache of
 * its own that keeps the claim's lower bound (db/queue/claim.ts), so each walk starts after the
 * last key taken, and from the head again after a short claim or every second.
 */
import pg from 'pg';
import pino from 'pino';
import { z } from 'zod';
import { createDb } from '../db/client.ts';
import { migrateDatabase } from '../db/migrate/index.ts';
import {
  claim,
  ClaimOptionsCache,
  completeManyIfLeaseHeld,
  enqueue,
  enqueueMany,
  MAX_BULK_ENQUEUE,
} from '../db/queue/index.ts';
import { parseWorkerConfig } from '../workers/config.ts';
import { defineHandler, HandlerRegistry } from '../workers/handler.ts';
import { Worker } from '../workers/worker.ts';
import { median } from './lib.ts';
import { QUEUE } from './systems/index.ts';

/** The tables a job passes through from enqueue to done (schema v1). */
export const HOT_TABLES = ['jobs', 'ready_jobs', 'leases'] as const;
const CLAIM_BATCH = 500;
const KIND = 'bench.noop';

/** Enqueues `n` jobs of the bench's kind without wake-ups, numbered from `first`; returns the next number. */
async function enqueueJobs(client: pg.Client, n: number, first = 0): Promise<number> {
  for (let done = 0; done < n; done += MAX_BULK_ENQUEUE) {
    const size = Math.min(n - done, MAX_BULK_ENQUEUE);
    const jobs = Array.from({ length: size }, (_, i) => ({
      queue: QUEUE,
      kind: KIND,
      payload: { seq: first + done + i },
    }));
    await enqueueMany(client, jobs, { notify: false });
  }
  return first + n;
}

/** Migrates `url`'s database and opens two connections: one for the work, one to hold a horizon. */
async function migratedWithHolder(url: string): Promise<{ client: pg.Client; holder: pg.Client }> {
  await migrateDatabase(url);
  const client = new pg.Client({ connectionString: url });
  const holder = new pg.Client({ connectionString: url });
  await client.connect();
  await holder.connect();
  return { client, holder };
}

/** Takes an xid on `holder` and keeps it until its ROLLBACK: the oldest horizon of the whole database. */
async function holdHorizon(holder: pg.Client): Promise<void> {
  await holder.query('BEGIN');
  await holder.query('SELECT pg_current_xact_id()');
}

/** Claims of CLAIM_BATCH as a worker's producer makes them: its kind, its own bounded cache. */
function asAWorkerClaims(workerId: string) {
  return {
    cache: new ClaimOptionsCache({ bound: true }),
    options: {
      queues: [QUEUE],
      workerId,
      limit: CLAIM_BATCH,
      leaseSeconds: 60,
      kinds: [{ kind: KIND, versions: [1] }],
    },
  };
}

export interface HorizonRound {
  jobsPerSecond: number;
  claimP50Ms: number;
}

export interface HorizonFigures {
  rounds: HorizonRound[];
  /** Per hot table at the end: dead row versions and total size (with indexes and TOAST). */
  tables: { table: string; deadTuples: number; bytes: number }[];
}

export async function heldHorizon(
  url: string,
  { rounds, perRound, held }: { rounds: number; perRound: number; held: boolean },
): Promise<HorizonFigures> {
  const { client, holder } = await migratedWithHolder(url);
  try {
    if (held) await holdHorizon(holder);
    const { cache, options } = asAWorkerClaims('bench-horizon');
    const out: HorizonRound[] = [];
    let seq = 0;
    for (let round = 0; round < rounds; round++) {
      seq = await enqueueJobs(client, perRound, seq);
      const claimTimes: number[] = [];
      let done = 0;
      const t0 = performance.now();
      for (;;) {
        const c0 = performance.now();
        const batch = await claim(client, options, cache);
        claimTimes.push(performance.now() - c0);
        if (batch.length === 0) break;
        await completeManyIfLeaseHeld(client, batch);
        done += batch.length;
      }
      if (done !== perRound) throw new Error(`horizon round ${round + 1}: ${done} of ${perRound} jobs drained`);
      out.push({ jobsPerSecond: done / ((performance.now() - t0) / 1000), claimP50Ms: median(claimTimes) });
    }
    // Counts reach the statistics when a backend goes idle, at most once a second.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const { rows } = await client.query<{ table: string; dead: string; bytes: string }>(
      `SELECT relname AS table, n_dead_tup::text AS dead, pg_total_relation_size(relid)::text AS bytes
       FROM pg_catalog.pg_stat_user_tables WHERE schemaname = 'leasehold' AND relname = ANY($1::text[]) ORDER BY relname`,
      [[...HOT_TABLES]],
    );
    return {
      rounds: out,
      tables: rows.map((r) => ({ table: r.table, deadTuples: Number(r.dead), bytes: Number(r.bytes) })),
    };
  } finally {
    if (held) await holder.query('ROLLBACK').catch(() => {});
    await holder.end().catch(() => {});
    await client.end().catch(() => {});
  }
}

export interface SteadyWindow {
  jobsPerSecond: number;
  claimP50Ms: number;
  /** The slowest claim: a walk from the head reads every dead entry behind the bound. */
  claimMaxMs: number;
  /** The acknowledgements' and the enqueues' medians: where else the window's time went. */
  ackP50Ms: number;
  enqueueP50Ms: number;
}

/**
 * A backlog that never empties under a held horizon: `backlog` jobs ready from the start, and
 * after each claim of 500 and its acknowledgement as many jobs enqueued as it took (enqueue =
 * drain), for `seconds`, while another session holds an xid. Claims are made as the worker's
 * producer makes them (its kinds, its lower bound). Each of `windows` equal windows gives its
 * claims' median and its rate: the bound keeps the walk after the last key taken, but the walk
 * from the head (every second) reads every dead entry left since the horizon was taken.
 */
export async function steadyBacklog(
  url: string,
  { seconds, backlog, windows }: { seconds: number; backlog: number; windows: number },
): Promise<{
  windows: SteadyWindow[];
  claims: number;
  /** Per hot table: autovacuum and autoanalyze runs, and autovacuum's time (PostgreSQL 18). */
  autovacuum: { table: string; runs: number; ms: number | null }[];
}> {
  const { client, holder } = await migratedWithHolder(url);
  try {
    let seq = await enqueueJobs(client, backlog);
    await client.query('VACUUM ANALYZE');
    await holdHorizon(holder);
    const { cache, options } = asAWorkerClaims('bench-steady');
    const windowMs = (seconds * 1000) / windows;
    const per: { times: number[]; acks: number[]; enqueues: number[]; jobs: number }[] = Array.from(
      { length: windows },
      () => ({ times: [], acks: [], enqueues: [], jobs: 0 }),
    );
    const t0 = performance.now();
    let claims = 0;
    for (;;) {
      const at = performance.now() - t0;
      if (at >= seconds * 1000) break;
      const window = per[Math.min(windows - 1, Math.floor(at / windowMs))]!;
      const c0 = performance.now();
      const batch = await claim(client, options, cache);
      window.times.push(performance.now() - c0);
      claims += 1;
      if (batch.length === 0) throw new Error('steady backlog: a claim found nothing, the backlog emptied');
      const a0 = performance.now();
      await completeManyIfLeaseHeld(client, batch);
      const e0 = performance.now();
      window.acks.push(e0 - a0);
      window.jobs += batch.length;
      seq = await enqueueJobs(client, batch.length, seq);
      window.enqueues.push(performance.now() - e0);
    }
    // Autovacuum cannot remove what the horizon keeps, but it still runs against the hot tables.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const vacuums = await client.query<{ table: string; runs: string; ms: string | null }>(
      `SELECT relname AS table, (autovacuum_count + autoanalyze_count)::text AS runs,
              (to_jsonb(s) ->> 'total_autovacuum_time') AS ms
         FROM pg_catalog.pg_stat_user_tables s WHERE schemaname = 'leasehold' AND relname = ANY($1::text[]) ORDER BY relname`,
      [[...HOT_TABLES]],
    );
    return {
      autovacuum: vacuums.rows.map((r) => ({
        table: r.table,
        runs: Number(r.runs),
        ms: r.ms === null ? null : Number(r.ms),
      })),
      windows: per.map((w) => ({
        jobsPerSecond: w.jobs / (windowMs / 1000),
        claimP50Ms: median(w.times),
        claimMaxMs: Math.max(...w.times),
        ackP50Ms: median(w.acks),
        enqueueP50Ms: median(w.enqueues),
      })),
      claims,
    };
  } finally {
    await holder.query('ROLLBACK').catch(() => {});
    await holder.end().catch(() => {});
    await client.end().catch(() => {});
  }
}

/**
 * A priority jump: a worker (the product's, LISTEN on or off) drains a backlog of `backlog`
 * jobs whose handlers take `handlerMs`, and every `everyMs` one job of priority 100 is enqueued
 * (its wake-up sent, as enqueue does by default). It is first in the claim order but behind the
 * claims' lower bound, found when a claim walks from the head again: on the wake-up for its
 * queue, or within the bound's restart interval. Its wait is started_at − created_at (the
 * database's clock). Throws if the backlog emptied before the last one was enqueued.
 */
export async function priorityJump(
  url: string,
  o: { backlog: number; samples: number; everyMs: number; concurrency: number; handlerMs: number; listen: boolean },
): Promise<{ waitsMs: number[]; backlogLeft: number }> {
  await migrateDatabase(url);
  const handle = createDb(url, { max: 8, applicationName: 'bench-priority' });
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  let worker: Worker | undefined;
  try {
    await enqueueJobs(client, o.backlog);
    await client.query('VACUUM ANALYZE');
    const config = parseWorkerConfig(
      [
        '--queues',
        QUEUE,
        '--concurrency',
        String(o.concurrency),
        '--log-level',
        'warn',
        ...(o.listen ? [] : ['--no-listen']),
      ],
      {},
    );
    const registry = new HandlerRegistry([
      defineHandler({
        kind: KIND,
        versions: [1],
        schema: z.object({ seq: z.number() }).passthrough(),
        timeoutMs: 30_000,
        handle: () => new Promise((resolve) => setTimeout(resolve, o.handlerMs)),
      }),
    ]);
    worker = new Worker(config, { db: handle.db, databaseUrl: url, registry, logger: pino({ level: 'warn' }) });
    await worker.start();
    const ids: string[] = [];
    for (let i = 0; i < o.samples; i++) {
      await new Promise((resolve) => setTimeout(resolve, o.everyMs));
      const { id } = await enqueue(client, { queue: QUEUE, kind: KIND, payload: { seq: -1 - i }, priority: 100 });
      ids.push(id);
    }
    const backlogLeft = Number(
      (
        await client.query<{ n: string }>(
          `SELECT count(*) AS n FROM leasehold.jobs WHERE state = 'ready' AND priority = 0`,
        )
      ).rows[0]!.n,
    );
    if (backlogLeft === 0) throw new Error('priority jump: the backlog emptied before the last sample was enqueued');
    const started = async () =>
      (
        await client.query<{ wait_ms: number | null }>(
          `SELECT (extract(epoch FROM started_at - created_at) * 1000)::float8 AS wait_ms FROM leasehold.jobs WHERE id = ANY($1::uuid[])`,
          [ids],
        )
      ).rows;
    const until = performance.now() + 30_000;
    let rows = await started();
    while (rows.some((r) => r.wait_ms === null) && performance.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      rows = await started();
    }
    if (rows.length !== ids.length || rows.some((r) => r.wait_ms === null))
      throw new Error('priority jump: a priority job did not start within 30 s');
    return { waitsMs: rows.map((r) => Number(r.wait_ms)), backlogLeft };
  } finally {
    await worker?.stop(0).catch(() => {});
    await client.end().catch(() => {});
    await handle.close().catch(() => {});
  }
}
