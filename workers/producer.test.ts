import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { completeIfLeaseHeld, declareLimits, enqueue } from '../db/queue/index.ts';
import type { Db } from '../db/client.ts';
import { silentLogger } from '../test/attempts.ts';
import { aroundExecute, testDatabase, type TestDatabase } from '../test/db.ts';
import { getJob, uniqueQueue } from '../test/factories.ts';
import { until } from '../test/wait.ts';
import type { Attempt } from './attempt.ts';
import { Completer } from './completer.ts';
import { defineHandler, type HandlerLimit, HandlerRegistry } from './handler.ts';
import { claimGroups, Producer, type ProducerDeps, type ProducerSettings } from './producer.ts';

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

describe('claimGroups', () => {
  const handler = (kind: string, limit?: HandlerLimit) =>
    defineHandler({ kind, versions: [1, 2], schema: z.unknown(), timeoutMs: 1000, limit, handle: async () => {} });
  const registry = new HandlerRegistry([
    handler('g.plain'),
    handler('g.own', { max: 2 }),
    handler('g.mail', { resource: 'smtp', max: 3 }),
    handler('g.other'),
    handler('g.digest', { resource: 'smtp', max: 3 }),
  ]);
  const kinds = (...names: string[]) => names.map((kind) => ({ kind, versions: [1, 2] }));
  // The registry lists its handlers by kind: the claims come in the order their keys first appear.
  const unlimitedClaims = (queues: string[]) => [
    { queues, kinds: kinds('g.other', 'g.plain') },
    { queues, kinds: kinds('g.digest', 'g.mail'), limits: ['resource:smtp'] },
    { queues, kinds: kinds('g.own'), limits: ['kind:g.own'] },
  ];

  it('without queue limits: one claim of the kinds without a limit, one per limit key, each of every queue', () => {
    expect(claimGroups(registry, ['a', 'b', 'c'])).toEqual(unlimitedClaims(['a', 'b', 'c']));
    expect(claimGroups(registry, ['a', 'b', 'c'], {})).toEqual(unlimitedClaims(['a', 'b', 'c']));
    // The unlimited claim names no limit at all: it runs the claim text of before, byte for byte.
    expect(claimGroups(registry, ['a'])[0]).not.toHaveProperty('limits');
    expect(claimGroups(new HandlerRegistry([]), ['a'], { a: { max: 1 } })).toEqual([]);
  });

  it('claims each limited queue alone, every claim of it counting toward queue:NAME too; the other queues as before', () => {
    const groups = claimGroups(registry, ['a', 'b', 'c', 'd'], { b: { max: 2 }, d: { rate: { max: 5, perMs: 1000 } } });
    expect(groups).toEqual([
      ...unlimitedClaims(['a', 'c']),
      { queues: ['b'], kinds: kinds('g.other', 'g.plain'), limits: ['queue:b'] },
      { queues: ['b'], kinds: kinds('g.digest', 'g.mail'), limits: ['resource:smtp', 'queue:b'] },
      { queues: ['b'], kinds: kinds('g.own'), limits: ['kind:g.own', 'queue:b'] },
      { queues: ['d'], kinds: kinds('g.other', 'g.plain'), limits: ['queue:d'] },
      { queues: ['d'], kinds: kinds('g.digest', 'g.mail'), limits: ['resource:smtp', 'queue:d'] },
      { queues: ['d'], kinds: kinds('g.own'), limits: ['kind:g.own', 'queue:d'] },
    ]);
    expect(groups[0]).not.toHaveProperty('limits');
    // Every served queue is claimed by exactly one claim of each kind group.
    for (const kind of ['g.plain', 'g.own', 'g.mail'])
      expect(
        groups
          .filter((g) => g.kinds.some((k) => k.kind === kind))
          .flatMap((g) => g.queues)
          .sort(),
      ).toEqual(['a', 'b', 'c', 'd']);
  });

  it('with every queue limited, makes no claim of the unlimited queues, and ignores a limit of a queue it does not serve', () => {
    const plain = new HandlerRegistry([handler('g.plain')]);
    expect(claimGroups(plain, ['a', 'b'], { a: { max: 1 }, b: { max: 2 }, elsewhere: { max: 3 } })).toEqual([
      { queues: ['a'], kinds: kinds('g.plain'), limits: ['queue:a'] },
      { queues: ['b'], kinds: kinds('g.plain'), limits: ['queue:b'] },
    ]);
  });
});

describe('the producer with a queue limit', () => {
  it("claims no more of the limited queue than its limit leaves, the other queue's jobs as many as slots, and claims again when a limited attempt settles", async () => {
    const limited = uniqueQueue('producer-limited');
    const free = uniqueQueue('producer-free');
    await declareLimits(t.db, [{ scope: 'queue', name: limited, max: 1 }]);
    await enqueueMany(limited, 3);
    await enqueueMany(free, 2);
    const started: Attempt[] = [];
    const finishers = new Map<string, () => void>();
    const p = new Producer(
      {
        workerId: 'producer-queue-limit',
        queues: [free, limited],
        queueLimits: { [limited]: { max: 1 } },
        concurrency: 5,
        leaseSeconds: 30,
        batchSize: 5,
        // A minute: only a wake-up claims again within the test.
        pollMs: 60_000,
        asyncClaims: false,
      },
      {
        registry: new HandlerRegistry([NOOP]),
        handBack: async () => {},
        logger: silentLogger,
        // Each attempt runs until the test finishes it, then completes in the database (freeing the limit).
        run: async (attempt) => {
          started.push(attempt);
          await new Promise<void>((resolve) => finishers.set(attempt.job.id, resolve));
          await completeIfLeaseHeld(t.db, attempt.job);
        },
      },
    );
    producers.push(p);
    p.start(t.db);
    await until('the first claims made', async () => started.length === 3);
    await new Promise((resolve) => setTimeout(resolve, 200)); // no further claim comes
    const byQueue = () => started.map((a) => a.job.queue).filter((q) => q === limited).length;
    expect(started.length).toBe(3);
    expect(byQueue()).toBe(1);
    expect(started.filter((a) => a.job.queue === free)).toHaveLength(2);
    // Two slots are free: only the limited attempt's settlement wakes the loop, a minute before its poll.
    finishers.get(started.find((a) => a.job.queue === limited)!.job.id)!();
    await until('a second job of the limited queue started', async () => byQueue() === 2);
    expect(started.length).toBe(4);
  });
});
