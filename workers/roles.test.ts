/**
 * A worker process's whole loop as leasehold_worker (db/roles.sql): its start (schema check,
 * registry), LISTEN wake-ups from a producer's leasehold.enqueue, claims (a grouped one too, and
 * the sweep of its group), heartbeats, receipts,
 * batched acknowledgements, failures with their attempt rows, the reaper and retention, on a
 * login that has only the worker role. db/roles.test.ts covers the queue functions one by one.
 */
import { workerSettings } from '../test/workers.ts';
import pino from 'pino';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type DbHandle } from '../db/client.ts';
import { claim, listWorkers } from '../db/queue/index.ts';
import { attemptsOf, expireLease, getJob, uniqueQueue } from '../test/factories.ts';
import { useRoleDatabase } from '../test/roles.ts';
import { until } from '../test/wait.ts';
import { PermanentError } from './errors.ts';
import { defineHandler, HandlerRegistry } from './handler.ts';
import { Worker } from './worker.ts';

const r = useRoleDatabase();
let workerDb: DbHandle;
let producer: DbHandle;
let admin: DbHandle;
beforeAll(() => {
  workerDb = createDb(r.urls.worker, { max: 8 });
  producer = createDb(r.urls.producer, { max: 2 });
  admin = createDb(r.adminUrl, { max: 2 });
});
afterAll(async () => {
  await Promise.all([workerDb?.close(), producer?.close(), admin?.close()]);
});

const handlers = [
  defineHandler({
    kind: 'send',
    versions: [1],
    schema: z.object({ to: z.string() }),
    timeoutMs: 10_000,
    // Runs until the lease keeper has heartbeated it (at a third of the 3 s lease): its
    // effective deadline (jobs_view's, moved by the worker lease) passes the claim's.
    handle: async (ctx) => {
      const first = ctx.job.leaseUntil.getTime();
      const effective = async () =>
        new Date(
          (
            await admin.pool.query<{ lease_until: Date }>('SELECT lease_until FROM leasehold.jobs_view WHERE id = $1', [
              ctx.job.id,
            ])
          ).rows[0]!.lease_until,
        ).getTime();
      await until('a heartbeat', async () => (await effective()) > first);
      return ctx.receipt(async () => ({ sentTo: ctx.payload.to }));
    },
  }),
  defineHandler({
    kind: 'refuse',
    versions: [1],
    schema: z.unknown(),
    timeoutMs: 10_000,
    handle: async () => {
      throw new PermanentError('the provider refused it: 422');
    },
  }),
];

describe('a worker on a leasehold_worker login', () => {
  it('runs what a producer enqueued through SQL, woken by NOTIFY, and reaps a dead claim', async () => {
    const queue = uniqueQueue('role-worker');
    const elsewhere = uniqueQueue('role-worker-reaped');
    const workerId = `w-${queue}`;
    const logged: string[] = [];
    const worker = new Worker(
      workerSettings(queue, workerId, {
        concurrency: 4,
        leaseSeconds: 3,
        batchSize: 4,
        // No poll before the test ends: only a wake-up can start the jobs.
        pollMs: 600_000,
        listen: true,
        graceMs: 1000,
        maintenance: { enabled: true, reapIntervalMs: 100, retentionIntervalMs: 100 },
      }),
      {
        db: workerDb.db,
        databaseUrl: r.urls.worker,
        registry: new HandlerRegistry(handlers),
        // A statement of the loop that fails (a claim, a maintenance round) logs a warning or an error.
        logger: pino({ level: 'warn' }, { write: (line: string) => void logged.push(line) }),
      },
    );
    await worker.start();
    try {
      expect((await listWorkers(admin.db, 60)).map((w) => w.id)).toContain(workerId);
      await until('the LISTEN connection', async () => worker.health().listening === true);
      const enqueueSql = async (kind: string, on: string) =>
        (
          await producer.pool.query<{ id: string }>(
            `SELECT id FROM leasehold.enqueue($1, '{"to": "a@example.com"}', $2)`,
            [kind, on],
          )
        ).rows[0]!.id;
      const sent = await enqueueSql('send', queue);
      const refused = await enqueueSql('refuse', queue);
      // A grouped job: its wake-up names the queue with ' grouped'; the grouped claim, its
      // group's turn and the maintenance sweep all run on the worker role's grants.
      const grouped = (
        await producer.pool.query<{ id: string }>(
          `SELECT id FROM leasehold.enqueue('send', '{"to": "g@example.com"}', $1, group_key => 'acme')`,
          [queue],
        )
      ).rows[0]!.id;
      // A claim whose worker died: the reaper (this worker's maintenance) takes it back.
      const lost = await enqueueSql('send', elsewhere);
      const [gone] = await claim(workerDb.db, { queues: [elsewhere], workerId: 'w-gone' });
      await expireLease(admin.db, gone!.id);

      const done = await until('the sent job to be done', async () => {
        const job = await getJob(admin.db, sent);
        return job.state === 'done' ? job : undefined;
      });
      expect(done.attempts).toBe(1);
      const receipt = await admin.pool.query('SELECT result FROM leasehold.receipts WHERE job_id = $1', [sent]);
      expect(receipt.rows).toEqual([{ result: { sentTo: 'a@example.com' } }]);
      await until('the grouped job to be done', async () => (await getJob(admin.db, grouped)).state === 'done');
      await until(
        'the drained group swept away',
        async () =>
          (await admin.pool.query('SELECT 1 FROM leasehold.ready_groups WHERE queue = $1', [queue])).rowCount === 0,
      );
      await until('the refused job to be dead', async () => (await getJob(admin.db, refused)).state === 'dead');
      expect((await attemptsOf(admin.db, refused)).map((a) => [a.outcome, a.failureClass])).toEqual([
        ['failed', 'permanent'],
      ]);
      const reaped = await until('the dead claim to be reaped', async () => {
        const job = await getJob(admin.db, lost);
        return job.state === 'ready' ? job : undefined;
      });
      expect(reaped).toMatchObject({ attempts: 1, failureClass: 'lease_expired' });
    } finally {
      await worker.stop(1000);
    }
    expect((await listWorkers(admin.db, 60)).map((w) => w.id)).not.toContain(workerId);
    // The two events it was given, and no failed statement (a maintenance round refused a right).
    expect(logged.map((line) => (JSON.parse(line) as { msg: string }).msg).sort()).toEqual([
      'attempt failed',
      'reaped expired leases',
    ]);
  });
});
