/**
 * Worker processes against real PostgreSQL: the seed's receipt demo under a flaky provider,
 * SIGTERM, SIGKILL and LISTEN, each with real `npm run workers` processes.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueueMany } from '../db/queue/index.ts';
import { run } from '../db/queue/executor.ts';
import { testDatabase, type TestDatabase } from '../test/db.ts';
import { attemptsOf, uniqueQueue } from '../test/factories.ts';
import { start, stopAll, type Proc } from '../test/processes.ts';
import { until } from '../test/wait.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await testDatabase();
});
afterAll(async () => {
  await stopAll();
  await t?.close();
});

const env = () => ({ DATABASE_URL: t.url, LEASEHOLD_LOG_LEVEL: 'info' });

function worker(queue: string, extra: string[] = [], moreEnv: Record<string, string> = {}): Proc {
  return start('workers/main.ts', ['--queues', queue, '--handlers', 'test/handlers.ts', ...extra], {
    ...env(),
    ...moreEnv,
  });
}

const states = async (queue: string) =>
  Object.fromEntries(
    (
      await run<{ state: string; n: number }>(
        t.db,
        sql`SELECT state, count(*)::int AS n FROM leasehold.jobs WHERE queue = ${queue} GROUP BY state`,
      )
    ).map((r) => [r.state, r.n]),
  ) as Record<string, number>;

describe('worker processes', () => {
  it('two workers drain 2,000 demo orders against a flaky provider: one delivery per order, every job done', async () => {
    const provider = start(
      'demo/provider.ts',
      ['--port', '0', '--error-rate', '0.1', '--timeout-rate', '0.05', '--stall-ms', '1500', '--latency-ms', '5'],
      {},
    );
    const url = JSON.parse(await provider.line(/receipt provider listening/)).url as string;
    const providerEnv = { RECEIPT_PROVIDER_URL: url, RECEIPT_CALL_TIMEOUT_MS: '500' };
    const flags = [
      '--handlers',
      'demo/handlers.ts',
      '--concurrency',
      '25',
      '--retry-base-ms',
      '100',
      '--retry-max-ms',
      '1000',
      '--lease-seconds',
      '10',
    ];
    const workers = [
      start('workers/main.ts', ['--queues', 'receipts', ...flags], { ...env(), ...providerEnv }),
      start('workers/main.ts', ['--queues', 'receipts', ...flags], { ...env(), ...providerEnv }),
    ];
    await Promise.all(workers.map((w) => w.line(/worker started/)));
    const orders = start('demo/orders.ts', ['--count', '2000'], env());
    expect(await orders.exited).toBe(0);

    await until('all receipts done', async () => (await states('receipts')).done === 2000, 120_000);
    expect(await states('receipts')).toEqual({ done: 2000 });

    const stats = (await (await fetch(`${url}/stats`)).json()) as {
      deliveries: number;
      calls: number;
      outcomes: Record<string, number>;
      perKey: Record<string, { deliveries: number }>;
    };
    const orderIds = (await run<{ id: string }>(t.db, sql`SELECT id FROM orders`)).map((r) => r.id);
    expect(orderIds).toHaveLength(2000);
    expect(stats.deliveries).toBe(2000);
    for (const id of orderIds) expect(stats.perKey[`receipt:${id}`]?.deliveries).toBe(1);
    // The faults really happened, and each was retried to a single delivery.
    expect(stats.outcomes.unavailable).toBeGreaterThan(50);
    expect(stats.outcomes.stalled).toBeGreaterThan(20);
    expect(stats.outcomes.replayed).toBeGreaterThan(0);
    const [{ failed }] = (await run(
      t.db,
      sql`SELECT count(*)::int AS failed FROM leasehold.job_attempts WHERE queue = 'receipts' AND outcome = 'failed'`,
    )) as [{ failed: number }];
    expect(failed).toBeGreaterThan(70);

    for (const w of workers) w.kill('SIGTERM');
    expect(await Promise.all(workers.map((w) => w.exited))).toEqual([0, 0]);
    provider.kill();
  }, 180_000);

  it('SIGTERM during work loses nothing: unfinished jobs are released and restart elsewhere within 5 s', async () => {
    const queue = uniqueQueue('term');
    const a = worker(queue, ['--concurrency', '5', '--grace-ms', '300', '--worker-id', 'worker-a']);
    await a.line(/worker started/);
    await enqueueMany(
      t.db,
      // Long enough to outlast starting worker b (a process start: seconds on a loaded machine).
      Array.from({ length: 5 }, () => ({ queue, kind: 'test.sleep', payload: { ms: 8000 } })),
    );
    await until('five running on a', async () => (await states(queue)).running === 5, 15_000);
    const b = worker(queue, ['--concurrency', '5', '--worker-id', 'worker-b']);
    await b.line(/worker started/);

    a.kill('SIGTERM');
    expect(await a.exited).toBe(0);
    const released = await run<{ ended_at: Date }>(
      t.db,
      sql`SELECT a.ended_at FROM leasehold.job_attempts a JOIN leasehold.jobs j ON j.id = a.job_id WHERE j.queue = ${queue} AND a.outcome = 'released'`,
    );
    expect(released).toHaveLength(5);

    await until('all done on b', async () => (await states(queue)).done === 5, 20_000);
    const restarts = await run<{ gap_ms: number; worker_id: string }>(
      t.db,
      sql`SELECT extract(epoch FROM (j.started_at - a.ended_at)) * 1000 AS gap_ms, j.worker_id
          FROM leasehold.job_attempts a JOIN leasehold.jobs j ON j.id = a.job_id
          WHERE j.queue = ${queue} AND a.outcome = 'released' AND j.state = 'done' AND j.attempts = 2`,
    );
    expect(restarts).toHaveLength(5);
    for (const r of restarts) {
      expect(r.worker_id).toBe('worker-b');
      expect(Number(r.gap_ms)).toBeLessThan(5_000);
    }
    b.kill('SIGTERM');
    await b.exited;
  }, 60_000);

  it('SIGKILL of a worker: its jobs are reaped after the lease and completed by the other worker', async () => {
    const queue = uniqueQueue('kill');
    const a = worker(queue, [
      '--concurrency',
      '3',
      '--lease-seconds',
      '3',
      '--no-maintenance',
      '--worker-id',
      'doomed',
    ]);
    await a.line(/worker started/);
    await enqueueMany(
      t.db,
      Array.from({ length: 3 }, () => ({ queue, kind: 'test.sleep', payload: { ms: 1500 } })),
    );
    await until('three running on a', async () => (await states(queue)).running === 3, 15_000);
    a.kill('SIGKILL');
    expect(await a.exited).toBe('SIGKILL');
    const killedAt = Date.now();

    const b = worker(queue, ['--concurrency', '3', '--reap-interval-ms', '300', '--worker-id', 'survivor']);
    await until('all done', async () => (await states(queue)).done === 3, 30_000);
    const ids = await run<{ id: string }>(t.db, sql`SELECT id FROM leasehold.jobs WHERE queue = ${queue}`);
    const history = (await Promise.all(ids.map((j) => attemptsOf(t.db, j.id)))).flat();
    expect(
      history.filter((h) => h.attempt === 1).every((h) => h.outcome === 'lease_expired' && h.workerId === 'doomed'),
    ).toBe(true);
    expect(
      history.filter((h) => h.attempt === 2).every((h) => h.outcome === 'completed' && h.workerId === 'survivor'),
    ).toBe(true);
    expect(history).toHaveLength(6);
    // Not before the lease (3 s from the claim) ran out.
    expect(Date.now() - killedAt).toBeGreaterThan(1_000);
    b.kill('SIGTERM');
    await b.exited;
  }, 60_000);

  it('starts a job on an idle queue through LISTEN well before the poll interval', async () => {
    const queue = uniqueQueue('listen');
    const w = worker(queue, ['--poll-ms', '60000']);
    await w.line(/listening for wake-ups/);
    await new Promise((r) => setTimeout(r, 500));
    const [job] = await enqueueMany(t.db, [{ queue, kind: 'test.sleep', payload: { ms: 0 } }]);
    await until('done', async () => (await states(queue)).done === 1, 10_000);
    const [row] = await run<{ ms: number }>(
      t.db,
      sql`SELECT extract(epoch FROM started_at - created_at) * 1000 AS ms FROM leasehold.jobs WHERE id = ${job!.id}::uuid`,
    );
    expect(Number(row!.ms)).toBeLessThan(1_000);
    w.kill('SIGTERM');
    expect(await w.exited).toBe(0);
  }, 30_000);

  it('refuses to start with a bad setting, naming it', async () => {
    const w = start('workers/main.ts', ['--concurrency', 'many'], env());
    expect(await w.exited).toBe(2);
    expect(w.output.join('\n')).toMatch(/--concurrency \(LEASEHOLD_CONCURRENCY\) = "many"/);
  });

  it('refuses to start without DATABASE_URL, naming it', async () => {
    const w = start('workers/main.ts', ['--queues', uniqueQueue()], { ...env(), DATABASE_URL: '' });
    expect(await w.exited).toBe(2);
    expect(w.output.join('\n')).toMatch(/DATABASE_URL is not set/);
  });
});
