/**
 * Back-pressure on wake-ups (db/queue/wake.ts): a LISTEN session that stops reading fills the
 * server's NOTIFY queue, after which every transaction that NOTIFYs fails at COMMIT. Enqueues
 * must still commit then, and workers still find the jobs by polling.
 *
 * The NOTIFY queue belongs to the whole server, so this file starts a server of its own (the
 * embedded PostgreSQL 18) with the smallest queue PostgreSQL allows, max_notify_queue_pages = 64
 * (512 KiB; the setting exists from PostgreSQL 17 and needs a restart, so it is given at start).
 * It never fills the run's shared server.
 */
import { sql } from 'drizzle-orm';
import pg from 'pg';
import pino from 'pino';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type DbHandle } from '../db/client.ts';
import { run } from '../db/queue/executor.ts';
import { notifyQueueUsage } from '../db/queries/overview.ts';
import { enqueue, enqueueMany, NOTIFY_QUEUE_LIMIT, WAKE_CHANNEL } from '../db/queue/index.ts';
import { migrateDatabase } from '../db/migrate/index.ts';
import { startOwnServer, type OwnServer } from './own-server.ts';
import { workerSettings } from './workers.ts';
import { until } from './wait.ts';
import { defineHandler, HandlerRegistry } from '../workers/handler.ts';
import { createMetrics } from '../workers/metrics.ts';
import { Worker } from '../workers/worker.ts';

const QUEUE_PAGES = 64;

let server: OwnServer | undefined;
let skipReason: string | undefined;
let handle: DbHandle | undefined;
let stalled: pg.Client | undefined;
let filler: pg.Client | undefined;
/** The error a NOTIFYing transaction got at COMMIT once the queue was full. */
let fullError: Error | undefined;

const usage = async () =>
  Number((await run<{ u: number }>(handle!.db, sql`SELECT pg_catalog.pg_notification_queue_usage() AS u`))[0]!.u);

beforeAll(async () => {
  // A throwaway server with a tiny NOTIFY queue (the launcher's): the queue is the whole server's.
  const started = await startOwnServer('leasehold-notify-', { max_notify_queue_pages: QUEUE_PAGES });
  if (typeof started === 'string') {
    skipReason = started;
    return;
  }
  server = started;
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  const version = Number((await admin.query<{ v: string }>('SHOW server_version_num')).rows[0]!.v);
  await admin.end();
  if (version < 170000) {
    skipReason = `max_notify_queue_pages needs PostgreSQL 17 or later; the embedded server is ${version}`;
    return;
  }
  await migrateDatabase(server.url);
  handle = createDb(server.url, { max: 4, applicationName: 'leasehold-test' });

  // A listener that stops reading: LISTEN, then stay idle in a transaction (a session in a
  // transaction takes no notifications), so the queue's tail cannot move past its position.
  stalled = new pg.Client({ connectionString: server.url });
  await stalled.connect();
  await stalled.query(`LISTEN ${WAKE_CHANNEL}`);
  await stalled.query('BEGIN');
  await stalled.query('SELECT 1');

  // Fill the queue from another session until a NOTIFYing commit is refused.
  filler = new pg.Client({ connectionString: server.url });
  await filler.connect();
  for (let round = 0; round < 200 && !fullError; round++) {
    await filler
      .query(`SELECT pg_notify('leasehold_filler', repeat('x', 7000)) FROM generate_series(1, 4)`)
      .catch((error: Error) => (fullError = error));
  }
}, 120_000);

afterAll(async () => {
  await stalled?.query('ROLLBACK').catch(() => {});
  await stalled?.end().catch(() => {});
  await filler?.end().catch(() => {});
  await handle?.close();
  await server?.stop();
}, 60_000);

describe('a stalled listener cannot make enqueues fail at commit', () => {
  it('fills the NOTIFY queue until a NOTIFYing transaction fails at COMMIT', async (context) => {
    if (skipReason) return context.skip(skipReason);
    expect(fullError?.message).toMatch(/too many notifications in the NOTIFY queue/);
    expect(await usage()).toBeGreaterThanOrEqual(NOTIFY_QUEUE_LIMIT);
    // The dashboard's /api/metrics reads the same figure.
    expect(await notifyQueueUsage(handle!.db)).toBeGreaterThanOrEqual(NOTIFY_QUEUE_LIMIT);
  });

  it('still commits enqueues in a business transaction, through a pool and through leasehold.enqueue()', async (context) => {
    if (skipReason) return context.skip(skipReason);
    const { db } = handle!;
    const queue = 'stalled-listener';
    await db.transaction(async (tx) => {
      await enqueue(tx, { queue, kind: 'noop', payload: { n: 1 } });
      await enqueue(tx, { queue, kind: 'noop', payload: { n: 2 }, idempotencyKey: 'stalled-2' });
      await enqueueMany(tx, [
        { queue, kind: 'noop', payload: { n: 3 } },
        { queue, kind: 'noop', payload: { n: 4 } },
      ]);
      await run(tx, sql`SELECT * FROM leasehold.enqueue('noop', '{"n": 5}'::jsonb, ${queue})`);
    });
    // Through the pool (each statement commits by itself; the debounce's trailing wake-up too).
    await enqueue(db, { queue, kind: 'noop', payload: { n: 6 } });
    await enqueueMany(db, [{ queue, kind: 'noop', payload: { n: 7 } }]);
    await new Promise((r) => setTimeout(r, 50)); // past WAKE_DEBOUNCE_MS: the trailing NOTIFY ran
    const [row] = await run<{ n: number }>(
      db,
      sql`SELECT count(*)::int AS n FROM leasehold.jobs WHERE queue = ${queue}`,
    );
    expect(row!.n).toBe(7);
    // The queue is as full as before: no wake-up was added.
    await expect(
      filler!.query(`SELECT pg_notify('leasehold_filler', repeat('x', 7000)) FROM generate_series(1, 4)`),
    ).rejects.toThrow(/too many notifications/);
  });

  it('lets a worker claim the jobs by polling, with the usage on its gauge and a warning', async (context) => {
    if (skipReason) return context.skip(skipReason);
    const queue = 'stalled-listener';
    const ran: number[] = [];
    const warnings: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
    const metrics = createMetrics();
    const worker = new Worker(workerSettings(queue, 'backpressure-worker', { listen: true, pollMs: 100 }), {
      db: handle!.db,
      databaseUrl: server!.url,
      registry: new HandlerRegistry([
        defineHandler({
          kind: 'noop',
          versions: [1],
          schema: z.object({ n: z.number() }),
          timeoutMs: 10_000,
          async handle({ payload }) {
            ran.push(payload.n);
          },
        }),
      ]),
      logger,
      metrics,
    });
    await worker.start();
    try {
      await until('the worker ran every job', async () => ran.length >= 7, 30_000);
      await until('the listener sampled the NOTIFY queue', async () => {
        const gauge = await metrics.notifyQueueUsage.get();
        return (gauge.values[0]?.value ?? 0) >= NOTIFY_QUEUE_LIMIT;
      });
    } finally {
      await worker.stop();
    }
    expect(ran.sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(warnings.some((line) => line.includes('NOTIFY queue over the limit'))).toBe(true);
  });
});
