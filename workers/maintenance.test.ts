import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import {
  completeIfLeaseHeld,
  deregisterWorker,
  listWorkers,
  registerWorker,
  withMaintenanceLock,
} from '../db/queue/index.ts';
import { run } from '../db/queue/executor.ts';
import { silentLogger } from '../test/attempts.ts';
import { useTestDatabase } from '../test/db.ts';
import { addJob, claimOne, expireLease, getJob, uniqueQueue } from '../test/factories.ts';
import { until } from '../test/wait.ts';
import { Maintenance, type MaintenanceSettings } from './maintenance.ts';
import { createMetrics } from './metrics.ts';

const t = useTestDatabase();

let n = 0;

function maintenance(overrides: Partial<MaintenanceSettings['maintenance']> = {}, registryIntervalMs = 60_000) {
  n += 1;
  const metrics = createMetrics();
  const m = new Maintenance(
    {
      workerId: `maintenance-test-${n}`,
      queues: ['default'],
      concurrency: 4,
      registryIntervalMs,
      leaseExpiredDelayMs: 0,
      maintenance: {
        enabled: true,
        reapIntervalMs: 60_000,
        retentionIntervalMs: 60_000,
        staleWorkerSeconds: 3600,
        receiptsRetentionSeconds: 86_400,
        retention: {},
        ...overrides,
      },
    },
    { db: t.db, logger: silentLogger, metrics, version: '1.2.3' },
  );
  return { maintenance: m, metrics, workerId: `maintenance-test-${n}` };
}

/** A running job whose lease has run out, waiting for the reaper. */
async function expiredLease() {
  const queue = uniqueQueue('maintenance');
  await addJob(t.db, { queue });
  const job = await claimOne(t.db, queue);
  await expireLease(t.db, job.id);
  return job;
}

const entry = async (id: string) => (await listWorkers(t.db, 3600)).find((w) => w.id === id);

describe('maintenance', () => {
  it('registers the worker with its version, and registers it again the same way once it was removed', async () => {
    const { maintenance: m, workerId } = maintenance();
    await m.register();
    expect(await entry(workerId)).toMatchObject({ version: '1.2.3', concurrency: 4, queues: ['default'] });
    await deregisterWorker(t.db, workerId); // as retention does to an entry it thinks stale
    await m.refreshRegistry();
    expect(await entry(workerId)).toMatchObject({ version: '1.2.3', concurrency: 4, pid: process.pid });
  });

  it('reaps an expired lease and counts it', async () => {
    const job = await expiredLease();
    const { maintenance: m, metrics } = maintenance();
    await m.reapRound();
    expect(await getJob(t.db, job.id)).toMatchObject({ state: 'ready', failureClass: 'lease_expired' });
    const reaped = (await metrics.reaped.get()).values.find((v) => v.labels.outcome === 'retried');
    expect(reaped?.value).toBe(1);
  });

  it('skips a round while another process holds its lock', async () => {
    const job = await expiredLease();
    const { maintenance: m, metrics } = maintenance();
    const outer = await withMaintenanceLock(t.db, 'reaper', () => m.reapRound());
    expect(outer.ran).toBe(true); // this test held the lock through the round
    expect((await getJob(t.db, job.id)).state).toBe('running');
    expect((await metrics.reaped.get()).values.every((v) => v.value === 0)).toBe(true);
    await m.reapRound();
    expect((await getJob(t.db, job.id)).state).toBe('ready');
  });

  it('removes finished jobs past their retention and stale registry entries', async () => {
    const queue = uniqueQueue('maintenance');
    await addJob(t.db, { queue });
    const job = await claimOne(t.db, queue);
    await completeIfLeaseHeld(t.db, job);
    await registerWorker(t.db, { id: 'gone-worker', host: 'h', pid: 1, queues: ['default'], concurrency: 1 });
    await run(
      t.db,
      sql`UPDATE leasehold.workers SET last_seen_at = now() - interval '2 hours' WHERE id = 'gone-worker'`,
    );
    const { maintenance: m } = maintenance({ retention: { doneAfterSeconds: 0 } });
    await m.retentionRound();
    const rows = await run(t.db, sql`SELECT id FROM leasehold.jobs WHERE id = ${job.id}::uuid`);
    expect(rows).toEqual([]);
    expect(await entry('gone-worker')).toBeUndefined();
  });

  it('keeps the registry entry fresh while started, and removes it at stop', async () => {
    const { maintenance: m, workerId } = maintenance({ enabled: false }, 50);
    await m.register();
    m.start();
    await deregisterWorker(t.db, workerId);
    await until('the refresh registered the worker again', () => entry(workerId));
    await m.stop();
    await m.deregister();
    expect(await entry(workerId)).toBeUndefined();
  });

  it('records each queue’s history every historyIntervalMs while started', async () => {
    const queue = uniqueQueue('maintenance-history');
    await addJob(t.db, { queue });
    await completeIfLeaseHeld(t.db, await claimOne(t.db, queue));
    await addJob(t.db, { queue });
    const { maintenance: m } = maintenance({ historyIntervalMs: 100 });
    m.start();
    try {
      const row = await until('the history round recorded the queue', async () => {
        const [r] = await run<{ done: number; ready: number | null }>(
          t.db,
          sql`SELECT sum(done)::int AS done, max(ready) AS ready FROM leasehold.queue_minutes WHERE queue = ${queue}`,
        );
        return r && r.done === 1 && r.ready !== null ? r : undefined;
      });
      expect(row).toEqual({ done: 1, ready: 1 });
    } finally {
      await m.stop();
    }
  });
});

describe('the unknown-kind round', () => {
  it('ends dead a job of a kind no live worker ran for the grace, and leaves the kinds this worker runs', async () => {
    const queue = uniqueQueue('unknown-kind');
    const orphan = await addJob(t.db, { queue, kind: 'nobody.runs' });
    const mine = await addJob(t.db, { queue, kind: 'mine' });
    await run(
      t.db,
      sql`UPDATE leasehold.jobs SET run_at = now() - interval '2 hours', claim_at = now() - interval '2 hours', created_at = now() - interval '2 hours' WHERE queue = ${queue}`,
    );
    n += 1;
    const m = new Maintenance(
      {
        workerId: `maintenance-test-${n}`,
        queues: [queue],
        concurrency: 1,
        registryIntervalMs: 60_000,
        maintenance: {
          enabled: true,
          reapIntervalMs: 60_000,
          retentionIntervalMs: 60_000,
          staleWorkerSeconds: 60,
          receiptsRetentionSeconds: 86_400,
          retention: {},
          unknownKindGraceMs: 3_600_000,
        },
      },
      {
        db: t.db,
        logger: silentLogger,
        kinds: [
          { kind: 'mine', version: 1, defaultQueue: queue, displayName: 'mine', redactedPaths: [], rerunSafe: false },
        ],
      },
    );
    await m.register();
    await m.unknownKindRound();
    expect(await getJob(t.db, orphan.id)).toMatchObject({ state: 'dead', failureClass: 'permanent' });
    expect((await getJob(t.db, orphan.id)).lastError).toMatch(
      /^no live worker ran kind nobody\.runs version 1 for the unknown-kind grace period \(01:00:00\)/,
    );
    expect(await getJob(t.db, mine.id)).toMatchObject({ state: 'ready' });
    await m.deregister();
  });

  it('refuses a bad grace at construction, naming the setting', () => {
    expect(() => maintenance({ unknownKindGraceMs: -5 })).toThrow(/maintenance\.unknownKindGraceMs/);
  });
});
