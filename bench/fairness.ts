/**
 * The fairness case (`npm run bench -- --cases fairness`; docs/performance.md, "Fair groups"):
 * group A enqueues `flood` jobs, a worker starts draining them, and then groups B…K enqueue 10
 * jobs each. What is measured is how long B…K's jobs wait, from enqueue to start, each read
 * from the system's own table: with their groups (Leasehold's turns; pg-boss 12's `group` with
 * `groupConcurrency`, a per-group concurrency limit across nodes, its only group feature) and
 * without (both take jobs in their order, so B…K wait behind A's backlog). One worker of 10
 * slots, handlers of 2 ms: both systems at the same settings.
 */
import pg from 'pg';
import { PgBoss } from 'pg-boss';
import { z } from 'zod';
import { claim, ClaimOptionsCache, enqueueMany } from '../db/queue/index.ts';
import { createWorker } from '../workers/create-worker.ts';
import { defineHandler } from '../workers/handler.ts';
import { QUEUE } from './systems/types.ts';

export const FAIR_SLOTS = 10;
/** pg-boss's groupConcurrency in the grouped run: A may hold 2 of the 10 slots, B…K the rest. */
export const PG_BOSS_GROUP_CONCURRENCY = 2;
const SMALL_GROUPS = 'BCDEFGHIJK'.split('');
const SMALL_EACH = 10;
const HANDLER_MS = 2;

/** A's flood, and how long B…K's jobs are waited for (one still waiting then counts its wait so far). */
export interface FairnessSizes {
  flood: number;
  capMs: number;
}

export interface FairnessFigures {
  /** B…K's waits, enqueue to start, ms. */
  p50: number;
  p99: number;
  /** Of B…K's jobs, those not started within the cap: their waits so far are counted (lower bounds). */
  waiting: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: string, probe: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) {
      console.error(`[bench] fairness: still waiting for ${what} after ${timeoutMs} ms`);
      return false;
    }
    await sleep(50);
  }
  return true;
}

/** B…K's waits from `sql` (columns `started`, `created`: a job not started yet waits until now). */
async function waits(pool: pg.Pool, sql: string): Promise<FairnessFigures> {
  const [row] = (
    await pool.query<{ p50: number; p99: number; n: number; waiting: number }>(
      `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY w)::float8 AS p50,
              percentile_cont(0.99) WITHIN GROUP (ORDER BY w)::float8 AS p99, count(*)::int AS n,
              count(*) FILTER (WHERE started IS NULL)::int AS waiting
       FROM (SELECT started, extract(epoch FROM coalesce(started, now()) - created) * 1000 AS w FROM (${sql}) s) s`,
    )
  ).rows;
  if (!row || row.n !== SMALL_GROUPS.length * SMALL_EACH)
    throw new Error(`fairness: ${row?.n ?? 0} small jobs measured`);
  return { p50: row.p50, p99: row.p99, waiting: row.waiting };
}

/**
 * Once the worker is draining A's flood, B…K send their jobs; then B…K's waits, from `small`
 * (their start and enqueue times as `started`, `created`), once all started or at `capMs`.
 */
async function smallWaits(
  pool: pg.Pool,
  run: { capMs: number; draining: () => boolean; send: (group: string) => Promise<void>; small: string },
): Promise<FairnessFigures> {
  if (!(await until('the flood to be draining', async () => run.draining(), 60_000)))
    throw new Error('the worker started no job');
  for (const group of SMALL_GROUPS) await run.send(group);
  await until(
    'B…K to start',
    async () => {
      const { rows } = await pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM (${run.small}) s WHERE started IS NULL`,
      );
      return rows[0]!.n === 0;
    },
    run.capMs,
  );
  return waits(pool, run.small);
}

/** Leasehold: an in-process worker of FAIR_SLOTS slots; `grouped` gives every job its group. */
export async function leaseholdFairness(
  url: string,
  { flood, capMs }: FairnessSizes,
  grouped: boolean,
): Promise<FairnessFigures> {
  const pool = new pg.Pool({ connectionString: url, max: 8 });
  const job = (group: string, small: boolean) => ({
    queue: QUEUE,
    kind: 'bench.fair',
    payload: { small },
    ...(grouped ? { group } : {}),
  });
  try {
    for (let i = 0; i < flood; i += 20_000) {
      await enqueueMany(
        pool,
        Array.from({ length: Math.min(20_000, flood - i) }, () => job('A', false)),
      );
    }
    let started = 0;
    const worker = createWorker({
      pool,
      queues: [QUEUE],
      concurrency: FAIR_SLOTS,
      batchSize: FAIR_SLOTS,
      pollMs: 200,
      maintenance: false,
      jobs: [
        defineHandler({
          kind: 'bench.fair',
          versions: [1],
          schema: z.unknown(),
          timeoutMs: 60_000,
          handle: async () => {
            started += 1;
            await sleep(HANDLER_MS);
          },
        }),
      ],
    });
    await worker.start();
    try {
      return await smallWaits(pool, {
        capMs,
        draining: () => started >= FAIR_SLOTS,
        send: (group) =>
          enqueueMany(
            pool,
            Array.from({ length: SMALL_EACH }, () => job(group, true)),
          ).then(() => {}),
        small: `SELECT started_at AS started, created_at AS created FROM leasehold.jobs WHERE queue = '${QUEUE}' AND payload @> '{"small": true}'`,
      });
    } finally {
      await worker.stop(0);
    }
  } finally {
    await pool.end();
  }
}

/**
 * pg-boss 12: `work()` in batches of FAIR_SLOTS, fetched again at once while full
 * (burstWhenBatchFull); `grouped` sends `group: { id }` and works with `groupConcurrency`.
 */
export async function pgBossFairness(
  url: string,
  { flood, capMs }: FairnessSizes,
  grouped: boolean,
): Promise<FairnessFigures> {
  const boss = new PgBoss({ connectionString: url, max: 8, migrate: false, supervise: false, schedule: false });
  boss.on('error', (error) => console.error('[pg-boss]', error));
  await boss.start();
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  const job = (group: string, small: boolean) => ({ data: { small }, ...(grouped ? { group: { id: group } } : {}) });
  try {
    for (let i = 0; i < flood; i += 20_000) {
      await boss.insert(
        QUEUE,
        Array.from({ length: Math.min(20_000, flood - i) }, () => job('A', false)),
      );
    }
    let started = 0;
    await boss.work<{ small: boolean }>(
      QUEUE,
      {
        // Batches of FAIR_SLOTS, fetched again at once while they come back full (with
        // batchSize 1 and FAIR_SLOTS local workers each waited its polling interval per job).
        batchSize: FAIR_SLOTS,
        burstWhenBatchFull: true,
        pollingIntervalSeconds: 0.5,
        ...(grouped ? { groupConcurrency: PG_BOSS_GROUP_CONCURRENCY } : {}),
      },
      async (jobs) => {
        started += jobs.length;
        await sleep(HANDLER_MS);
      },
    );
    return await smallWaits(pool, {
      capMs,
      draining: () => started >= FAIR_SLOTS,
      send: (group) =>
        boss
          .insert(
            QUEUE,
            Array.from({ length: SMALL_EACH }, () => job(group, true)),
          )
          .then(() => {}),
      small: `SELECT started_on AS started, created_on AS created FROM pgboss.job WHERE name = '${QUEUE}' AND data @> '{"small": true}'`,
    });
  } finally {
    await boss.stop({ graceful: false, close: true });
    await pool.end();
  }
}

/**
 * A grouped claim's latency with `groups` groups holding ready jobs (as many each as the claims
 * need: one each from 1,000 groups on), Leasehold alone: `claims` claims of FAIR_SLOTS jobs one
 * after another, each timed from send to rows; their median, ms.
 */
export async function groupedClaimLatency(url: string, groups: number, claims = 50): Promise<number> {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  try {
    // Enough jobs per group for every claim to take a whole batch.
    const each = Math.max(1, Math.ceil(((claims + 5) * FAIR_SLOTS) / groups));
    const total = groups * each;
    for (let i = 0; i < total; i += 20_000) {
      await enqueueMany(
        pool,
        Array.from({ length: Math.min(20_000, total - i) }, (_, j) => ({
          queue: QUEUE,
          kind: 'bench.fair',
          group: `g${(i + j) % groups}`,
        })),
      );
    }
    await pool.query('ANALYZE leasehold.grouped_ready_jobs, leasehold.ready_groups');
    const options = {
      queues: [QUEUE],
      workerId: 'bench',
      limit: FAIR_SLOTS,
      kinds: [{ kind: 'bench.fair', versions: [1] }],
      grouped: true,
    };
    // As a worker's claimer claims: with its cache (which also spares a queue without group
    // limits the look for them, but once a second).
    const cache = new ClaimOptionsCache();
    for (let i = 0; i < 5; i++) await claim(pool, options, cache); // prepared, planned
    const times: number[] = [];
    for (let i = 0; i < claims; i++) {
      const t0 = performance.now();
      const taken = await claim(pool, options, cache);
      times.push(performance.now() - t0);
      if (taken.length === 0) throw new Error(`grouped claim latency: nothing left to claim after ${i} claims`);
    }
    times.sort((a, b) => a - b);
    return times[Math.floor(times.length / 2)]!;
  } finally {
    await pool.end();
  }
}
