import pino from 'pino';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobDetail, jobListSchema, listJobs } from '../db/queries/jobs.ts';
import { enqueue } from '../db/queue/index.ts';
import { testDatabase, type TestDatabase } from '../test/db.ts';
import { attemptsOf, getJob, jobInState, uniqueQueue } from '../test/factories.ts';
import { workerSettings } from '../test/workers.ts';
import { until } from '../test/wait.ts';
import { TransientError } from './errors.ts';
import { defineHandler, HandlerRegistry, kindRegistrations } from './handler.ts';
import { Worker } from './worker.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await testDatabase({ max: 10 });
});
afterAll(async () => {
  await t?.close();
});

describe('releases at shutdown and the handler cap', () => {
  it("counts a failing job's attempts against its handler's maxAttempts in the read models, as the fail path does", async () => {
    const queue = uniqueQueue();
    const kind = `capped-${queue}`;
    const handler = defineHandler({
      kind,
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 60_000,
      maxAttempts: 3,
      handle: () => Promise.reject(new TransientError('provider down')),
    });
    const { id } = await enqueue(t.db, { queue, kind });
    const worker = new Worker(workerSettings(queue, 'capped', { retry: { baseDelayMs: 0, maxDelayMs: 0 } }), {
      db: t.db,
      databaseUrl: t.url,
      registry: new HandlerRegistry([handler]),
      logger: pino({ level: 'silent' }),
    });
    await worker.start();
    try {
      await until('dead', jobInState(t.db, id, 'dead', 'done'));
    } finally {
      await worker.stop(0);
    }
    const detail = await jobDetail(t.db, id);
    expect(detail?.job).toMatchObject({ state: 'dead', attempts: 3, released: 0, maxAttempts: 10 });
    expect(detail?.job.lastError).toMatch(/no attempts left: 3 of 3 used/);
    // The page, the list and the CLI read this budget: 3 of 3 by the handler's cap, not 3 of 10.
    expect(detail?.job.budget).toEqual({
      charged: 3,
      released: 0,
      cap: 3,
      source: 'handler',
      jobMax: 10,
      handlerMax: 3,
      left: 0,
    });
    const { jobs } = await listJobs(t.db, jobListSchema.parse({ queue }));
    expect(jobs.map((j) => j.budget)).toEqual([detail?.job.budget]);
  });

  it("lets a job released at shutdown more times than its handler's maxAttempts still run and complete", async () => {
    const queue = uniqueQueue();
    const kind = `deploy-${queue}`;
    // Hangs until its signal (a rolling deploy stops the worker), then fails once, then succeeds.
    let mode: 'hang' | 'fail' | 'ok' = 'hang';
    const handler = defineHandler({
      kind,
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 60_000,
      maxAttempts: 2,
      handle: ({ signal }) => {
        if (mode === 'fail') {
          mode = 'ok';
          return Promise.reject(new TransientError('flaky'));
        }
        if (mode === 'ok') return Promise.resolve('done');
        return new Promise((_, reject) =>
          signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
        );
      },
    });
    const { id } = await enqueue(t.db, { queue, kind });
    const start = async (n: number) => {
      const worker = new Worker(workerSettings(queue, `deploy-${n}`, { retry: { baseDelayMs: 0, maxDelayMs: 0 } }), {
        db: t.db,
        databaseUrl: t.url,
        registry: new HandlerRegistry([handler]),
        logger: pino({ level: 'silent' }),
      });
      await worker.start();
      return worker;
    };
    for (let n = 1; n <= 3; n++) {
      const worker = await start(n);
      await until(`attempt ${n} running`, async () => {
        const job = await getJob(t.db, id);
        return job.state === 'running' && job.attempts === n ? job : undefined;
      });
      await worker.stop(0);
      expect((await getJob(t.db, id)).state).toBe('ready');
    }
    mode = 'fail';
    const worker = await start(4);
    try {
      const done = await until('done', jobInState(t.db, id, 'done', 'dead'));
      expect(done).toMatchObject({ state: 'done', attempts: 5 });
    } finally {
      await worker.stop(0);
    }
    expect((await attemptsOf(t.db, id)).map((a) => a.outcome)).toEqual([
      'released',
      'released',
      'released',
      'failed',
      'completed',
    ]);
    // Shown as the queue counted it: 2 charged of the handler's 2, the 3 releases apart.
    expect((await jobDetail(t.db, id))?.job.budget).toMatchObject({
      charged: 2,
      released: 3,
      cap: 2,
      source: 'handler',
    });
  });

  it("registers the handler's cap for the reaper", () => {
    const capped = defineHandler({
      kind: 'c',
      versions: [1, 2],
      schema: z.unknown(),
      timeoutMs: 1000,
      maxAttempts: 3,
      handle: async () => 1,
    });
    const free = defineHandler({
      kind: 'f',
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 1000,
      handle: async () => 1,
    });
    expect(kindRegistrations(capped).map((r) => r.maxAttempts)).toEqual([3, 3]);
    expect(kindRegistrations(free).map((r) => r.maxAttempts)).toEqual([null]);
  });
});
