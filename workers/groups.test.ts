import pg from 'pg';
import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  claim,
  defineJob,
  enqueue,
  enqueueMany,
  setGroupLimit,
  sweepReadyGroups,
  withMaintenanceLock,
} from '../db/queue/index.ts';
import { run } from '../db/queue/executor.ts';
import { silentLogger } from '../test/attempts.ts';
import { useTestDatabase } from '../test/db.ts';
import { uniqueQueue } from '../test/factories.ts';
import { until } from '../test/wait.ts';
import { createWorker, type LeaseholdWorker } from './create-worker.ts';
import { defineHandler } from './handler.ts';

const t = useTestDatabase({ max: 10 });
const started: LeaseholdWorker[] = [];
const pools: pg.Pool[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).map((w) => w.stop(0)));
});
afterAll(async () => {
  await Promise.all(pools.splice(0).map((p) => p.end().catch(() => {})));
});

/** A contract whose jobs are grouped by account, in a queue of its own. */
function accountJob() {
  const queue = uniqueQueue();
  const job = defineJob({
    kind: `account-${queue}`,
    version: 1,
    queue,
    schema: z.strictObject({ account: z.string(), n: z.int() }),
    group: (p) => p.account,
  });
  return { queue, job };
}

function worker(
  handlers: Parameters<typeof createWorker>[0]['jobs'],
  queues: string[],
  options: { pollMs?: number } = {},
): LeaseholdWorker {
  const pool = new pg.Pool({ connectionString: t.url, max: 5 });
  pool.on('error', () => {});
  pools.push(pool);
  const w = createWorker({
    pool,
    jobs: handlers,
    queues,
    logger: silentLogger,
    pollMs: options.pollMs ?? 200,
    listen: true,
    maintenance: false,
    graceMs: 0,
    concurrency: 4,
    batchSize: 4,
  });
  started.push(w);
  return w;
}

describe('a worker with grouped jobs', () => {
  it("starts a small account's job before a flooding account's backlog drains", async () => {
    const { queue, job } = accountJob();
    const order: string[] = [];
    const handler = defineHandler(job, async ({ payload }) => {
      order.push(payload.account);
      await new Promise((resolve) => setTimeout(resolve, 5));
    });
    await enqueueMany(
      t.db,
      job,
      Array.from({ length: 400 }, (_, n) => ({ account: 'flood', n })),
    );
    await worker([handler], [queue]).start();
    await until('the flood is being served', async () => order.length >= 20);
    const small = ['b', 'c', 'd', 'e', 'f'];
    for (const account of small) await enqueue(t.db, job, { account, n: 0 });
    await until('every small account ran', async () => small.every((a) => order.includes(a)));
    const last = Math.max(...small.map((a) => order.indexOf(a)));
    // Each small account's job started while the flood still waited: long before its 400th job.
    expect(last).toBeLessThan(120);
    const [left] = await run<{ n: number }>(
      t.db,
      sql`SELECT count(*)::int AS n FROM leasehold.jobs WHERE queue = ${queue} AND state = 'ready'`,
    );
    expect(left!.n).toBeGreaterThan(100); // evidence: the flood was still waiting
  });

  it("starts a full group's next job once one of its jobs settles, never above its maximum", async () => {
    const { queue, job } = accountJob();
    await setGroupLimit(t.db, { queue, max: 1, actor: 'test' });
    let running = 0;
    let most = 0;
    let done = 0;
    const handler = defineHandler(job, async () => {
      running += 1;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, 20));
      running -= 1;
      done += 1;
    });
    await enqueueMany(
      t.db,
      job,
      Array.from({ length: 6 }, (_, n) => ({ account: 'acme', n })),
    );
    // A poll interval of a minute: an empty grouped claim rests 45 s, so only the settlements'
    // own wake-ups can start the next job in time.
    await worker([handler], [queue], { pollMs: 60_000 }).start();
    await until('all six ran', async () => done === 6);
    // Four slots, one job at a time: the group's maximum held every time it was reached.
    expect(most).toBe(1);
  });

  it('runs grouped jobs of a kind whose contract names no group, and ungrouped ones beside them', async () => {
    const queue = uniqueQueue();
    const plain = defineJob({ kind: `plain-${queue}`, version: 1, queue, schema: z.strictObject({ n: z.int() }) });
    const ran: (string | null)[] = [];
    const handler = defineHandler(plain, async ({ job }) => {
      ran.push(job.group);
    });
    await enqueue(t.db, plain, { n: 1 }, { group: 'g' });
    await enqueue(t.db, plain, { n: 2 });
    await worker([handler], [queue]).start();
    await until('both ran', async () => ran.length === 2);
    expect(ran).toHaveLength(2);
    expect(ran).toEqual(expect.arrayContaining(['g', null]));
  });
});

describe('the group sweep', () => {
  it('removes a drained group, keeps one with later jobs and brings back one whose job came meanwhile', async () => {
    const { queue, job } = accountJob();
    await enqueue(t.db, job, { account: 'drained', n: 0 });
    await enqueue(t.db, job, { account: 'later', n: 0 }, { delayMs: 60_000 });
    const kinds = [{ kind: job.kind, versions: [1] }];
    expect(await claim(t.db, { queues: [queue], workerId: 'w', limit: 10, kinds, grouped: true })).toHaveLength(1);
    // The next claim finds 'drained' empty and marks it idle.
    expect(await claim(t.db, { queues: [queue], workerId: 'w', limit: 10, kinds, grouped: true })).toEqual([]);
    // A job came to a group while a claim that saw it without one moved its turn on (the
    // enqueue could not see that claim's turn, nor the claim the job): the sweep brings it back.
    await enqueue(t.db, job, { account: 'later', n: 1 });
    await run(
      t.db,
      sql`UPDATE leasehold.ready_groups SET idle_since = statement_timestamp(), turn_at = 'infinity' WHERE queue = ${queue} AND group_key = 'later'`,
    );
    expect(await claim(t.db, { queues: [queue], workerId: 'w', limit: 10, kinds, grouped: true })).toEqual([]);
    const idle = await run<{ group_key: string }>(
      t.db,
      sql`SELECT group_key FROM leasehold.ready_groups WHERE queue = ${queue} AND idle_since IS NOT NULL ORDER BY 1`,
    );
    expect(idle.map((r) => r.group_key)).toEqual(['drained', 'later']);
    const outcome = await withMaintenanceLock(t.db, 'group sweep', (tx) => sweepReadyGroups(tx));
    // Other tests' groups of this database are swept too: this queue's rows say what happened.
    expect(outcome.ran && outcome.result.removed >= 1 && outcome.result.returned >= 1).toBe(true);
    const left = await run<{ group_key: string; due: boolean }>(
      t.db,
      sql`SELECT group_key, turn_at <= statement_timestamp() AS due FROM leasehold.ready_groups WHERE queue = ${queue} ORDER BY 1`,
    );
    expect(left).toEqual([{ group_key: 'later', due: true }]);
    expect(await claim(t.db, { queues: [queue], workerId: 'w', limit: 10, kinds, grouped: true })).toHaveLength(1);
  });
});
