import pg from 'pg';
import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { enqueueMany, listLimits, setLimit } from '../db/queue/index.ts';
import { run } from '../db/queue/executor.ts';
import { silentLogger } from '../test/attempts.ts';
import { useTestDatabase } from '../test/db.ts';
import { uniqueQueue } from '../test/factories.ts';
import { until } from '../test/wait.ts';
import { createWorker, type LeaseholdWorker } from './create-worker.ts';
import { defineHandler, type Handler } from './handler.ts';

const t = useTestDatabase({ max: 10 });
const started: LeaseholdWorker[] = [];
const pools: pg.Pool[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).map((w) => w.stop(0)));
});
afterAll(async () => {
  await Promise.all(pools.splice(0).map((p) => p.end().catch(() => {})));
});

/** A worker of its own pool, as a second host would be. */
function worker(jobs: Handler[]): LeaseholdWorker {
  const pool = new pg.Pool({ connectionString: t.url, max: 5 });
  pool.on('error', () => {});
  pools.push(pool);
  const w = createWorker({
    pool,
    jobs,
    logger: silentLogger,
    pollMs: 100,
    listen: false,
    maintenance: false,
    graceMs: 0,
    concurrency: 10,
  });
  started.push(w);
  return w;
}

/** The most attempts of `kind` that held a lease at once, from the jobs' own start and finish times. */
async function mostAtOnce(kind: string): Promise<number> {
  const [row] = await run<{ most: number }>(
    t.db,
    sql`WITH edge AS (
          SELECT started_at AS at, 1 AS d FROM leasehold.jobs WHERE kind = ${kind} AND state = 'done'
          UNION ALL
          SELECT finished_at, -1 FROM leasehold.jobs WHERE kind = ${kind} AND state = 'done'
        )
        SELECT coalesce(max(n), 0)::int AS most
        FROM (SELECT sum(d) OVER (ORDER BY at, d) AS n FROM edge) s`,
  );
  return row!.most;
}

/** A handler body that sleeps `ms` and counts how many of its executions overlap (both workers run in this process). */
function overlapCounter(ms: number) {
  const counter = { now: 0, most: 0 };
  const handle = async () => {
    counter.now += 1;
    counter.most = Math.max(counter.most, counter.now);
    await new Promise((resolve) => setTimeout(resolve, ms));
    counter.now -= 1;
  };
  return { counter, handle };
}

/** Waits until `n` jobs of `queue` are done. */
const untilDone = (queue: string, n: number) =>
  until(
    `${n} jobs of ${queue} done`,
    async () => {
      const [row] = await run<{ n: number }>(
        t.db,
        sql`SELECT count(*)::int AS n FROM leasehold.jobs WHERE queue = ${queue} AND state = 'done'`,
      );
      return row!.n === n;
    },
    20_000,
  );

/** A handler of `kind` in `queue` under `limit`. */
const limitedHandler = (
  kind: string,
  queue: string,
  limit: { max: number; resource?: string },
  handle: () => Promise<void>,
) => defineHandler({ kind, versions: [1], schema: z.unknown(), timeoutMs: 30_000, defaultQueue: queue, limit, handle });

describe('a handler limit across worker processes', () => {
  it('runs at most max attempts of the kind at once across two workers, and reaches max', async () => {
    const queue = uniqueQueue();
    const kind = `limited-${queue}`;
    const { counter, handle } = overlapCounter(120);
    const limited = limitedHandler(kind, queue, { max: 3 }, handle);
    await enqueueMany(
      t.db,
      Array.from({ length: 24 }, () => ({ queue, kind })),
    );
    await Promise.all([worker([limited]).start(), worker([limited]).start()]);
    await untilDone(queue, 24);
    // Both figures reach the limit and never pass it: the handlers' own count and the database's.
    expect(counter.most).toBe(3);
    expect(await mostAtOnce(kind)).toBe(3);
    expect((await listLimits(t.db)).find((l) => l.key === `kind:${kind}`)).toMatchObject({ max: 3, running: 0 });
  });

  it('counts the kinds naming one resource together, and follows an admin raising it at run time', async () => {
    const queue = uniqueQueue();
    const resource = `smtp-${queue}`;
    const { counter, handle } = overlapCounter(80);
    const receipt = limitedHandler(`receipt-${queue}`, queue, { resource, max: 2 }, handle);
    const digest = limitedHandler(`digest-${queue}`, queue, { resource, max: 2 }, handle);
    await enqueueMany(t.db, [
      ...Array.from({ length: 10 }, () => ({ queue, kind: receipt.kind })),
      ...Array.from({ length: 10 }, () => ({ queue, kind: digest.kind })),
    ]);
    await Promise.all([worker([receipt, digest]).start(), worker([digest, receipt]).start()]);
    await untilDone(queue, 20);
    expect(counter.most).toBe(2);

    counter.most = 0;
    await setLimit(t.db, { scope: 'resource', name: resource, max: 4, actor: 'ops@example.com' });
    await enqueueMany(
      t.db,
      Array.from({ length: 16 }, () => ({ queue, kind: receipt.kind })),
    );
    await untilDone(queue, 36);
    expect(counter.most).toBe(4);
  });

  it('refuses a bad limit when the handlers load, naming the handler and the field', () => {
    const bad = (limit: unknown) => () =>
      worker([
        defineHandler({
          kind: 'bad.limit',
          versions: [1],
          schema: z.unknown(),
          timeoutMs: 1000,
          limit: limit as never,
          handle: async () => {},
        }),
      ]);
    expect(bad({ max: 0 })).toThrow(/handler bad\.limit: limit: max: expected at least 1/);
    expect(bad({ max: 2.5 })).toThrow(/handler bad\.limit: limit: max: expected an integer/);
    expect(bad({ resource: '', max: 2 })).toThrow(/handler bad\.limit: limit: resource:/);
    expect(bad(5)).toThrow(/handler bad\.limit: limit: expected \{ max \} or \{ resource, max \}/);
  });
});
