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
import { migrateDatabase } from '../db/migrate/index.ts';
import { claim, ClaimOptionsCache, completeManyIfLeaseHeld, enqueueMany } from '../db/queue/index.ts';
import { median } from './lib.ts';
import { QUEUE } from './systems/index.ts';

/** The tables a job passes through from enqueue to done (schema v1). */
export const HOT_TABLES = ['jobs', 'ready_jobs', 'leases'] as const;
const CLAIM_BATCH = 500;
const KIND = 'bench.noop';

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
  await migrateDatabase(url);
  const client = new pg.Client({ connectionString: url });
  const holder = new pg.Client({ connectionString: url });
  await client.connect();
  await holder.connect();
  try {
    if (held) {
      // An xid of its own, kept until the end: the oldest horizon of the whole database.
      await holder.query('BEGIN');
      await holder.query('SELECT pg_current_xact_id()');
    }
    const cache = new ClaimOptionsCache({ bound: true });
    const options = {
      queues: [QUEUE],
      workerId: 'bench-horizon',
      limit: CLAIM_BATCH,
      leaseSeconds: 60,
      kinds: [{ kind: KIND, versions: [1] }],
    };
    const out: HorizonRound[] = [];
    let seq = 0;
    for (let round = 0; round < rounds; round++) {
      await enqueueMany(
        client,
        Array.from({ length: perRound }, () => ({ queue: QUEUE, kind: KIND, payload: { seq: seq++ } })),
        { notify: false },
      );
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
