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
import { type CreateWorkerOptions, createWorker, type LeaseholdWorker, WorkerOptionsError } from './create-worker.ts';
import { RateLimitedError } from './errors.ts';
import { defineHandler, type Handler, type HandlerLimit } from './handler.ts';

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
function worker(
  jobs: Handler[],
  options: Pick<CreateWorkerOptions, 'queues' | 'queueLimits' | 'concurrency' | 'pollMs'> = {},
): LeaseholdWorker {
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
    ...options,
  });
  started.push(w);
  return w;
}

/** The most attempts of `kind` (or of the queue `{ queue }`) that held a lease at once, from the jobs' own start and finish times. */
async function mostAtOnce(of: string | { queue: string }): Promise<number> {
  const which = typeof of === 'string' ? sql`kind = ${of}` : sql`queue = ${of.queue}`;
  const [row] = await run<{ most: number }>(
    t.db,
    sql`WITH edge AS (
          SELECT started_at AS at, 1 AS d FROM leasehold.jobs WHERE ${which} AND state = 'done'
          UNION ALL
          SELECT finished_at, -1 FROM leasehold.jobs WHERE ${which} AND state = 'done'
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
const limitedHandler = (kind: string, queue: string, limit: HandlerLimit, handle: () => Promise<void>) =>
  defineHandler({ kind, versions: [1], schema: z.unknown(), timeoutMs: 30_000, defaultQueue: queue, limit, handle });

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
    expect(bad(5)).toThrow(
      /handler bad\.limit: limit: expected \{ max \}, \{ rate: \{ max, perMs \} \} or either with a resource/,
    );
    expect(bad({ rate: { max: 5, perMs: 0 } })).toThrow(/handler bad\.limit: limit: rate\.perMs: expected at least 1/);
    expect(bad({ resource: 'smtp' })).toThrow(/handler bad\.limit: limit: expected a max, a rate or both/);
  });
});

describe('a queue limit across worker processes (queueLimits)', () => {
  const sleeper = (kind: string, ms: number) =>
    defineHandler({
      kind,
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 30_000,
      handle: () => new Promise<void>((resolve) => setTimeout(resolve, ms)),
    });

  it("runs at most max of the queue's jobs at once across two workers, one of them told only by the database, and reaches max; the other queue is not limited", async () => {
    const limited = uniqueQueue('qlimit');
    const free = uniqueQueue('qfree');
    const handler = sleeper(`queue-limited-${limited}`, 150);
    await enqueueMany(t.db, [
      ...Array.from({ length: 16 }, () => ({ queue: limited, kind: handler.kind })),
      ...Array.from({ length: 8 }, () => ({ queue: free, kind: handler.kind })),
    ]);
    // What the database counts as running under the limit, sampled while the workers run.
    const key = `queue:${limited}`;
    const running: number[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const status = (await listLimits(t.db)).find((l) => l.key === key);
        if (status) running.push(status.running);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    const options = { queues: [limited, free], queueLimits: { [limited]: { max: 2 } } };
    try {
      // The second worker is not told of the limit: it finds it in the database, as a worker of
      // another deploy would.
      await worker([handler], options).start();
      await worker([handler], { queues: [limited, free] }).start();
      await untilDone(limited, 16);
      await untilDone(free, 8);
    } finally {
      sampling = false;
      await sampler;
    }
    expect(running.length).toBeGreaterThan(20);
    expect(Math.max(...running)).toBe(2);
    expect(running.filter((n) => n === 2).length).toBeGreaterThan(5);
    expect(await mostAtOnce({ queue: limited })).toBe(2);
    // The same handler in the worker's unlimited queue: as many at once as the slots take.
    expect(await mostAtOnce({ queue: free })).toBeGreaterThanOrEqual(4);
    expect((await listLimits(t.db)).find((l) => l.key === key)).toMatchObject({
      scope: 'queue',
      name: limited,
      declared: { max: 2, rate: null },
      max: 2,
      running: 0,
      waiting: 0,
      kinds: [],
    });
  });

  it("composes with the kind's own limit (the tightest wins) and holds a queue's rate of starts", async () => {
    const limited = uniqueQueue('qrate');
    const { counter, handle } = overlapCounter(60);
    // The kind allows 3 at once, its queue 2: at most 2 run.
    const tight = limitedHandler(`queue-tight-${limited}`, limited, { max: 3 }, handle);
    const fast = sleeper(`queue-rate-${limited}`, 1);
    const rated = uniqueQueue('qrate');
    await enqueueMany(t.db, [
      ...Array.from({ length: 10 }, () => ({ queue: limited, kind: tight.kind })),
      ...Array.from({ length: 9 }, () => ({ queue: rated, kind: fast.kind })),
    ]);
    const options = {
      queues: [limited, rated],
      queueLimits: { [limited]: { max: 2 }, [rated]: { rate: { max: 4, perMs: 1000 } } },
    };
    await Promise.all([worker([tight, fast], options).start(), worker([fast, tight], options).start()]);
    await untilDone(limited, 10);
    expect(counter.most).toBe(2);
    expect(await mostAtOnce({ queue: limited })).toBe(2);
    await untilDone(rated, 9);
    // No window of a second holds more than 4 starts, and the first one holds 4: 9 jobs take at
    // least 2 s (a start leaves the window a second after it).
    const starts = (
      await run<{ at: Date | string }>(t.db, sql`SELECT started_at AS at FROM leasehold.jobs WHERE queue = ${rated}`)
    )
      .map((r) => new Date(r.at).getTime())
      .sort((a, b) => a - b);
    const most = Math.max(...starts.map((at) => starts.filter((s) => s >= at && s < at + 1000).length));
    expect(most).toBe(4);
    expect(starts.at(-1)! - starts[0]!).toBeGreaterThanOrEqual(2000);
  });

  it('refuses a queue limit of a queue the worker does not serve, and a bad one, naming it, before anything connects', () => {
    const handler = sleeper('queue-refused', 1);
    const refused = (options: Pick<CreateWorkerOptions, 'queues' | 'queueLimits'>) => () => worker([handler], options);
    expect(refused({ queues: ['mail'], queueLimits: { bulk: { max: 2 } } })).toThrow(WorkerOptionsError);
    expect(refused({ queues: ['mail'], queueLimits: { bulk: { max: 2 } } })).toThrow(
      'queueLimits: a limit for the queue bulk, which this worker does not serve (it serves mail): serve it (queues) or drop its limit',
    );
    // Without queues: the handlers' (here `default`).
    expect(refused({ queueLimits: { mail: { max: 2 } } })).toThrow(
      /queue mail, which this worker does not serve \(it serves default\)/,
    );
    expect(refused({ queues: ['mail'], queueLimits: { mail: { max: 0 } } })).toThrow(
      'queueLimits["mail"].max: must be a whole number from 1 to 1000000, got 0',
    );
    expect(refused({ queues: ['mail'], queueLimits: { mail: {} } })).toThrow(
      'queueLimits["mail"]: give max, rate or both',
    );
    expect(refused({ queues: ['mail'], queueLimits: { mail: { rate: { max: 5, perMs: 0 } } } })).toThrow(
      /queueLimits\["mail"\]\.rate: must be \{ max, perMs \}: .*got \{"max":5,"perMs":0\}/,
    );
    expect(refused({ queues: ['mail'], queueLimits: { mail: { max: 1, burst: 2 } as never } })).toThrow(
      'queueLimits["mail"].burst: not a field (max, rate)',
    );
    expect(refused({ queues: ['mail'], queueLimits: [] as never })).toThrow(/queueLimits: an object of queue names/);
    expect(() =>
      worker([handler], { queues: ['mail'], queueLimits: { mail: { max: 1, rate: { max: 5, perMs: 1000 } } } }),
    ).not.toThrow();
  });
});

/** Each job's (last) start in `queue`, in ms since the epoch (microseconds kept). */
async function jobStarts(queue: string): Promise<number[]> {
  const rows = await run<{ at: number }>(
    t.db,
    sql`SELECT extract(epoch FROM started_at)::float8 * 1000 AS at FROM leasehold.jobs WHERE queue = ${queue} ORDER BY started_at`,
  );
  return rows.map((r) => r.at);
}

/** The most starts in any window (end - perMs, end]. */
const mostInWindow = (starts: number[], perMs: number) =>
  Math.max(...starts.map((end) => starts.filter((s) => s > end - perMs && s <= end).length));

describe('a rate limit across worker processes', () => {
  it('starts at most N in any interval across two workers, reaches N, and spends no attempt waiting', async () => {
    const queue = uniqueQueue();
    const kind = `rated-${queue}`;
    const rated = limitedHandler(kind, queue, { rate: { max: 4, perMs: 400 } }, async () => {
      await new Promise((r) => setTimeout(r, 5));
    });
    await enqueueMany(
      t.db,
      Array.from({ length: 20 }, () => ({ queue, kind })),
    );
    const begun = Date.now();
    await Promise.all([worker([rated]).start(), worker([rated]).start()]);
    await untilDone(queue, 20);
    const starts = await jobStarts(queue);
    expect(starts).toHaveLength(20);
    expect(mostInWindow(starts, 400)).toBe(4); // never more, and reached
    // 20 starts at 4 per 400 ms: at least four full windows after the first.
    expect(Date.now() - begun).toBeGreaterThanOrEqual(1600);
    // The workers claimed again when the window opened, not at their 1 s poll: 20 starts in
    // well under the 5 polls a second that polling alone would take.
    expect(starts.at(-1)! - starts[0]!).toBeLessThan(4000);
    const [spent] = await run<{ most: number }>(
      t.db,
      sql`SELECT max(attempts)::int AS most FROM leasehold.jobs WHERE queue = ${queue}`,
    );
    expect(spent!.most).toBe(1);
  });

  it('pauses the limit for the Retry-After of a RateLimitedError, in every worker, then runs the rest', async () => {
    const queue = uniqueQueue();
    const resource = `api-${queue}`;
    let thrown = 0;
    const flaky = limitedHandler(`flaky-${queue}`, queue, { resource, max: 10 }, async () => {
      if (thrown === 0) {
        thrown += 1;
        throw new RateLimitedError('429 from upstream', { retryAfterMs: 1500 });
      }
    });
    const other = limitedHandler(`other-${queue}`, queue, { resource, max: 10 }, async () => {});
    await enqueueMany(t.db, [{ queue, kind: flaky.kind }]);
    // One worker takes the first job alone, then the rest wait for the pause in every worker.
    await worker([flaky, other], { concurrency: 1, pollMs: 1000 }).start();
    await until(
      'the limit paused',
      async () => (await listLimits(t.db)).find((l) => l.key === `resource:${resource}`)?.pausedUntil != null,
      10_000,
    );
    await enqueueMany(
      t.db,
      Array.from({ length: 3 }, () => ({ queue, kind: other.kind })),
    );
    await worker([other, flaky], { concurrency: 5, pollMs: 1000 }).start();
    await untilDone(queue, 4);
    const [failed] = await run<{ ended: number }>(
      t.db,
      sql`SELECT extract(epoch FROM ended_at)::float8 * 1000 AS ended FROM leasehold.job_attempts
          WHERE queue = ${queue} AND outcome <> 'completed'`,
    );
    const [paused] = (await listLimits(t.db)).filter((l) => l.key === `resource:${resource}`);
    expect(paused!.pausedReason).toBe('RateLimitedError: 429 from upstream');
    const later = (await jobStarts(queue)).filter((s) => s > failed!.ended);
    expect(later).toHaveLength(4); // the three others and the retry
    // None started before the pause ended (1.5 s after the failure, less the clock's rounding).
    expect(Math.min(...later) - failed!.ended).toBeGreaterThanOrEqual(1450);
  });
});
