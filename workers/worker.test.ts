import { sql } from 'drizzle-orm';
import pino from 'pino';
import { z } from 'zod';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cancelIfUnchanged, enqueue, retryIfTerminal, WAKE_CHANNEL, withMaintenanceLock } from '../db/queue/index.ts';
import { run } from '../db/queue/executor.ts';
import type { Db } from '../db/client.ts';
import { aroundExecute, testDatabase, type TestDatabase } from '../test/db.ts';
import { attemptsOf, getJob, uniqueQueue, jobInState } from '../test/factories.ts';
import { silentLogger } from '../test/attempts.ts';
import { until } from '../test/wait.ts';
import { PermanentError, RateLimitedError, TransientError } from './errors.ts';
import { defineHandler, HandlerRegistry, type Handler } from './handler.ts';
import { AttemptAborted } from './attempt.ts';
import { Worker, type WorkerSettings } from './worker.ts';

let t: TestDatabase;
const workers: Worker[] = [];
beforeAll(async () => {
  t = await testDatabase({ max: 30 });
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop(0)));
});
afterAll(async () => {
  await t?.close();
});

function settings(queue: string, overrides: Partial<WorkerSettings> = {}): WorkerSettings {
  return {
    workerId: `test-${queue}-${workers.length}`,
    queues: [queue],
    concurrency: 5,
    leaseSeconds: 30,
    batchSize: 5,
    pollMs: 100,
    listen: false,
    graceMs: 1000,
    ackFlushMs: 5,
    asyncClaims: false,
    retry: { baseDelayMs: 60_000 },
    registryIntervalMs: 10_000,
    scheduler: false,
    maintenance: {
      enabled: false,
      reapIntervalMs: 200,
      retentionIntervalMs: 60_000,
      staleWorkerSeconds: 60,
      receiptsRetentionSeconds: 86400,
      retention: {},
    },
    ...overrides,
  };
}

async function startWorker(queue: string, handlers: Handler[], overrides: Partial<WorkerSettings> = {}, db: Db = t.db) {
  const worker = new Worker(settings(queue, overrides), {
    db,
    // A test that watches the worker's statements sees its claims too.
    claimDb: db === t.db ? undefined : db,
    databaseUrl: t.url,
    registry: new HandlerRegistry(handlers),
    logger: pino({ level: 'silent' }),
  });
  workers.push(worker);
  await worker.start();
  return worker;
}

const stateIs = (id: string, ...states: string[]) => jobInState(t.db, id, ...states);
/** The job once its first attempt failed and it waits for the retry. */
const waitingForRetry = (id: string) => async () => {
  const job = await getJob(t.db, id);
  return job.attempts === 1 && job.state === 'ready' ? job : undefined;
};

/**
 * The test database with every named statement run through `around(name, run)`: it can count,
 * delay or watch the worker's claims and acknowledgements (`run` executes the statement).
 */
function aroundStatements(around: (name: string, run: () => Promise<unknown>) => Promise<unknown>): Db {
  type Session = { prepareQuery(...args: unknown[]): { execute(): Promise<unknown> } };
  const session = (t.db as unknown as { session: Session }).session;
  const wrapped = Object.create(session, {
    prepareQuery: {
      value: (...args: unknown[]) => {
        const prepared = session.prepareQuery(...args);
        return { execute: () => around(String(args[2]), () => prepared.execute()) };
      },
    },
  });
  return Object.create(t.db, { session: { value: wrapped } }) as Db;
}

const noop = defineHandler({
  kind: 'noop',
  versions: [1],
  schema: z.object({}).passthrough(),
  timeoutMs: 5000,
  handle: async () => 'ok',
});

describe('a worker', () => {
  it('runs jobs to done, acknowledging them in batches', async () => {
    const queue = uniqueQueue();
    const ids = await Promise.all(
      Array.from({ length: 20 }, () => enqueue(t.db, { queue, kind: 'noop' }).then((r) => r.id)),
    );
    // Counts the acknowledgement statements this worker runs.
    let acks = 0;
    const db = aroundStatements((name, run) => {
      if (name.startsWith('leasehold_complete_many')) acks += 1;
      return run();
    });
    await startWorker(queue, [noop], {}, db);
    for (const id of ids) await until('done', stateIs(id, 'done'));
    // Five slots, so four claims of five: each claim's completions share a statement or two.
    expect(acks).toBeGreaterThan(0);
    expect(acks).toBeLessThanOrEqual(ids.length / 2);
  });

  it('claims again when a slot frees up if every slot was taken, and not after each job otherwise', async () => {
    // Counts the claim statements this worker runs.
    let claims = 0;
    const db = aroundStatements((name, run) => {
      if (name.startsWith('leasehold_claim')) claims += 1;
      return run();
    });
    const slow = defineHandler({
      kind: 'slow',
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 5000,
      handle: () => new Promise((r) => setTimeout(r, 30)),
    });

    // Slots free: one claim takes all three jobs; their endings start no further claims.
    const roomy = uniqueQueue('roomy');
    const few = await Promise.all(
      Array.from({ length: 3 }, () => enqueue(t.db, { queue: roomy, kind: 'slow' }).then((r) => r.id)),
    );
    await startWorker(roomy, [slow], { concurrency: 5, batchSize: 5, pollMs: 60_000 }, db);
    for (const id of few) await until('done', stateIs(id, 'done'));
    await new Promise((r) => setTimeout(r, 200));
    expect(claims).toBe(1);

    // One slot: each ending wakes the loop at once, long before its 60 s poll.
    claims = 0;
    const narrow = uniqueQueue('narrow');
    const queued = await Promise.all(
      Array.from({ length: 3 }, () => enqueue(t.db, { queue: narrow, kind: 'slow' }).then((r) => r.id)),
    );
    await startWorker(narrow, [slow], { concurrency: 1, batchSize: 1, pollMs: 60_000 }, db);
    for (const id of queued) await until('done', stateIs(id, 'done'), 5000);
    expect(claims).toBeGreaterThanOrEqual(3);
  });

  it('claims on a connection of its own, not through the shared pool, and closes it when it stops', async () => {
    const queue = uniqueQueue();
    const claimConnections = async () =>
      run<{ pid: number }>(
        t.db,
        sql`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'leasehold-claim'`,
      );
    const onShared: string[] = [];
    const shared = aroundStatements((name, run) => {
      onShared.push(name);
      return run();
    });
    const worker = new Worker(settings(queue, { pollMs: 50, asyncClaims: true }), {
      db: shared,
      databaseUrl: t.url,
      registry: new HandlerRegistry([noop]),
      logger: pino({ level: 'silent' }),
    });
    workers.push(worker);
    await worker.start();
    for (let round = 0; round < 3; round++) {
      const { id } = await enqueue(t.db, { queue, kind: 'noop' });
      await until('done', stateIs(id, 'done'));
    }
    expect(await claimConnections()).toHaveLength(1);
    // The acknowledgements went through the shared pool, the claims did not.
    expect(onShared.filter((name) => name.startsWith('leasehold_complete'))).not.toEqual([]);
    expect(onShared.filter((name) => name.startsWith('leasehold_claim'))).toEqual([]);
    await worker.stop(0);
    await until('claim connection closed', async () => ((await claimConnections()).length === 0 ? true : undefined));
  });

  it('gets a new claim connection when the server cuts its own, and goes on claiming', async () => {
    const queue = uniqueQueue();
    await startWorker(queue, [noop], { pollMs: 50 });
    const first = await enqueue(t.db, { queue, kind: 'noop' });
    await until('done', stateIs(first.id, 'done'));
    const cut = await run<{ cut: boolean }>(
      t.db,
      sql`SELECT pg_terminate_backend(pid) AS cut FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'leasehold-claim'`,
    );
    expect(cut).toEqual([{ cut: true }]);
    const second = await enqueue(t.db, { queue, kind: 'noop' });
    await until('done after the cut', stateIs(second.id, 'done'), 10_000);
  });

  it('claims without waiting for the WAL flush only when asked to (asyncClaims)', async () => {
    for (const asyncClaims of [false, true]) {
      const names = new Set<string>();
      const db = aroundStatements((name, run) => {
        if (name.startsWith('leasehold_claim')) names.add(name);
        return run();
      });
      const queue = uniqueQueue();
      const { id } = await enqueue(t.db, { queue, kind: 'noop' });
      await startWorker(queue, [noop], { asyncClaims }, db);
      await until('done', stateIs(id, 'done'));
      // The bounded text (the producer keeps a lower bound: db/queue/claim.ts).
      expect([...names]).toEqual([
        asyncClaims ? 'leasehold_claim_one_kind_after_async' : 'leasehold_claim_one_kind_after',
      ]);
    }
  });

  it('leaves jobs of a kind it has no handler for ready, with their ready rows, while it drains its own', async () => {
    const queue = uniqueQueue();
    const other = await enqueue(t.db, { queue, kind: 'no.such.kind' });
    const mine = await Promise.all(Array.from({ length: 5 }, () => enqueue(t.db, { queue, kind: 'noop' })));
    const worker = await startWorker(queue, [noop]);
    for (const job of mine) await until('done', stateIs(job.id, 'done'));
    // Claims went on after its own were done (it polls), and still left the other kind alone.
    const claimsSoFar = worker.health().lastClaimAt;
    await until('another claim', async () => (worker.health().lastClaimAt !== claimsSoFar ? true : undefined));
    expect(await getJob(t.db, other.id)).toMatchObject({ state: 'ready', attempts: 0, lastError: null });
    const [row] = await run<{ n: number }>(
      t.db,
      sql`SELECT count(*)::int AS n FROM leasehold.ready_jobs WHERE id = ${other.id}::uuid`,
    );
    expect(row).toEqual({ n: 1 });
  });

  it('leaves a job of a kind version it does not run ready; an invalid payload still ends dead as permanent', async () => {
    const queue = uniqueQueue();
    const strict = defineHandler({
      kind: 'strict',
      versions: [1, 2],
      schema: z.object({ orderId: z.uuid() }),
      timeoutMs: 5000,
      handle: async () => 'ok',
    });
    const v3 = await enqueue(t.db, {
      queue,
      kind: 'strict',
      kindVersion: 3,
      payload: { orderId: crypto.randomUUID() },
    });
    const v2 = await enqueue(t.db, {
      queue,
      kind: 'strict',
      kindVersion: 2,
      payload: { orderId: crypto.randomUUID() },
    });
    const bad = await enqueue(t.db, { queue, kind: 'strict', payload: { orderId: 42 } });
    await startWorker(queue, [strict]);
    await until('v2 done', stateIs(v2.id, 'done'));
    const invalid = await until('dead', stateIs(bad.id, 'dead'));
    expect(invalid).toMatchObject({ failureClass: 'permanent', attempts: 1 });
    expect(invalid.lastError).toMatch(/invalid payload for strict v1/);
    expect(await getJob(t.db, v3.id)).toMatchObject({ state: 'ready', attempts: 0 });
  });

  it("given no queues, serves its handlers' default queues and default", async () => {
    const mailQueue = uniqueQueue('mail');
    const mail = defineHandler({ ...noop, kind: 'mail.send', defaultQueue: mailQueue } as Handler);
    const inMail = await enqueue(t.db, { queue: mailQueue, kind: 'mail.send' });
    const inDefault = await enqueue(t.db, { queue: 'default', kind: 'mail.send' });
    const worker = new Worker(settings('unused', { queues: [] }), {
      db: t.db,
      databaseUrl: t.url,
      registry: new HandlerRegistry([mail]),
      logger: pino({ level: 'silent' }),
    });
    workers.push(worker);
    await worker.start();
    await until('mail done', stateIs(inMail.id, 'done'));
    await until('default done', stateIs(inDefault.id, 'done'));
    const [entry] = await run<{ queues: string[] }>(
      t.db,
      sql`SELECT queues FROM leasehold.workers WHERE id = ${worker.health().workerId as string}`,
    );
    expect(entry!.queues).toEqual(['default', mailQueue].sort());
  });

  it('maps typed errors to failure classes: rate limited honours Retry-After, permanent is dead', async () => {
    const queue = uniqueQueue();
    const failing = defineHandler({
      kind: 'failing',
      versions: [1],
      schema: z.object({ how: z.enum(['rate', 'permanent', 'plain']) }),
      timeoutMs: 5000,
      async handle({ payload }) {
        if (payload.how === 'rate') throw new RateLimitedError('429', { retryAfterMs: 120_000 });
        if (payload.how === 'permanent') throw new PermanentError('422 from provider');
        throw new Error('surprise');
      },
    });
    const rate = await enqueue(t.db, { queue, kind: 'failing', payload: { how: 'rate' } });
    const permanent = await enqueue(t.db, { queue, kind: 'failing', payload: { how: 'permanent' } });
    const plain = await enqueue(t.db, { queue, kind: 'failing', payload: { how: 'plain' } });
    await startWorker(queue, [failing]);
    const limited = await until('retry scheduled', async () => {
      const job = await getJob(t.db, rate.id);
      return job.state === 'ready' && job.attempts === 1 ? job : undefined;
    });
    expect(limited.failureClass).toBe('rate_limited');
    expect(limited.runAt.getTime() - limited.updatedAt.getTime()).toBeGreaterThan(119_000);
    expect(await until('dead', stateIs(permanent.id, 'dead'))).toMatchObject({ failureClass: 'permanent' });
    const retried = await until('retry', waitingForRetry(plain.id));
    expect(retried).toMatchObject({ failureClass: 'transient', lastError: 'Error: surprise' });
  });

  it('fails a handler that overruns its timeout as timeout, firing its signal', async () => {
    const queue = uniqueQueue();
    let reason: unknown;
    const slow = defineHandler({
      kind: 'slow',
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 200,
      handle: ({ signal }) =>
        new Promise((_, reject) =>
          signal.addEventListener('abort', () => reject((reason = signal.reason)), { once: true }),
        ),
    });
    const { id } = await enqueue(t.db, { queue, kind: 'slow' });
    await startWorker(queue, [slow]);
    const job = await until('retry', waitingForRetry(id));
    expect(job).toMatchObject({ failureClass: 'timeout' });
    expect(reason).toBeInstanceOf(AttemptAborted);
  });

  it('ends an attempt at its timeout even when the handler never looks at its signal', async () => {
    const queue = uniqueQueue();
    const deaf = defineHandler({
      kind: 'deaf',
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 150,
      handle: () => new Promise(() => {}),
    });
    const { id } = await enqueue(t.db, { queue, kind: 'deaf' });
    await startWorker(queue, [deaf]);
    const job = await until('retry', waitingForRetry(id));
    expect(job).toMatchObject({ failureClass: 'timeout' });
    expect(job.lastError).toMatch(/deaf did not finish within 150 ms/);
  });

  it('takes a handler that returns a plain value or throws before returning a promise', async () => {
    const queue = uniqueQueue();
    const plain = defineHandler({
      kind: 'plain',
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 5000,
      handle: (() => 'done') as never,
    });
    const thrower = defineHandler({
      kind: 'thrower',
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 5000,
      handle: (() => {
        throw new PermanentError('refused at once');
      }) as never,
    });
    const done = await enqueue(t.db, { queue, kind: 'plain' });
    const refused = await enqueue(t.db, { queue, kind: 'thrower' });
    await startWorker(queue, [plain, thrower]);
    await until('done', stateIs(done.id, 'done'));
    expect(await until('dead', stateIs(refused.id, 'dead'))).toMatchObject({
      failureClass: 'permanent',
      lastError: expect.stringMatching(/refused at once/),
    });
  });

  it('keeps heartbeating a handler that runs longer than its lease, so it is not reaped', async () => {
    const queue = uniqueQueue();
    const long = defineHandler({
      kind: 'long',
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 30_000,
      handle: () => new Promise((r) => setTimeout(r, 5_000)),
    });
    const { id } = await enqueue(t.db, { queue, kind: 'long' });
    // Lease 2 s, handler 5 s, and this worker also runs the reaper every 200 ms.
    await startWorker(queue, [long], {
      leaseSeconds: 2,
      maintenance: { ...settings(queue).maintenance, enabled: true, reapIntervalMs: 200 },
    });
    const job = await until('done', stateIs(id, 'done'), 20_000);
    expect(job.attempts).toBe(1);
    expect((await attemptsOf(t.db, id)).map((a) => a.outcome)).toEqual(['completed']);
  });

  it('runs again a job whose claim committed but whose answer was lost, while the worker lives on', async () => {
    // The claim commits and then the connection fails (the answer never arrives): the worker
    // never knows the job, and the worker lease would cover it for as long as the worker lives.
    const queue = uniqueQueue();
    let handled = 0;
    const counted = defineHandler({
      kind: 'counted',
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 5000,
      handle: async () => {
        handled += 1;
      },
    });
    let lost = 0;
    const db = aroundStatements(async (name, runIt) => {
      const result = await runIt();
      const rows = (result as { rows?: unknown[] } | unknown[]) ?? [];
      const count = Array.isArray(rows) ? rows.length : (rows.rows?.length ?? 0);
      if (name.startsWith('leasehold_claim') && count > 0 && lost === 0) {
        lost += 1;
        throw Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });
      }
      return result;
    });
    const { id } = await enqueue(t.db, { queue, kind: 'counted' });
    const worker = await startWorker(
      queue,
      [counted],
      { leaseSeconds: 2, maintenance: { ...settings(queue).maintenance, enabled: true, reapIntervalMs: 200 } },
      db,
    );
    const job = await until('done', stateIs(id, 'done'), 20_000);
    expect(lost).toBe(1); // the lost answer happened, to a claim that took the job
    expect(handled).toBe(1); // the lost attempt never ran a handler; the next one did
    expect(job.attempts).toBe(2);
    expect((await attemptsOf(t.db, id)).map((a) => a.outcome)).toEqual(['lease_expired', 'completed']);
    expect(worker.health().status).toBe('ok');
  });

  it('fires the AbortSignal when a heartbeat is rejected (operator cancel), and settles nothing', async () => {
    const queue = uniqueQueue();
    let seen: unknown = null;
    const waiting = defineHandler({
      kind: 'waiting',
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 60_000,
      handle: ({ signal }) =>
        new Promise((_, reject) =>
          signal.addEventListener(
            'abort',
            () => {
              seen = signal.reason;
              reject(signal.reason);
            },
            { once: true },
          ),
        ),
    });
    const { id } = await enqueue(t.db, { queue, kind: 'waiting' });
    await startWorker(queue, [waiting], { leaseSeconds: 2 }); // heartbeats every ~670 ms
    const running = await until('running', stateIs(id, 'running'));
    expect((await cancelIfUnchanged(t.db, { id, leaseToken: running.leaseToken!, actor: 'op' })).applied).toBe(true);
    await until('signal', async () => seen !== null);
    expect(seen).toBeInstanceOf(AttemptAborted);
    expect((seen as AttemptAborted).reason).toBe('lease_lost');
    await new Promise((r) => setTimeout(r, 300));
    expect(await getJob(t.db, id)).toMatchObject({ state: 'cancelled', failureClass: 'cancelled' });
  });

  it('lets a handler extend its own lease through a destructured heartbeat, and completes the job', async () => {
    const queue = uniqueQueue();
    const leases: number[] = [];
    const beating = defineHandler({
      kind: 'beating',
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 60_000,
      async handle({ heartbeat, job, deliveryKey, attempt }) {
        leases.push(job.leaseUntil.getTime());
        await new Promise((r) => setTimeout(r, 50));
        await heartbeat();
        leases.push(job.leaseUntil.getTime());
        expect(deliveryKey).toBe(`beating:${job.id}`);
        expect(attempt).toBe(1);
      },
    });
    const { id } = await enqueue(t.db, { queue, kind: 'beating' });
    await startWorker(queue, [beating], { leaseSeconds: 30 });
    await until('done', stateIs(id, 'done'));
    expect(leases).toHaveLength(2);
    expect(leases[1]!).toBeGreaterThan(leases[0]!);
  });

  it('returns a recorded receipt to a later attempt instead of repeating the side effect', async () => {
    const queue = uniqueQueue();
    let effects = 0;
    const values: unknown[] = [];
    const sender = defineHandler({
      kind: 'sender',
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 5000,
      async handle({ receipt, attempt }) {
        const value = await receipt(async () => {
          effects += 1;
          return { sentBy: attempt };
        });
        values.push(value);
        if (attempt === 1) throw new TransientError('crashed after the side effect, before acknowledging');
      },
    });
    const { id } = await enqueue(t.db, { queue, kind: 'sender', idempotencyKey: `receipt:${queue}` });
    await startWorker(queue, [sender], { retry: { baseDelayMs: 10 } });
    await until('done', stateIs(id, 'done'));
    expect(effects).toBe(1);
    expect(values).toEqual([{ sentBy: 1 }, { sentBy: 1 }]);
    const [row] = await run(
      t.db,
      sql`SELECT job_id, attempt FROM leasehold.receipts WHERE key = ${`receipt:${queue}`}`,
    );
    expect(row).toEqual({ job_id: id, attempt: 1 });
  });

  it('starts a job on an idle queue through LISTEN long before the poll interval', async () => {
    const queue = uniqueQueue();
    const worker = await startWorker(queue, [noop], { listen: true, pollMs: 30_000 });
    await until('listening', async () => worker.health().listening === true);
    await new Promise((r) => setTimeout(r, 200)); // idle: the first poll has passed
    const { id } = await enqueue(t.db, { queue, kind: 'noop' });
    const job = await until('done', stateIs(id, 'done'), 10_000);
    const latency = job.startedAt!.getTime() - job.createdAt.getTime();
    expect(latency).toBeLessThan(1_000);
  });

  it('does not lose a wake-up that arrives while a claim is running', async () => {
    const queue = uniqueQueue();
    // A database whose claims answer 400 ms after they ran, so a job can be committed and its
    // NOTIFY heard after the claim's snapshot but before the worker has its (empty) answer.
    let slow = false;
    let claimRan: () => void = () => {};
    const db = aroundStatements(async (name, run) => {
      if (!slow || !name.startsWith('leasehold_claim')) return run();
      const result = await run();
      claimRan();
      await new Promise((r) => setTimeout(r, 400));
      return result;
    });
    const worker = await startWorker(queue, [noop], { listen: true, pollMs: 60_000 }, db);
    await until('listening', async () => worker.health().listening === true);
    await new Promise((r) => setTimeout(r, 200)); // idle: the first claim found nothing
    slow = true;
    const ran = new Promise<void>((resolve) => (claimRan = resolve));
    await t.pool.query('SELECT pg_notify($1, $2)', [WAKE_CHANNEL, queue]); // starts a claim
    await ran; // it ran and found nothing; its answer is on the way
    slow = false;
    const { id } = await enqueue(t.db, { queue, kind: 'noop' }, { notify: false });
    await t.pool.query('SELECT pg_notify($1, $2)', [WAKE_CHANNEL, queue]); // heard during the claim
    // The claim's answer is empty; the wake-up that came meanwhile must start another claim at
    // once, not after the 60 s poll.
    await until('done', stateIs(id, 'done'), 5_000);
  });

  it('does not time out an attempt that finished in time and waits for its acknowledgement', async () => {
    const queue = uniqueQueue();
    // A database whose acknowledgements answer 400 ms late: longer than the handler's timeout.
    const db = aroundStatements(async (name, run) => {
      if (name === 'leasehold_complete_many') await new Promise((r) => setTimeout(r, 400));
      return run();
    });
    const signals: AbortSignal[] = [];
    const quick = defineHandler({
      kind: 'quick',
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 100,
      handle: async ({ signal }) => {
        signals.push(signal);
      },
    });
    const { id } = await enqueue(t.db, { queue, kind: 'quick' });
    await startWorker(queue, [quick], {}, db);
    const job = await until('done', stateIs(id, 'done'), 5_000);
    expect(job.attempts).toBe(1);
    expect((await attemptsOf(t.db, id)).map((a) => a.outcome)).toEqual(['completed']); // no timeout recorded
    expect(signals).toHaveLength(1);
    expect(signals[0]!.aborted).toBe(false);
  });

  it('on stop, releases what did not finish within the grace period, for another worker at once', async () => {
    const queue = uniqueQueue();
    const stuck = defineHandler({
      kind: 'stuck',
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 60_000,
      handle: ({ signal }) =>
        new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true })),
    });
    const { id } = await enqueue(t.db, { queue, kind: 'stuck' });
    const worker = await startWorker(queue, [stuck]);
    await until('running', stateIs(id, 'running'));
    await worker.stop(200);
    const job = await getJob(t.db, id);
    expect(job).toMatchObject({ state: 'ready', attempts: 1, leaseToken: null });
    expect(job.runAt.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
    expect((await attemptsOf(t.db, id)).map((a) => a.outcome)).toEqual(['released']);
    const rows = await run(t.db, sql`SELECT 1 FROM leasehold.workers WHERE id = ${settings(queue).workerId}`);
    expect(rows).toEqual([]);
  });
});

describe('maintenance lock', () => {
  it('lets one process run a maintenance task at a time', async () => {
    let inner: { ran: boolean } | undefined;
    const outer = await withMaintenanceLock(t.db, 'reaper-test', async () => {
      inner = await withMaintenanceLock(t.db, 'reaper-test', async () => 'second');
      return 'first';
    });
    expect(outer).toEqual({ ran: true, result: 'first' });
    expect(inner).toEqual({ ran: false });
  });
});

describe('two attempts of one job in one worker', () => {
  it('never runs the new attempt beside the stale one: it is handed back until the stale one is over', async () => {
    const queue = uniqueQueue();
    const signals: string[] = [];
    let calls = 0;
    let running = 0;
    let overlapped = false;
    const twice = defineHandler({
      kind: 'twice',
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 60_000,
      handle: async ({ signal, attempt }) => {
        calls += 1;
        running += 1;
        if (running > 1) overlapped = true;
        try {
          if (attempt > 1) return 'second execution done';
          await new Promise((_, reject) =>
            signal.addEventListener(
              'abort',
              () => {
                signals.push((signal.reason as AttemptAborted).reason);
                reject(signal.reason);
              },
              { once: true },
            ),
          );
        } finally {
          running -= 1;
        }
      },
    });
    const { id } = await enqueue(t.db, { queue, kind: 'twice' });
    // Lease 6 s: heartbeats every 2 s, so the retry below is claimed before the stale
    // attempt learns it was cancelled.
    await startWorker(queue, [twice], { leaseSeconds: 6, pollMs: 50 });
    const first = await until('running', stateIs(id, 'running'));
    expect((await cancelIfUnchanged(t.db, { id, leaseToken: first.leaseToken!, actor: 'op' })).applied).toBe(true);
    expect((await retryIfTerminal(t.db, { id, actor: 'op' })).applied).toBe(true);
    const done = await until('done', stateIs(id, 'done'), 15_000);
    await until('stale attempt aborted', async () => signals.length > 0, 10_000);
    expect(signals).toEqual(['lease_lost']);
    expect(overlapped).toBe(false);
    expect(calls).toBe(2);
    // The retry, claimed while attempt 1 still ran here, was handed back (not charged) each
    // time until attempt 1 was over (a heartbeat told it), then ran once.
    const heldBack = done.attempts - 2;
    expect(heldBack).toBeGreaterThanOrEqual(1);
    expect((await attemptsOf(t.db, id)).map((a) => a.outcome)).toEqual([
      'cancelled',
      ...Array<string>(heldBack).fill('released'),
      'completed',
    ]);
  });
});

describe('shutdown with a grace period longer than the lease', () => {
  it('keeps heartbeating while handlers finish, so nothing is reaped and run twice', async () => {
    const queue = uniqueQueue();
    const slow = defineHandler({
      kind: 'slow-past-lease',
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 60_000,
      // Half again the lease: its end is past the lease's first deadline, so only heartbeats keep it.
      handle: () => new Promise((r) => setTimeout(r, 4_500)),
    });
    const { id } = await enqueue(t.db, { queue, kind: 'slow-past-lease' });
    // 3 s, not 2: a beat every second still has two to land in on a loaded 2-core machine.
    const worker = await startWorker(queue, [slow], { leaseSeconds: 3 });
    // A second process's reaper, every 200 ms.
    await startWorker(uniqueQueue('reaper-only'), [], {
      maintenance: { ...settings(queue).maintenance, enabled: true, reapIntervalMs: 200 },
    });
    await until('running', stateIs(id, 'running'));
    await worker.stop(9_000);
    const job = await getJob(t.db, id);
    expect(job).toMatchObject({ state: 'done', attempts: 1 });
    expect((await attemptsOf(t.db, id)).map((a) => a.outcome)).toEqual(['completed']);
  });
});

describe('a worker started while its database is away', () => {
  /** t.db, but its plain statements fail as `failure(n)` says for the n-th one (undefined: run it). */
  function unreliable(failure: (n: number) => Error | undefined) {
    let calls = 0;
    const db = aroundExecute(t.db, (run) => {
      calls += 1;
      const error = failure(calls);
      return error ? Promise.reject(error) : run();
    });
    return { db, calls: () => calls };
  }
  const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  const registered = async (id: string) =>
    (await run(t.db, sql`SELECT 1 FROM leasehold.workers WHERE id = ${id}`)).length === 1;

  it('waits for it, then starts and runs jobs', async () => {
    const queue = uniqueQueue();
    const { db, calls } = unreliable((n) => (n <= 2 ? refused() : undefined));
    const worker = await startWorker(queue, [noop], {}, db);
    expect(calls()).toBeGreaterThanOrEqual(3); // two refused, then the registration
    expect(await registered(worker.health().workerId as string)).toBe(true);
    const { id } = await enqueue(t.db, { queue, kind: 'noop' });
    await until('done', stateIs(id, 'done'));
  });

  it('logs one short line per retry (try, next wait, cause in words) and the stack once, at debug', async () => {
    const queue = uniqueQueue();
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const { db } = unreliable((n) => (n <= 3 ? refused() : undefined));
    const worker = new Worker(settings(queue), {
      db,
      claimDb: db,
      databaseUrl: t.url,
      registry: new HandlerRegistry([noop]),
      logger,
    });
    workers.push(worker);
    await worker.start();
    const retries = lines.filter((l) => l.level === 40 && String(l.msg).startsWith('database unavailable at start'));
    expect(retries.map((l) => l.attempt)).toEqual([1, 2, 3]);
    for (const line of retries) {
      expect(line).toMatchObject({ cause: 'connect ECONNREFUSED 127.0.0.1:5432', retryInMs: expect.any(Number) });
      expect(line.msg).toMatch(
        /^database unavailable at start \(try \d\): connect ECONNREFUSED 127\.0\.0\.1:5432; trying again in \d+\.\d s$/,
      );
      expect(line).not.toHaveProperty('err');
      expect(JSON.stringify(line).length).toBeLessThan(400);
    }
    const stacks = lines.filter((l) => JSON.stringify(l).includes('"stack"'));
    expect(stacks).toHaveLength(1);
    expect(stacks[0]).toMatchObject({ level: 20, err: { message: 'connect ECONNREFUSED 127.0.0.1:5432' } });
  });

  it('fails at once on an error that waiting cannot fix', async () => {
    const queue = uniqueQueue();
    const missing = Object.assign(new Error('relation "workers" does not exist'), { code: '42P01' });
    const { db, calls } = unreliable(() => missing);
    await expect(startWorker(queue, [noop], {}, db)).rejects.toThrow('relation "workers" does not exist');
    expect(calls()).toBe(1);
  });

  it('has nothing to stop after a start that failed: stop() sends no statement and logs nothing', async () => {
    const queue = uniqueQueue();
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const missing = Object.assign(new Error('relation "workers" does not exist'), { code: '42P01' });
    const { db, calls } = unreliable(() => missing);
    const worker = new Worker(settings(queue), {
      db,
      claimDb: db,
      databaseUrl: t.url,
      registry: new HandlerRegistry([noop]),
      logger,
    });
    await expect(worker.start()).rejects.toThrow('relation "workers" does not exist');
    const said = lines.length;
    await worker.stop(0);
    expect(calls()).toBe(1); // the failed registration; no deregistration after it
    expect(lines.slice(said)).toEqual([]);
    expect(worker.health().status).toBe('stopped');
  });

  it('stops waiting when stopped, and start() returns without opening anything', async () => {
    const queue = uniqueQueue();
    const { db, calls } = unreliable(() => refused());
    const worker = new Worker(settings(queue), {
      db,
      claimDb: db,
      databaseUrl: t.url,
      registry: new HandlerRegistry([noop]),
      logger: silentLogger,
    });
    const starting = worker.start();
    await until('a refused registration', async () => calls() >= 1);
    await worker.stop(0);
    await starting;
    expect(worker.health()).toMatchObject({ status: 'stopped', listening: false, lastClaimAt: null });
    expect(await registered(worker.health().workerId as string)).toBe(false);
  });
});
