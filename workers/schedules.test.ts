import pino from 'pino';
import pg from 'pg';
import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  createSchedule,
  declareSchedules,
  defineJob,
  defineSchedule,
  getSchedule,
  pauseSchedule,
  runDueSchedules,
} from '../db/queue/index.ts';
import { run } from '../db/queue/executor.ts';
import { silentLogger } from '../test/attempts.ts';
import { useTestDatabase } from '../test/db.ts';
import { uniqueQueue } from '../test/factories.ts';
import { until } from '../test/wait.ts';
import { createWorker, type LeaseholdWorker } from './create-worker.ts';
import { defineHandler, payloadJsonSchema } from './handler.ts';

const t = useTestDatabase({ max: 10 });
const started: LeaseholdWorker[] = [];
const pools: pg.Pool[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).map((w) => w.stop(0)));
});
afterAll(async () => {
  await Promise.all(pools.splice(0).map((p) => p.end().catch(() => {})));
});

function worker(options: Omit<Parameters<typeof createWorker>[0], 'pool' | 'logger'>): LeaseholdWorker {
  const pool = new pg.Pool({ connectionString: t.url, max: 5 });
  pool.on('error', () => {});
  pools.push(pool);
  const w = createWorker({
    pool,
    logger: process.env.DEBUG_SCHED ? pino({ level: 'debug' }) : silentLogger,
    pollMs: 200,
    listen: true,
    ...options,
  });
  started.push(w);
  return w;
}

describe('schedules run by workers', () => {
  it('enqueues each second of an every-second schedule once across three workers, and each job knows its tick', async () => {
    const queue = uniqueQueue();
    const tickJob = defineJob({ kind: `tick-${queue}`, version: 1, queue, schema: z.strictObject({ n: z.int() }) });
    const seen: { schedule: string; tickAt: Date }[] = [];
    const handler = defineHandler(tickJob, async (ctx) => {
      if (ctx.scheduled) seen.push(ctx.scheduled);
    });
    const schedule = defineSchedule({
      name: `every-second-${queue}`,
      job: tickJob,
      cron: '* * * * * *',
      payload: { n: 1 },
    });
    const workers = [0, 1, 2].map(() => worker({ jobs: [handler], queues: [queue], schedules: [schedule] }));
    await Promise.all(workers.map((w) => w.start()));
    await until('four ticks run', async () => seen.length >= 4);
    await Promise.all(started.splice(0).map((w) => w.stop(0)));
    const jobs = await run<{ idempotency_key: string; n: number }>(
      t.db,
      sql`SELECT idempotency_key, count(*) OVER (PARTITION BY idempotency_key)::int AS n FROM leasehold.jobs WHERE queue = ${queue}`,
    );
    expect(jobs.length).toBeGreaterThanOrEqual(4);
    expect(jobs.every((j) => j.n === 1)).toBe(true);
    const ticks = seen.map((s) => s.tickAt.getTime()).sort((a, b) => a - b);
    expect(new Set(ticks).size).toBe(ticks.length);
    // Whole seconds, consecutive: no tick lost between the first and the last a handler saw.
    for (let i = 1; i < ticks.length; i++) expect(ticks[i]! - ticks[i - 1]!).toBe(1000);
    expect(seen[0]!.schedule).toBe(`every-second-${queue}`);
  });

  it("declares the code's schedules at start, and a worker with the scheduler off enqueues none", async () => {
    const queue = uniqueQueue();
    const tickJob = defineJob({ kind: `quiet-${queue}`, version: 1, queue, schema: z.strictObject({}) });
    const handler = defineHandler(tickJob, async () => {});
    const name = `quiet-${queue}`;
    const schedule = defineSchedule({ name, job: tickJob, cron: '* * * * * *', payload: {} });
    const w = worker({ jobs: [handler], queues: [queue], schedules: [schedule], scheduler: false });
    await w.start();
    expect(await getSchedule(t.db, name)).toMatchObject({ cron: '* * * * * *', source: 'code', paused: false });
    await new Promise((r) => setTimeout(r, 1500));
    const [count] = await run<{ n: number }>(
      t.db,
      sql`SELECT count(*)::int AS n FROM leasehold.jobs WHERE queue = ${queue}`,
    );
    expect(count!.n).toBe(0);
    // Paused, a schedule stays paused when a worker declares it again.
    await pauseSchedule(t.db, name, { actor: 'admin@x' });
    await worker({ jobs: [handler], queues: [queue], schedules: [schedule], scheduler: false }).start();
    expect((await getSchedule(t.db, name))?.paused).toBe(true);
  });

  it('discards unrun a tick whose job is first claimed after its start deadline, as expired', async () => {
    const queue = uniqueQueue();
    const tickJob = defineJob({ kind: `late-${queue}`, version: 1, queue, schema: z.strictObject({}) });
    let ran = 0;
    const handler = defineHandler(tickJob, async () => {
      ran += 1;
    });
    const name = `late-${queue}`;
    await declareSchedules(t.db, [
      defineSchedule({ name, job: tickJob, cron: '* * * * * *', payload: {}, startWithinMs: 1000 }),
    ]);
    await until('a tick enqueued', async () => {
      await runDueSchedules(t.db);
      const [row] = await run<{ n: number }>(
        t.db,
        sql`SELECT count(*)::int AS n FROM leasehold.jobs WHERE queue = ${queue}`,
      );
      return row!.n > 0;
    });
    await pauseSchedule(t.db, name, { actor: 'test' });
    await new Promise((r) => setTimeout(r, 1200));
    await worker({ jobs: [handler], queues: [queue], scheduler: false }).start();
    const ended = await until('the ticks ended', async () => {
      const rows = await run<{ state: string; failure_class: string | null; last_error: string | null }>(
        t.db,
        sql`SELECT state, failure_class, last_error FROM leasehold.jobs WHERE queue = ${queue}`,
      );
      return rows.every((r) => r.state === 'dead') && rows;
    });
    expect(ran).toBe(0);
    for (const r of ended) {
      expect(r.failure_class).toBe('expired');
      expect(r.last_error).toMatch(
        /not started by .*, the start deadline of tick .* of schedule late-.*: discarded unrun/,
      );
    }
  });

  it("registers its handler's payload JSON Schema, so a run-time schedule's payload is checked as the handler will", async () => {
    const queue = uniqueQueue();
    const typed = defineJob({
      kind: `typed-${queue}`,
      version: 1,
      queue,
      schema: z.strictObject({ scope: z.enum(['all', 'eu']) }),
    });
    await worker({ jobs: [defineHandler(typed, async () => {})], queues: [queue], scheduler: false }).start();
    await expect(
      createSchedule(
        t.db,
        `typed-${queue}`,
        { kind: typed.kind, cron: '0 3 * * *', payload: { scope: 'mars' } },
        { actor: 'a' },
      ),
    ).rejects.toThrow(/payload\.scope: must be equal to one of the allowed values/);
    const made = await createSchedule(
      t.db,
      `typed-${queue}`,
      { kind: typed.kind, cron: '0 3 * * *', payload: { scope: 'eu' } },
      { actor: 'a' },
    );
    expect(made.verdict).toBe('applied');
  });

  it('refuses a schedules option that is not made by defineSchedule, naming it', () => {
    expect(() => worker({ jobs: [], schedules: [{ name: 'x' }] as never })).toThrow(
      /schedules\[0\]: not a schedule made by defineSchedule/,
    );
  });
});

describe("a kind's payload JSON Schema", () => {
  it('comes from the Standard Schema when it has a JSON side, else is null, and too large is null', () => {
    const made = payloadJsonSchema(z.strictObject({ scope: z.enum(['all', 'eu']) }));
    expect(made).toMatchObject({ type: 'object', properties: { scope: { enum: ['all', 'eu'] } }, required: ['scope'] });
    const bare = { '~standard': { version: 1 as const, vendor: 'x', validate: (v: unknown) => ({ value: v }) } };
    expect(payloadJsonSchema(bare)).toBeNull();
    const wide = z.strictObject(Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`field_${i}`, z.string()])));
    expect(payloadJsonSchema(wide)).toBeNull();
  });
});
