import type http from 'node:http';
import pg from 'pg';
import { z } from 'zod';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { enqueue } from '../db/queue/index.ts';
import { silentLogger } from '../test/attempts.ts';
import { useTestDatabase } from '../test/db.ts';
import { getJob, uniqueQueue, jobInState } from '../test/factories.ts';
import { freePort, takeDatabaseDown } from '../test/outage.ts';
import { until } from '../test/wait.ts';
import { workerSettings } from '../test/workers.ts';
import { createWorker, type CreateWorkerOptions, type LeaseholdWorker, WorkerOptionsError } from './create-worker.ts';
import { PermanentError, TransientError } from './errors.ts';
import type { DeadEvent, FailedEvent, WorkerErrorEvent } from './events.ts';
import { defineHandler, type Handler, HandlerRegistry } from './handler.ts';
import { workerHealth } from './health.ts';
import { createMetrics, serveHealth, serveMetrics } from './metrics.ts';
import { Worker } from './worker.ts';

const t = useTestDatabase({ max: 10 });
const started: { stop(graceMs?: number): Promise<void> }[] = [];
const pools: pg.Pool[] = [];
const servers: http.Server[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).map((w) => w.stop(0)));
  for (const server of servers.splice(0)) server.close();
});
afterAll(async () => {
  await Promise.all(pools.splice(0).map((p) => p.end().catch(() => {})));
});

/** A pool of the user's own, as a service would have it (with its own error listener). */
function userPool(url = t.url): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 5, application_name: 'users-app' });
  pool.on('error', () => {});
  pools.push(pool);
  return pool;
}

function handler(kind: string, handle: Handler['handle'], overrides: Partial<Handler> = {}): Handler {
  return defineHandler({ kind, versions: [1], schema: z.unknown(), timeoutMs: 30_000, handle, ...overrides });
}

const done = handler('embed.noop', async () => 'ok');

function embedded(options: Partial<CreateWorkerOptions> & Pick<CreateWorkerOptions, 'jobs'>): LeaseholdWorker {
  const worker = createWorker({
    pool: userPool(),
    logger: silentLogger,
    pollMs: 100,
    listen: false,
    maintenance: false,
    graceMs: 0,
    ...options,
  });
  started.push(worker);
  return worker;
}

const stateIs = (id: string, ...states: string[]) => jobInState(t.db, id, ...states);

/** Backends of the test database with this application name. */
async function backends(applicationName: string): Promise<number> {
  const { rows } = await t.pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = $2',
    [t.name, applicationName],
  );
  return rows[0]!.n;
}

async function get(server: http.Server, path: string): Promise<{ status: number; body: string }> {
  const address = server.address() as { port: number };
  const response = await fetch(`http://127.0.0.1:${address.port}${path}`);
  return { status: response.status, body: await response.text() };
}

describe('createWorker options', () => {
  const bad = (options: unknown) => () => createWorker(options as CreateWorkerOptions);

  it('refuses a worker without handlers, naming jobs, before connecting anywhere', () => {
    const pool = userPool();
    expect(bad({ pool, jobs: [] })).toThrow(WorkerOptionsError);
    expect(bad({ pool, jobs: [] })).toThrow(/jobs: list at least one handler/);
    expect(bad({ pool })).toThrow(/jobs: list at least one handler/);
    expect(pool.totalCount).toBe(0);
  });

  it('refuses two handlers for one kind, naming both', () => {
    expect(bad({ pool: userPool(), jobs: [done, handler('other', async () => {}), done] })).toThrow(
      /jobs\[2\]: a second handler for kind embed\.noop \(jobs\[0\] has it\)/,
    );
  });

  it('refuses a concurrency below 1 and other out-of-range numbers, naming each', () => {
    expect(bad({ pool: userPool(), jobs: [done], concurrency: 0 })).toThrow(
      /concurrency: must be a whole number from 1 to 10000, got 0/,
    );
    const error = (() => {
      try {
        createWorker({ pool: userPool(), jobs: [done], concurrency: 1.5, leaseSeconds: 1, pollMs: -1 });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(error?.message).toMatch(/concurrency: .* got 1\.5/);
    expect(error?.message).toMatch(/leaseSeconds: .* got 1/);
    expect(error?.message).toMatch(/pollMs: .* got -1/);
  });

  it('needs exactly one of pool and connectionString, and knows its options', () => {
    expect(bad({ jobs: [done] })).toThrow(/pool or connectionString: one is required/);
    expect(bad({ pool: userPool(), connectionString: t.url, jobs: [done] })).toThrow(/pass one of them, not both/);
    expect(bad({ connectionString: 'mysql://x', jobs: [done] })).toThrow(/connectionString: not a postgres:\/\/ URL/);
    expect(bad({ pool: {}, jobs: [done] })).toThrow(/pool: not a pg\.Pool/);
    expect(bad({ pool: userPool(), jobs: [done], concurency: 3 })).toThrow(/concurency: not an option/);
    expect(bad({ pool: userPool(), jobs: [{ kind: 'x' }] })).toThrow(/jobs\[0\]: not a handler/);
    expect(bad({ pool: userPool(), jobs: [done], queues: ['bad queue'] })).toThrow(/queues\[0\]: not a queue name/);
  });

  it('serves the handlers’ default queues unless told which', () => {
    const a = handler('embed.a', async () => {}, { defaultQueue: 'mail' });
    const b = handler('embed.b', async () => {});
    expect(createWorker({ pool: userPool(), jobs: [a, b] }).queues).toEqual(['default', 'mail']);
    // `default` too when no handler names it: where a job goes when its producer names no queue.
    expect(createWorker({ pool: userPool(), jobs: [a] }).queues).toEqual(['default', 'mail']);
    expect(createWorker({ pool: userPool(), jobs: [a], queues: ['x'] }).queues).toEqual(['x']);
  });
});

describe('an embedded worker', () => {
  it('runs a job on the user’s pool and leaves that pool open at stop', async () => {
    const queue = uniqueQueue('embed');
    const pool = userPool();
    const worker = createWorker({ pool, jobs: [done], queues: [queue], logger: silentLogger, pollMs: 100 });
    started.push(worker);
    const { id } = await enqueue(t.db, { queue, kind: 'embed.noop' });
    await worker.start();
    await until('the job done', stateIs(id, 'done'));
    await worker.stop();
    expect(pool.ended).toBe(false);
    expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows[0]?.one).toBe(1);
  });

  it('listens for wake-ups on a connection made from the user’s pool options', async () => {
    const queue = uniqueQueue('embed');
    // Polling once a minute: only a wake-up makes the job start within the wait below.
    const worker = embedded({ jobs: [done], queues: [queue], listen: true, pollMs: 60_000 });
    await worker.start();
    await until('listening', async () => (await worker.health()).worker.listening || undefined);
    expect(await backends('leasehold-listen')).toBe(1);
    const { id } = await enqueue(t.db, { queue, kind: 'embed.noop' });
    await until('the job done', stateIs(id, 'done'), 10_000);
  });

  it('closes the pool it made from a connection string at stop', async () => {
    const queue = uniqueQueue('embed');
    const worker = createWorker({
      connectionString: t.url,
      jobs: [done],
      queues: [queue],
      logger: silentLogger,
      pollMs: 100,
    });
    started.push(worker);
    const { id } = await enqueue(t.db, { queue, kind: 'embed.noop' });
    await worker.start();
    await until('the job done', stateIs(id, 'done'));
    expect(await backends('leasehold-worker')).toBeGreaterThan(0);
    await worker.stop();
    // A backend leaves pg_stat_activity a moment after its client hangs up, so both pools are
    // awaited: the claim pool's last backend can outlive the worker pool's by a few ms.
    await until(
      'its connections closed',
      async () =>
        ((await backends('leasehold-worker')) === 0 && (await backends('leasehold-claim')) === 0) || undefined,
    );
    await expect(worker.start()).rejects.toThrow(/after stop\(\)/);
  });

  it('reports healthy while running, and unhealthy with a reason before start and after stop', async () => {
    const worker = embedded({ jobs: [done], queues: [uniqueQueue('embed')] });
    const before = await worker.health();
    expect(before).toMatchObject({ healthy: false, reasons: ['worker not started'] });
    await worker.start();
    const running = await worker.health();
    expect(running).toMatchObject({ healthy: true, status: 'ok', reasons: [], database: { reachable: true } });
    await worker.stop();
    expect((await worker.health()).reasons).toEqual(['worker stopped']);
  });

  it('reports the database unreachable when its pool points at a closed port', async () => {
    const port = await freePort();
    const pool = userPool(`postgres://postgres@127.0.0.1:${port}/postgres`);
    const worker = createWorker({ pool, jobs: [done], logger: silentLogger });
    const report = await worker.health();
    expect(report.healthy).toBe(false);
    expect(report.database.reachable).toBe(false);
    expect(report.reasons.some((r) => r.startsWith('database unreachable: '))).toBe(true);
  });

  it('reports a stale claim loop while its claims hang, and healthy again once they return', async () => {
    const worker = embedded({ jobs: [done], queues: [uniqueQueue('embed')], claimStaleMs: 400 });
    await worker.start();
    expect((await worker.health()).healthy).toBe(true);
    // A table lock the claim's UPDATE waits for: the loop stops ticking, the database still answers.
    const locker = await t.pool.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE leasehold.jobs IN ACCESS EXCLUSIVE MODE');
      const stale = await until('stale', async () => {
        const report = await worker.health();
        return report.claimLoop.stale ? report : undefined;
      });
      expect(stale.healthy).toBe(false);
      expect(stale.database.reachable).toBe(true);
      expect(stale.reasons).toEqual([expect.stringMatching(/^claim loop stale: no claim returned for \d+ ms/)]);
      expect(stale.claimLoop.staleAfterMs).toBe(400);
    } finally {
      await locker.query('ROLLBACK');
      locker.release();
    }
    await until('healthy again', async () => (await worker.health()).healthy || undefined);
  });
});

describe('worker events', () => {
  it('tells failed for each failed attempt and dead when the job ends dead, with the job’s fields', async () => {
    const queue = uniqueQueue('events');
    const flaky = handler('embed.flaky', async () => {
      throw new TransientError('provider 503');
    });
    const broken = handler('embed.broken', async () => {
      throw new PermanentError('bad payload');
    });
    const worker = embedded({ jobs: [flaky, broken], queues: [queue], retry: { baseDelayMs: 60_000 } });
    const failed: FailedEvent[] = [];
    const dead: DeadEvent[] = [];
    worker.on('failed', (e) => void failed.push(e));
    worker.on('dead', (e) => void dead.push(e));
    const retried = await enqueue(t.db, { queue, kind: 'embed.flaky' });
    const killed = await enqueue(t.db, { queue, kind: 'embed.broken' });
    await worker.start();
    await until('both failures told', async () => failed.length === 2 || undefined);
    await until('the dead job told', async () => dead.length === 1 || undefined);
    const byId = new Map(failed.map((e) => [e.jobId, e]));
    expect(byId.get(retried.id)).toMatchObject({
      kind: 'embed.flaky',
      queue,
      attempt: 1,
      failureClass: 'transient',
      error: expect.stringContaining('provider 503'),
      next: 'ready',
      workerId: worker.workerId,
    });
    expect(byId.get(killed.id)).toMatchObject({ kind: 'embed.broken', failureClass: 'permanent', next: 'dead' });
    expect(dead[0]).toMatchObject({
      jobId: killed.id,
      kind: 'embed.broken',
      queue,
      attempt: 1,
      failureClass: 'permanent',
      error: expect.stringContaining('bad payload'),
    });
    expect((await getJob(t.db, killed.id)).state).toBe('dead');
  });

  it('goes on working when a listener throws', async () => {
    const queue = uniqueQueue('events');
    let calls = 0;
    const failOnce = handler('embed.once', async () => {
      calls += 1;
      if (calls === 1) throw new TransientError('first try fails');
    });
    const worker = embedded({ jobs: [failOnce, done], queues: [queue], retry: { baseDelayMs: 0, maxDelayMs: 0 } });
    const heard: FailedEvent[] = [];
    worker.on('failed', () => {
      throw new Error('the alerting code is broken');
    });
    worker.on('failed', async () => {
      throw new Error('and rejects too');
    });
    worker.on('failed', (e) => void heard.push(e));
    const retried = await enqueue(t.db, { queue, kind: 'embed.once' });
    await worker.start();
    await until('the retry done', stateIs(retried.id, 'done'));
    // The failure was recorded and told to the other listener; the worker went on to later jobs.
    expect(heard.map((e) => e.jobId)).toEqual([retried.id]);
    const later = await enqueue(t.db, { queue, kind: 'embed.noop' });
    await until('a later job done', stateIs(later.id, 'done'));
    expect((await worker.health()).healthy).toBe(true);
  });

  it('tells error when a claim round fails (the database refuses connections)', async () => {
    const worker = embedded({ jobs: [done], queues: [uniqueQueue('events')] });
    const errors: WorkerErrorEvent[] = [];
    worker.on('error', (e) => void errors.push(e));
    await worker.start();
    const bringBack = await takeDatabaseDown(t.name);
    try {
      await until('a claim error told', async () => errors.some((e) => e.source === 'claim') || undefined);
    } finally {
      await bringBack();
    }
    const claimError = errors.find((e) => e.source === 'claim')!;
    expect(claimError).toMatchObject({ workerId: worker.workerId, message: expect.stringMatching(/claim failed/) });
    expect(claimError.error).toBeInstanceOf(Error);
  });
});

describe('/healthz of a CLI worker', () => {
  it('answers 200 while healthy and 503 with the reason while the database is unreachable', async () => {
    const queue = uniqueQueue('healthz');
    const worker = new Worker(workerSettings(queue, `healthz-${queue}`), {
      db: t.db,
      databaseUrl: t.url,
      registry: new HandlerRegistry([done]),
      logger: silentLogger,
    });
    started.push(worker);
    await worker.start();
    const server = await serveHealth(0, '0.0.0.0', workerHealth(worker, t.db, { claimStaleMs: 30_000 }));
    servers.push(server);
    expect((server.address() as { address: string }).address).toBe('0.0.0.0');
    const ok = await get(server, '/healthz');
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body)).toMatchObject({ healthy: true, reasons: [], worker: { status: 'ok' } });
    expect((await get(server, '/metrics')).status).toBe(404);

    const bringBack = await takeDatabaseDown(t.name);
    try {
      const down = await get(server, '/healthz');
      expect(down.status).toBe(503);
      const body = JSON.parse(down.body) as { healthy: boolean; reasons: string[]; database: { reachable: boolean } };
      expect(body.healthy).toBe(false);
      expect(body.database.reachable).toBe(false);
      expect(body.reasons[0]).toMatch(/^database unreachable: /);
    } finally {
      await bringBack();
    }
    await until('200 again', async () => (await get(server, '/healthz')).status === 200 || undefined);
  });

  it('serves metrics on 127.0.0.1 by the host it is given, with /healthz beside them when asked', async () => {
    const metrics = createMetrics();
    const worker = embedded({ jobs: [done], queues: [uniqueQueue('healthz')], metrics });
    await worker.start();
    const server = await serveMetrics(0, '127.0.0.1', metrics.registry, { health: worker });
    servers.push(server);
    expect((server.address() as { address: string }).address).toBe('127.0.0.1');
    const scraped = await get(server, '/metrics');
    expect(scraped.status).toBe(200);
    expect(scraped.body).toContain('leasehold_jobs_claimed_total');
    expect((await get(server, '/healthz')).status).toBe(200);
    await expect(serveHealth(0, '', worker)).rejects.toThrow(/host must be an address/);
  });
});

describe('runFor', () => {
  it('releases what is still running at the budget, and the next run completes it', async () => {
    const queue = uniqueQueue('runfor');
    let runs = 0;
    // The first attempt outlasts the budget; the next one is quick.
    const slow = handler('embed.slow', ({ signal }) => {
      runs += 1;
      const ms = runs === 1 ? 60_000 : 20;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(resolve, ms);
        signal.addEventListener('abort', () => {
          clearTimeout(timer);
          reject(signal.reason);
        });
      });
    });
    const worker = embedded({ jobs: [slow], queues: [queue] });
    const { id } = await enqueue(t.db, { queue, kind: 'embed.slow' });
    const first = await worker.runFor({ maxMs: 1000 });
    expect(first).toMatchObject({ claimed: 1, completed: 0, failed: 0, released: 1, endedBy: 'budget' });
    expect(first.ms).toBeLessThan(2500);
    const afterFirst = await getJob(t.db, id);
    expect(afterFirst.state).toBe('ready');
    expect(afterFirst.leaseToken).toBeNull();

    const second = await worker.runFor({ maxMs: 10_000 });
    expect(second).toMatchObject({ claimed: 1, completed: 1, released: 0, endedBy: 'empty' });
    expect((await getJob(t.db, id)).state).toBe('done');
  });

  it('returns as soon as the queue is empty, well before the budget', async () => {
    const queue = uniqueQueue('runfor');
    const failing = handler('embed.fails', async () => {
      throw new PermanentError('no');
    });
    const worker = embedded({ jobs: [done, failing], queues: [queue], concurrency: 2 });
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await enqueue(t.db, { queue, kind: 'embed.noop' })).id);
    const failed = await enqueue(t.db, { queue, kind: 'embed.fails' });
    const summary = await worker.runFor({ maxMs: 20_000 });
    expect(summary).toMatchObject({ claimed: 4, completed: 3, failed: 1, dead: 1, released: 0, endedBy: 'empty' });
    expect(summary.ms).toBeLessThan(5_000);
    for (const id of ids) expect((await getJob(t.db, id)).state).toBe('done');
    expect((await getJob(t.db, failed.id)).state).toBe('dead');
    // An empty queue: one claim, and back.
    expect(await worker.runFor({ maxMs: 20_000 })).toMatchObject({ claimed: 0, endedBy: 'empty' });
  });

  it('refuses a bad budget and a runFor while started', async () => {
    const worker = embedded({ jobs: [done], queues: [uniqueQueue('runfor')] });
    await expect(worker.runFor({ maxMs: 0 })).rejects.toThrow(/maxMs must be a whole number of ms from 100/);
    await expect(worker.runFor({ maxMs: 1000, drainMs: 1000 })).rejects.toThrow(/drainMs/);
    await worker.start();
    await expect(worker.runFor({ maxMs: 1000 })).rejects.toThrow(/while started/);
  });
});
