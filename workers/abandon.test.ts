/**
 * Handlers deaf to their signal (security review B1): a stopped attempt settles at once, but
 * its slot stays taken until the handler ends or is abandoned, one process never runs two
 * executions of one job, and two attempts on one receipt key run one effect.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { Registry } from 'prom-client';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { cancelIfUnchanged, enqueue, enqueueMany } from '../db/queue/index.ts';
import { run } from '../db/queue/executor.ts';
import { testDatabase, type TestDatabase } from '../test/db.ts';
import { getJob, jobInState, uniqueQueue } from '../test/factories.ts';
import { workerSettings } from '../test/workers.ts';
import { until } from '../test/wait.ts';
import { defineHandler, HandlerRegistry } from './handler.ts';
import { checkHealth } from './health.ts';
import { createMetrics, type WorkerMetrics } from './metrics.ts';
import { Worker, type WorkerSettings } from './worker.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await testDatabase({ max: 10 });
});
afterAll(async () => {
  await t?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Executions as they happen: how many run at once (peak), and any job running twice at once. */
class Executions {
  running = new Map<string, number>();
  now = 0;
  peak = 0;
  total = 0;
  sameJobOverlaps = 0;
  starts: { jobId: string; attempt: number; at: number }[] = [];
  start(jobId: string, attempt: number): void {
    this.now += 1;
    this.total += 1;
    this.peak = Math.max(this.peak, this.now);
    const already = this.running.get(jobId) ?? 0;
    if (already > 0) this.sameJobOverlaps += 1;
    this.running.set(jobId, already + 1);
    this.starts.push({ jobId, attempt, at: performance.now() });
  }
  end(jobId: string): void {
    this.now -= 1;
    this.running.set(jobId, (this.running.get(jobId) ?? 1) - 1);
  }
}

/**
 * A handler deaf to its signal: a job with `hang: true` runs until the test calls `letGo()`
 * (whatever stopped its attempt), one with `hang: false` ends at once; `seen` counts both.
 */
function hangingHandler(kind: string, timeoutMs: number, seen: Executions) {
  let letGo: () => void = () => {};
  const hung = new Promise<void>((resolve) => {
    letGo = resolve;
  });
  const handler = defineHandler({
    kind,
    versions: [1],
    schema: z.object({ hang: z.boolean() }),
    timeoutMs,
    async handle({ job, attempt, payload }) {
      seen.start(job.id, attempt);
      if (payload.hang) await hung;
      seen.end(job.id);
    },
  });
  return { handler, letGo: () => letGo() };
}

/** A logger whose lines the test reads. */
function capturedLogger(): { logger: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

async function counter(metrics: WorkerMetrics, name: 'abandoned' | 'heldBack'): Promise<number> {
  const { values } = await metrics[name].get();
  return values.reduce((sum, v) => sum + v.value, 0);
}

async function startWorker(
  queue: string,
  handler: ReturnType<typeof defineHandler>,
  overrides: Partial<WorkerSettings>,
  logger = pino({ level: 'silent' }),
) {
  const metrics = createMetrics(new Registry());
  const worker = new Worker(
    workerSettings(queue, `w-${queue}`, { retry: { baseDelayMs: 0, maxDelayMs: 0 }, ...overrides }),
    { db: t.db, databaseUrl: t.url, registry: new HandlerRegistry([handler]), logger, metrics },
  );
  await worker.start();
  return { worker, metrics };
}

describe('handlers that ignore their signal', () => {
  it('keeps at most concurrency handlers running while stopped ones go on past their timeout', async () => {
    const queue = uniqueQueue('deaf');
    const kind = `deaf-${queue}`;
    const seen = new Executions();
    const handler = defineHandler({
      kind,
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 100,
      async handle({ job, attempt }) {
        seen.start(job.id, attempt);
        await sleep(300); // never looks at its signal
        seen.end(job.id);
      },
    });
    const jobs = await enqueueMany(
      t.db,
      Array.from({ length: 10 }, () => ({ queue, kind, maxAttempts: 2 })),
    );
    const { worker, metrics } = await startWorker(queue, handler, {
      concurrency: 2,
      batchSize: 2,
      abandonAfterMs: 10_000,
    });
    try {
      for (const { id } of jobs) await until(`job ${id} dead`, jobInState(t.db, id, 'dead'), 30_000);
      await until('every handler over', async () => seen.now === 0);
    } finally {
      await worker.stop();
    }
    // Every attempt ran and timed out (the fault happened), two per job.
    expect(seen.total).toBe(20);
    for (const { id } of jobs) expect((await getJob(t.db, id)).failureClass).toBe('timeout');
    expect(seen.peak).toBe(2);
    expect(seen.sameJobOverlaps).toBe(0);
    expect(await counter(metrics, 'abandoned')).toBe(0);
  }, 40_000);

  it('abandons a stopped handler at the limit: counted, logged, and only then its slot is free', async () => {
    const queue = uniqueQueue('abandon');
    const kind = `hang-${queue}`;
    const seen = new Executions();
    const { handler, letGo } = hangingHandler(kind, 100, seen); // deaf: only the test ends it
    const { id: hangId } = await enqueue(t.db, { queue, kind, payload: { hang: true }, maxAttempts: 1 });
    const { logger, lines } = capturedLogger();
    const { worker, metrics } = await startWorker(queue, handler, { concurrency: 1, abandonAfterMs: 400 }, logger);
    try {
      await until('the hung job settled dead at its timeout', jobInState(t.db, hangId, 'dead'));
      const stoppedAt = performance.now();
      expect((await metrics.stoppedRunning.get()).values[0]?.value).toBe(1);
      // Its one slot is taken: the claim loop waits, and is not stale for it.
      expect(worker.health()).toMatchObject({ inFlight: 0, stoppedRunning: 1 });
      const health = await checkHealth(worker, t.db, { claimStaleMs: 1 });
      expect(health.claimLoop).toMatchObject({ freeSlots: 0, stale: false });
      const { id: nextId } = await enqueue(t.db, { queue, kind, payload: { hang: false } });
      await until('the next job done', jobInState(t.db, nextId, 'done'));
      const next = seen.starts.find((s) => s.jobId === nextId)!;
      // The one slot stayed taken by the zombie until the limit (400 ms after the stop, which
      // came at most a sweep before the settlement was seen).
      expect(next.at - stoppedAt).toBeGreaterThanOrEqual(250);
      expect(await counter(metrics, 'abandoned')).toBe(1);
      expect((await metrics.abandoned.get()).values[0]?.labels).toEqual({ queue, kind });
      expect((await metrics.stoppedRunning.get()).values[0]?.value).toBe(0);
      const warned = lines.find((l) => String(l.msg).includes('abandon'));
      expect(warned).toMatchObject({ level: 40, jobId: hangId, attempt: 1, stop: 'timeout' });
      expect(seen.running.get(hangId)).toBe(1); // abandoned, not ended
    } finally {
      letGo();
      await worker.stop();
    }
  }, 30_000);

  it('keeps the slot of a handler whose lease was lost until the limit, and settles nothing for it', async () => {
    const queue = uniqueQueue('lost');
    const kind = `lost-${queue}`;
    const seen = new Executions();
    const { handler, letGo } = hangingHandler(kind, 60_000, seen); // deaf to the lost lease
    const { id: hangId } = await enqueue(t.db, { queue, kind, payload: { hang: true } });
    const { logger, lines } = capturedLogger();
    // Lease 2 s: the lease keeper's heartbeat (every 667 ms) finds the cancelled lease.
    const { worker, metrics } = await startWorker(
      queue,
      handler,
      { concurrency: 1, leaseSeconds: 2, abandonAfterMs: 1000 },
      logger,
    );
    try {
      const running = await until('running', jobInState(t.db, hangId, 'running'));
      const { id: nextId } = await enqueue(t.db, { queue, kind, payload: { hang: false } });
      expect(
        (await cancelIfUnchanged(t.db, { id: hangId, leaseToken: running.leaseToken!, actor: 'op' })).applied,
      ).toBe(true);
      await until('the lost lease seen', async () => worker.health().stoppedRunning === 1);
      const lostAt = performance.now();
      await until('the next job done', jobInState(t.db, nextId, 'done'));
      const next = seen.starts.find((s) => s.jobId === nextId)!;
      expect(next.at - lostAt).toBeGreaterThanOrEqual(800);
      expect(await counter(metrics, 'abandoned')).toBe(1);
      expect(lines.find((l) => String(l.msg).includes('abandon'))).toMatchObject({ jobId: hangId, stop: 'lease_lost' });
      expect((await getJob(t.db, hangId)).state).toBe('cancelled');
    } finally {
      letGo();
      await worker.stop();
    }
  }, 30_000);

  it("never starts a job's retry beside its stopped execution in the same process", async () => {
    const queue = uniqueQueue('retry');
    const kind = `retry-${queue}`;
    const seen = new Executions();
    const ends: number[] = [];
    const handler = defineHandler({
      kind,
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 100,
      async handle({ job, attempt }) {
        seen.start(job.id, attempt);
        if (attempt === 1) await sleep(600); // deaf past its timeout; the retry is due at once
        seen.end(job.id);
        ends.push(performance.now());
      },
    });
    const { id } = await enqueue(t.db, { queue, kind, maxAttempts: 3 });
    const { worker, metrics } = await startWorker(queue, handler, { concurrency: 2, abandonAfterMs: 10_000 });
    try {
      await until('the job done', jobInState(t.db, id, 'done'), 20_000);
    } finally {
      await worker.stop();
    }
    expect(seen.sameJobOverlaps).toBe(0);
    // The retry was claimed while the zombie ran and handed back, not charged.
    expect(await counter(metrics, 'heldBack')).toBeGreaterThanOrEqual(1);
    const [row] = await run<{ released: number; attempts: number }>(
      t.db,
      sql`SELECT released, attempts FROM leasehold.jobs WHERE id = ${id}::uuid`,
    );
    expect(row!.released).toBeGreaterThanOrEqual(1);
    const second = seen.starts.find((s) => s.attempt > 1)!;
    expect(second.at).toBeGreaterThanOrEqual(ends[0]!);
  }, 30_000);
});

describe('receipt() with two attempts at once', () => {
  it('runs the side effect of one receipt key once, and both attempts get its result', async () => {
    const queue = uniqueQueue('receipt');
    const kind = `receipt-${queue}`;
    const key = `charge-${queue}`;
    let effects = 0;
    const results: unknown[] = [];
    const handler = defineHandler({
      kind,
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 10_000,
      async handle({ job, receipt }) {
        results.push(
          await receipt(async () => {
            effects += 1;
            await sleep(300);
            return { by: job.id };
          }, key),
        );
      },
    });
    const jobs = await enqueueMany(t.db, [
      { queue, kind },
      { queue, kind },
    ]);
    const { worker } = await startWorker(queue, handler, { concurrency: 2, batchSize: 2 });
    try {
      for (const { id } of jobs) await until(`job ${id} done`, jobInState(t.db, id, 'done'));
    } finally {
      await worker.stop();
    }
    expect(results).toHaveLength(2);
    expect(effects).toBe(1);
    expect(results[1]).toEqual(results[0]);
  }, 20_000);
});
