import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { enqueue } from '../db/queue/index.ts';
import type { Db } from '../db/client.ts';
import { silentLogger } from '../test/attempts.ts';
import { aroundExecute, testDatabase, type TestDatabase } from '../test/db.ts';
import { getJob, uniqueQueue } from '../test/factories.ts';
import { until } from '../test/wait.ts';
import type { Attempt } from './attempt.ts';
import { Completer } from './completer.ts';
import { defineHandler, HandlerRegistry } from './handler.ts';
import { Producer, type ProducerDeps, type ProducerSettings } from './producer.ts';

const NOOP = defineHandler({
  kind: 'noop',
  versions: [1],
  schema: z.unknown(),
  timeoutMs: 5000,
  handle: async () => {},
});

let t: TestDatabase;
const producers: Producer[] = [];
beforeAll(async () => {
  t = await testDatabase();
});
afterEach(async () => {
  await Promise.all(producers.splice(0).map((p) => p.stop()));
});
afterAll(async () => {
  await t?.close();
});

/**
 * A producer whose attempts run until the test ends them (`finish(id)`), so slots stay taken
 * exactly as long as the test says. `claimDb` may watch or delay the claims.
 */
function producer(
  queue: string,
  overrides: Partial<ProducerSettings> = {},
  claimDb: Db = t.db,
  claimBound?: ProducerDeps['claimBound'],
) {
  const started: Attempt[] = [];
  const finishers = new Map<string, () => void>();
  const completer = new Completer(
    { workerId: 'producer-test', ackFlushMs: 5, leaseSeconds: 30 },
    { db: t.db, logger: silentLogger },
  );
  const p = new Producer(
    {
      workerId: 'producer-test',
      queues: [queue],
      concurrency: 3,
      leaseSeconds: 30,
      batchSize: 3,
      pollMs: 60_000,
      asyncClaims: false,
      ...overrides,
    },
    {
      // It claims only the kinds it has handlers for: the test's jobs are `noop`.
      registry: new HandlerRegistry([NOOP]),
      handBack: (jobs) => completer.releaseUnstarted(jobs),
      logger: silentLogger,
      run: (attempt) =>
        new Promise<void>((resolve) => {
          started.push(attempt);
          finishers.set(attempt.job.id, resolve);
        }),
      claimBound,
    },
  );
  producers.push(p);
  p.start(claimDb);
  const finish = (id: string) => finishers.get(id)?.();
  return { producer: p, started, finish };
}

const enqueueMany = (queue: string, count: number) =>
  Promise.all(Array.from({ length: count }, () => enqueue(t.db, { queue, kind: 'noop' }).then((r) => r.id)));

describe('the producer', () => {
  it('claims no more than its free slots, and claims again when a slot frees up', async () => {
    const queue = uniqueQueue('producer');
    await enqueueMany(queue, 5);
    const { producer: p, started, finish } = producer(queue);
    await until('three attempts started', async () => started.length === 3);
    expect(p.inFlight.size).toBe(3);
    // Every slot is taken and the poll is a minute away: only a freed slot claims again.
    finish(started[0]!.job.id);
    await until('a fourth attempt started', async () => started.length === 4);
    expect(p.inFlight.size).toBe(3);
    expect(new Set(started.map((a) => a.job.id)).size).toBe(4);
  });

  it('asks for at most batchSize jobs per claim', async () => {
    const queue = uniqueQueue('producer');
    await enqueueMany(queue, 5);
    const { started } = producer(queue, { concurrency: 5, batchSize: 2 });
    await until('five attempts started', async () => started.length === 5);
    // Batches of two: the claims that took them were 2, 2 and 1 jobs, so the attempts of each
    // claim share its lease token.
    const byToken = new Map<string, number>();
    for (const a of started) byToken.set(a.job.leaseToken, (byToken.get(a.job.leaseToken) ?? 0) + 1);
    expect([...byToken.values()].sort((a, b) => a - b)).toEqual([1, 2, 2]);
  });

  it('claims at once when woken instead of waiting for the poll', async () => {
    const queue = uniqueQueue('producer');
    const { producer: p, started } = producer(queue);
    await new Promise((r) => setTimeout(r, 100)); // the first (empty) claim is over
    const [id] = await enqueueMany(queue, 1);
    const woken = performance.now();
    p.wake();
    await until('the job started', async () => started.length === 1, 5000, 5);
    expect(started[0]!.job.id).toBe(id);
    expect(performance.now() - woken).toBeLessThan(5000); // the poll is a minute
  });

  it("walks a queue from the head after a wake-up's restart: a higher-priority job behind its bound starts next", async () => {
    const queue = uniqueQueue('producer');
    await enqueueMany(queue, 6);
    // A clock that never moves: only a short claim or restartFromHead sends a walk to the head.
    const { producer: p, started, finish } = producer(queue, {}, t.db, { now: () => 0 });
    await until('three attempts started', async () => started.length === 3);
    const urgent = await enqueue(t.db, { queue, kind: 'noop', priority: 5 });
    // A freed slot claims one job: after the last key taken, so one of the backlog.
    finish(started[0]!.job.id);
    await until('a fourth attempt started', async () => started.length === 4);
    expect(started[3]!.job.id).not.toBe(urgent.id);
    expect(started[3]!.job.priority).toBe(0);
    // What the worker does on a wake-up for the queue: the next walk starts from the head.
    p.restartFromHead(queue);
    finish(started[1]!.job.id);
    await until('a fifth attempt started', async () => started.length === 5);
    expect(started[4]!.job.id).toBe(urgent.id);
  });

  it('resolves whenDrained once the last attempt is over', async () => {
    const queue = uniqueQueue('producer');
    await enqueueMany(queue, 2);
    const { producer: p, started, finish } = producer(queue);
    await until('two attempts started', async () => started.length === 2);
    let drained = false;
    const whenDrained = p.whenDrained().then(() => {
      drained = true;
    });
    finish(started[0]!.job.id);
    await new Promise((r) => setTimeout(r, 50));
    expect(drained).toBe(false);
    finish(started[1]!.job.id);
    await whenDrained;
    expect(p.inFlight.size).toBe(0);
  });

  it('hands back the jobs of a claim that was in flight when it stopped, and starts none', async () => {
    const queue = uniqueQueue('producer');
    const [id] = await enqueueMany(queue, 1);
    let claimStarted: () => void = () => {};
    const claimRunning = new Promise<void>((resolve) => {
      claimStarted = resolve;
    });
    let releaseClaim: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      releaseClaim = resolve;
    });
    // A claim connection whose statements wait until the test lets them go.
    const slowClaims = aroundExecute(
      t.db,
      async (run) => {
        claimStarted();
        await held;
        return run();
      },
      { unprepared: true },
    );
    const { producer: p, started } = producer(queue, {}, slowClaims);
    await claimRunning;
    const stopped = p.stop();
    releaseClaim();
    await stopped;
    expect(started).toEqual([]);
    const job = await getJob(t.db, id!);
    expect(job.state).toBe('ready');
    expect(job.attempts).toBe(1); // the claim counted the attempt; the release handed it back
  });
});

describe('the producer without handlers', () => {
  it('claims nothing: a job it has no handler for stays ready', async () => {
    const queue = uniqueQueue('nohandlers');
    const { id } = await enqueue(t.db, { queue, kind: 'noop' });
    const p = new Producer(
      {
        workerId: 'bare',
        queues: [queue],
        concurrency: 1,
        leaseSeconds: 30,
        batchSize: 1,
        pollMs: 50,
        asyncClaims: false,
      },
      { registry: new HandlerRegistry([]), handBack: async () => {}, logger: silentLogger, run: async () => {} },
    );
    producers.push(p);
    p.start(t.db);
    await new Promise((resolve) => setTimeout(resolve, 300)); // several poll intervals
    expect(p.lastClaimAt).toBeNull();
    expect(await getJob(t.db, id)).toMatchObject({ state: 'ready', attempts: 0 });
  });
});
