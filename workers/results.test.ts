/**
 * Results, progress and waiting (docs/jobs.md, "Results, progress and waiting"), run by a real
 * worker on real PostgreSQL.
 */
import pg from 'pg';
import pino from 'pino';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueue, enqueueMany, getJob, LeaseholdInputError, waitForJob } from '../db/queue/index.ts';
import { claim, completeManyIfLeaseHeld } from '../db/queue/index.ts';
import { testDatabase, type TestDatabase } from '../test/db.ts';
import { jobInState, uniqueQueue } from '../test/factories.ts';
import { workerSettings } from '../test/workers.ts';
import { until } from '../test/wait.ts';
import { defineHandler, type Handler, HandlerRegistry } from './handler.ts';
import { progressInput } from '../db/queue/results.ts';
import { Worker } from './worker.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await testDatabase({ max: 10 });
});
afterAll(async () => {
  await t?.close();
});

async function withWorker<T>(queue: string, handlers: Handler[], work: () => Promise<T>): Promise<T> {
  const worker = new Worker(workerSettings(queue, 'results'), {
    db: t.db,
    databaseUrl: t.url,
    registry: new HandlerRegistry(handlers),
    logger: pino({ level: 'silent' }),
  });
  await worker.start();
  try {
    return await work();
  } finally {
    await worker.stop(0);
  }
}

const handler = (kind: string, handle: Handler['handle'], resultMaxBytes?: number) =>
  defineHandler({
    kind,
    versions: [1],
    schema: z.unknown(),
    timeoutMs: 20_000,
    handle,
    ...(resultMaxBytes ? { resultMaxBytes } : {}),
  });

describe('a handler result', () => {
  it('is stored with the completing attempt and read back by getJob', async () => {
    const queue = uniqueQueue();
    const kind = `result-${queue}`;
    const { id } = await enqueue(t.db, { queue, kind });
    await withWorker(queue, [handler(kind, async () => ({ rows: 42, file: 'out.csv' }))], () =>
      until('done', jobInState(t.db, id, 'done')),
    );
    const job = await getJob(t.db, id);
    expect(job?.result).toMatchObject({ attempt: 1, value: { rows: 42, file: 'out.csv' }, marker: null });
    expect(job?.result?.bytes).toBe(JSON.stringify({ rows: 42, file: 'out.csv' }).length);
  });

  it('is replaced by a marker, the attempt still completing, when it is not JSON or over the cap', async () => {
    const queue = uniqueQueue();
    const [notJson, tooBig] = [`nojson-${queue}`, `big-${queue}`];
    const a = await enqueue(t.db, { queue, kind: notJson });
    const b = await enqueue(t.db, { queue, kind: tooBig });
    await withWorker(
      queue,
      [handler(notJson, async () => ({ at: new Date(0) })), handler(tooBig, async () => 'x'.repeat(2000), 1000)],
      () =>
        until('both done', async () => (await jobInState(t.db, a.id, 'done')()) && jobInState(t.db, b.id, 'done')()),
    );
    const first = await getJob(t.db, a.id);
    expect(first?.result).toMatchObject({
      value: null,
      marker: expect.stringMatching(/^not stored: not plain JSON \(result\.at/),
    });
    const second = await getJob(t.db, b.id);
    expect(second?.result).toMatchObject({
      value: null,
      marker: "not stored: 2002 bytes of JSON, more than the kind's cap of 1000",
    });
  });
});

describe('progress', () => {
  it('writes at most once a second, the latest report winning, and keeps the last after the job ends', async () => {
    const queue = uniqueQueue();
    const kind = `progress-${queue}`;
    const { id } = await enqueue(t.db, { queue, kind });
    let seen: unknown = null;
    await withWorker(
      queue,
      [
        handler(kind, async ({ progress, job }) => {
          for (let i = 1; i <= 50; i++) progress(i / 100, `step ${i}`); // one write now, the rest coalesced
          await new Promise((r) => setTimeout(r, 1_300));
          seen = (await getJob(t.db, job.id))?.progress;
          progress(1, 'all done');
          expect(() => progress(1.5)).toThrow(LeaseholdInputError);
        }),
      ],
      () => until('done', jobInState(t.db, id, 'done')),
    );
    // After a second the coalesced latest (step 50) had been written; then the last report at the end.
    expect(seen).toMatchObject({ attempt: 1, fraction: 0.5, message: 'step 50' });
    expect((await getJob(t.db, id))?.progress).toMatchObject({ fraction: 1, message: 'all done' });
  });
});

describe('a progress report', () => {
  it('cuts a message over 200 characters and refuses a fraction outside 0..1 or not a number', () => {
    const long = progressInput(0.5, 'm'.repeat(250));
    expect(long.message).toHaveLength(200);
    expect(long.message?.endsWith('…')).toBe(true);
    for (const bad of [-0.1, 1.01, Number.NaN, '0.5'])
      expect(() => progressInput(bad)).toThrow(/fraction: expected a number from 0 to 1/);
    expect(() => progressInput(0.5, 42)).toThrow(/message: expected a string/);
  });
});

describe('waitForJob', () => {
  it('is woken when an awaitable job ends dead', async () => {
    const queue = uniqueQueue();
    const kind = `wait-dead-${queue}`;
    const { id } = await enqueue(t.db, { queue, kind, awaitable: true, maxAttempts: 1 });
    const waiting = waitForJob(t.db, id, { timeoutMs: 15_000 });
    const started = performance.now();
    await withWorker(queue, [handler(kind, async () => Promise.reject(new Error('boom')))], async () => {
      const outcome = await waiting;
      expect(outcome).toMatchObject({ ended: true, job: { state: 'dead', lastError: expect.stringMatching(/boom/) } });
    });
    expect(performance.now() - started).toBeLessThan(8_000);
  });

  it('returns the end state and result of an awaitable job, woken by its acknowledgement', async () => {
    const queue = uniqueQueue();
    const kind = `wait-${queue}`;
    const { id } = await enqueue(t.db, { queue, kind, awaitable: true });
    const waiting = waitForJob(t.db, id, { timeoutMs: 15_000 });
    const started = performance.now();
    await withWorker(queue, [handler(kind, async () => 'answer')], async () => {
      const outcome = await waiting;
      expect(outcome.ended).toBe(true);
      expect(outcome.job).toMatchObject({ state: 'done', result: { value: 'answer' } });
    });
    // Woken, not polled: well before its ten-second safety check.
    expect(performance.now() - started).toBeLessThan(8_000);
  });

  it('issues three statements in a 5-second wait that times out', { timeout: 15_000 }, async () => {
    const queue = uniqueQueue();
    const { id } = await enqueue(t.db, { queue, kind: 'never-run', awaitable: true });
    const pool = new pg.Pool({ connectionString: t.url, max: 1 });
    const statements: string[] = [];
    pool.on('connect', (client) => {
      const query = client.query.bind(client);
      Reflect.set(client, 'query', (...args: Parameters<typeof query>) => {
        const first: unknown = args[0];
        statements.push(typeof first === 'string' ? first : String(Reflect.get(Object(first), 'text')));
        return query(...args);
      });
    });
    try {
      const outcome = await waitForJob(pool, id, { timeoutMs: 5_000 });
      expect(outcome).toMatchObject({ ended: false, state: 'ready' });
      expect(statements.length).toBeLessThanOrEqual(3);
      expect(statements[0]).toMatch(/^LISTEN /);
    } finally {
      await pool.end();
    }
  });

  it('refuses an id with no job at once, and a job not enqueued awaitable', async () => {
    const began = performance.now();
    await expect(waitForJob(t.db, '0190b5f0-0000-7000-8000-000000000000', { timeoutMs: 30_000 })).rejects.toThrow(
      /there is no job/,
    );
    expect(performance.now() - began).toBeLessThan(2_000);
    const { id } = await enqueue(t.db, { queue: uniqueQueue(), kind: 'plain' });
    await expect(waitForJob(t.db, id)).rejects.toThrow(/not enqueued awaitable/);
  });

  it('sends no notify for a drain of 10,000 jobs not awaitable, and one per statement for awaitable ones', async () => {
    const queue = uniqueQueue();
    const listener = new pg.Client({ connectionString: t.url });
    await listener.connect();
    let notifies = 0;
    listener.on('notification', () => (notifies += 1));
    await listener.query('LISTEN leasehold_job_ended');
    try {
      await enqueueMany(
        t.db,
        Array.from({ length: 10_000 }, () => ({ queue, kind: 'drain' })),
      );
      for (;;) {
        const jobs = await claim(t.db, { queues: [queue], workerId: 'w', limit: 1000 });
        if (jobs.length === 0) break;
        await completeManyIfLeaseHeld(t.db, jobs);
      }
      await listener.query('SELECT 1'); // notifications sent so far have arrived
      expect(notifies).toBe(0);
      await enqueueMany(
        t.db,
        Array.from({ length: 300 }, () => ({ queue, kind: 'drain', awaitable: true })),
      );
      const jobs = await claim(t.db, { queues: [queue], workerId: 'w', limit: 1000 });
      expect(jobs).toHaveLength(300);
      await completeManyIfLeaseHeld(
        t.db,
        jobs.map((j) => ({ id: j.id, leaseToken: j.leaseToken, awaitable: true })),
      );
      await until(
        'the notifies',
        async () => (await listener.query('SELECT 1'), notifies >= 2 ? true : undefined),
        5_000,
      );
      expect(notifies).toBe(2); // 200 ids per NOTIFY
    } finally {
      await listener.end();
    }
  });
});
