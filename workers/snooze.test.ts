/**
 * Snooze (docs/jobs.md, "Snooze") and a job's own settings (timeout, back-off), run by a real
 * worker on real PostgreSQL: the attempt budget does not move, the back-off of a later failure
 * is what it would be without the snoozes, the cap applies, and the job's own timeout and
 * back-off are checked at enqueue against the kind's bounds and used by the worker.
 */
import { sql } from 'drizzle-orm';
import pino from 'pino';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueue, LeaseholdInputError, registerKinds } from '../db/queue/index.ts';
import { run } from '../db/queue/executor.ts';
import { testDatabase, type TestDatabase } from '../test/db.ts';
import { attemptsOf, getJob, jobInState, uniqueQueue } from '../test/factories.ts';
import { workerSettings } from '../test/workers.ts';
import { until } from '../test/wait.ts';
import { TransientError } from './errors.ts';
import { defineHandler, type Handler, HandlerRegistry, kindRegistrations } from './handler.ts';
import { snooze, SnoozeError } from './snooze.ts';
import { Worker } from './worker.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await testDatabase({ max: 10 });
});
afterAll(async () => {
  await t?.close();
});

async function runUntil(queue: string, handler: Handler, done: () => Promise<unknown>, retry = {}): Promise<void> {
  const worker = new Worker(workerSettings(queue, 'snoozer', { retry: { baseDelayMs: 0, maxDelayMs: 0, ...retry } }), {
    db: t.db,
    databaseUrl: t.url,
    registry: new HandlerRegistry([handler]),
    logger: pino({ level: 'silent' }),
  });
  await worker.start();
  try {
    await until('the job settles', done, 20_000);
  } finally {
    await worker.stop(0);
  }
}

describe('a handler that snoozes', () => {
  it('waits without spending an attempt, records `snoozed`, and runs again', async () => {
    const queue = uniqueQueue();
    const kind = `snooze-${queue}`;
    let calls = 0;
    const handler = defineHandler({
      kind,
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 10_000,
      maxAttempts: 2,
      // Returned twice, thrown once, then done: three snoozes with a cap of two attempts.
      handle: async () => {
        calls += 1;
        if (calls === 1 || calls === 2) return snooze(50);
        if (calls === 3) throw new SnoozeError(50);
        return 'done';
      },
    });
    const { id } = await enqueue(t.db, { queue, kind });
    await runUntil(queue, handler, jobInState(t.db, id, 'done', 'dead'));
    const job = await getJob(t.db, id);
    expect(job).toMatchObject({ state: 'done', attempts: 4, released: 3, snoozes: 3, snoozedMs: 150 });
    const history = await attemptsOf(t.db, id);
    expect(history.map((a) => a.outcome)).toEqual(['snoozed', 'snoozed', 'snoozed', 'completed']);
    expect(history[0]).toMatchObject({ failureClass: null, error: 'snoozed for 50 ms' });
  });

  it('leaves the snoozes out of the back-off exponent of a later failure', async () => {
    const queue = uniqueQueue();
    const kind = `snooze-backoff-${queue}`;
    let calls = 0;
    const handler = defineHandler({
      kind,
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 10_000,
      // Three snoozes, then a failure: its retry waits the first step (attempt 1), not the fourth.
      handle: async () => {
        calls += 1;
        if (calls <= 3) return snooze(20);
        throw new TransientError('provider down');
      },
    });
    const { id } = await enqueue(t.db, { queue, kind });
    // Base 60 s: attempt 1 waits 30–60 s; counted as attempt 4 it would wait 240–480 s.
    await runUntil(
      queue,
      handler,
      async () => ((await getJob(t.db, id)).failureClass === 'transient' ? true : undefined),
      { baseDelayMs: 60_000, maxDelayMs: 3_600_000 },
    );
    const rows = await run<{ wait_s: number }>(
      t.db,
      sql`SELECT extract(epoch FROM run_at - updated_at)::float8 AS wait_s FROM leasehold.jobs WHERE id = ${id}::uuid`,
    );
    const wait = rows[0]!.wait_s;
    expect(wait).toBeGreaterThanOrEqual(30);
    expect(wait).toBeLessThanOrEqual(60);
    expect(await getJob(t.db, id)).toMatchObject({ state: 'ready', attempts: 4, released: 3, snoozes: 3 });
  });

  it('fails the attempt (transient, charged) once a snooze would pass the cap', async () => {
    const queue = uniqueQueue();
    const kind = `snooze-cap-${queue}`;
    const handler = defineHandler({
      kind,
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 10_000,
      maxAttempts: 1,
      jobSettings: { snooze: { maxCount: 2, maxTotalMs: 60_000 } },
      handle: async () => snooze(10),
    });
    const { id } = await enqueue(t.db, { queue, kind });
    await runUntil(queue, handler, jobInState(t.db, id, 'dead'));
    const job = await getJob(t.db, id);
    expect(job).toMatchObject({ state: 'dead', failureClass: 'transient', attempts: 3, released: 2, snoozes: 2 });
    expect(job.lastError).toMatch(/snooze cap reached: a snooze of 10 ms after 2 snoozes \(20 ms\)/);
    expect((await attemptsOf(t.db, id)).map((a) => a.outcome)).toEqual(['snoozed', 'snoozed', 'failed']);
  });

  it('refuses a snooze of 0 or less, or not a whole number, at the call', () => {
    for (const bad of [0, -5, 1.5, Number.NaN]) {
      expect(() => snooze(bad)).toThrow(LeaseholdInputError);
      expect(() => new SnoozeError(bad)).toThrow(/ms: expected a whole number of milliseconds/);
    }
  });
});

describe("a job's own timeout and back-off", () => {
  const bounded = (kind: string, handle: Handler['handle']) =>
    defineHandler({
      kind,
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 60_000,
      maxAttempts: 2,
      jobSettings: { timeoutMs: [100, 120_000], backoffBaseMs: [1, 600_000], backoffMaxMs: [1, 3_600_000] },
      handle,
    });

  it('is refused at enqueue outside the kind bounds, or for a kind without bounds, writing nothing', async () => {
    const queue = uniqueQueue();
    const kind = `own-${queue}`;
    await registerKinds(t.db, kindRegistrations(bounded(kind, async () => {})));
    await expect(enqueue(t.db, { queue, kind, timeoutMs: 50 })).rejects.toThrow(
      /timeoutMs: 50 is outside the kind's bounds 100 to 120000/,
    );
    await expect(enqueue(t.db, { queue, kind: `${kind}-unbounded`, timeoutMs: 500 })).rejects.toThrow(
      /timeoutMs: the kind has no registered settings/,
    );
    await expect(enqueue(t.db, { queue, kind, backoff: { baseMs: 10, maxMs: 5 } })).rejects.toThrow(
      /backoff\.maxMs: maxMs must be at least baseMs/,
    );
    const rows = await run<{ n: number }>(
      t.db,
      sql`SELECT count(*)::int AS n FROM leasehold.jobs WHERE queue = ${queue}`,
    );
    expect(rows[0]?.n).toBe(0);
  });

  it("stops the handler at the job's own timeout and retries with the job's own back-off", async () => {
    const queue = uniqueQueue();
    const kind = `own-run-${queue}`;
    const handler = bounded(
      kind,
      ({ signal }) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
    );
    await registerKinds(t.db, kindRegistrations(handler));
    const { id } = await enqueue(t.db, { queue, kind, timeoutMs: 300, backoff: { baseMs: 500_000, maxMs: 500_000 } });
    const began = Date.now();
    await runUntil(queue, handler, async () =>
      (await getJob(t.db, id)).failureClass === 'timeout' ? true : undefined,
    );
    expect(Date.now() - began).toBeLessThan(10_000); // not the handler's 60 s
    const rows = await run<{ wait_s: number }>(
      t.db,
      sql`SELECT extract(epoch FROM run_at - updated_at)::float8 AS wait_s FROM leasehold.jobs WHERE id = ${id}::uuid`,
    );
    // The job's base of 500 s (equal jitter: 250–500 s), not the worker's 0.
    expect(rows[0]!.wait_s).toBeGreaterThanOrEqual(250);
    expect(rows[0]!.wait_s).toBeLessThanOrEqual(500);
    expect(await getJob(t.db, id)).toMatchObject({ timeoutMs: 300, backoff: { baseMs: 500_000, maxMs: 500_000 } });
  });
});
