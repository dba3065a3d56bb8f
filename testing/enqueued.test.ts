/**
 * Assertions on what a transaction enqueued: they read through the executor they are given, so
 * the application's own transaction sees its jobs before the commit and no one else does; a
 * rolled-back enqueue leaves nothing; a payload filter is a partial (containment) match.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { LeaseholdInputError } from '../db/queue/errors.ts';
import { enqueue } from '../db/queue/index.ts';
import { createTestDatabase, type TestDatabase } from './database.ts';
import { EnqueuedAssertionError, enqueuedJobs, expectEnqueued, expectNotEnqueued } from './enqueued.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase({
    connectionString: inject('serverUrl'),
    prepare: async (url) => {
      const { default: pg } = await import('pg');
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query('CREATE TABLE public.orders (id int PRIMARY KEY, email text NOT NULL)');
      await client.end();
    },
  });
});
afterAll(() => t?.drop());

let count = 0;
const unique = (name: string) => `${name}-${++count}`;

describe('expectEnqueued', () => {
  it("sees a job inside the app's pg transaction before the commit, which no other session sees yet", async () => {
    const kind = unique('receipt.send');
    const client = await t.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('INSERT INTO public.orders VALUES (1, $1)', ['a@example.com']);
      const { id } = await enqueue(client, { kind, payload: { orderId: 1, email: 'a@example.com' } });
      const job = await expectEnqueued(client, { kind, payload: { orderId: 1 } });
      expect(job).toMatchObject({ id, kind, queue: 'default', state: 'ready', attempts: 0 });
      await expectNotEnqueued(t.pool, { kind });
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    await expectEnqueued(t.pool, { kind, payload: { orderId: 1 } });
  });

  it('sees a job in a Drizzle transaction, and after a rollback there is none', async () => {
    const kind = unique('receipt.send');
    const rolledBack = new Error('the order failed');
    await expect(
      t.db.transaction(async (tx) => {
        await enqueue(tx, { kind, payload: { orderId: 2 } });
        await expectEnqueued(tx, { kind });
        throw rolledBack;
      }),
    ).rejects.toBe(rolledBack);
    await expectNotEnqueued(t.db, { kind });
    expect(await enqueuedJobs(t.db, { kind })).toEqual([]);
  });

  it('matches payloads partially, nested objects and array elements included', async () => {
    const kind = unique('invoice.mail');
    await enqueue(t.db, {
      kind,
      queue: 'mail',
      payload: { invoice: { id: 7, lines: [{ sku: 'A' }, { sku: 'B' }] }, to: 'b@example.com' },
    });
    await expectEnqueued(t.db, { kind, queue: 'mail', payload: { invoice: { id: 7 } } });
    await expectEnqueued(t.db, { kind, payload: { invoice: { lines: [{ sku: 'B' }] } } });
    await expectNotEnqueued(t.db, { kind, payload: { invoice: { id: 8 } } });
    await expectNotEnqueued(t.db, { kind, queue: 'default' });
  });

  it('throws, listing what was enqueued, when no job matches or more than one does', async () => {
    const kind = unique('sms.send');
    await enqueue(t.db, { kind, payload: { to: '+1' } });
    const none = await expectEnqueued(t.db, { kind, payload: { to: '+2' } }).catch((e: unknown) => e);
    expect(none).toBeInstanceOf(EnqueuedAssertionError);
    expect((none as Error).message).toMatch(/found none/);
    expect((none as Error).message).toContain(`${kind} v1 on default (ready) {"to":"+1"}`);
    await enqueue(t.db, { kind, payload: { to: '+1', retry: true } });
    await expect(expectEnqueued(t.db, { kind, payload: { to: '+1' } })).rejects.toThrow(/found 2/);
    const both = await enqueuedJobs(t.db, { kind });
    expect(both.map((j) => j.payload)).toEqual([{ to: '+1' }, { to: '+1', retry: true }]);
    await expect(expectNotEnqueued(t.db, { kind })).rejects.toThrow(/expected no job .* found 2/);
  });

  it('filters by a job contract (kind and version), state and idempotency key', async () => {
    const kind = unique('report.build');
    await enqueue(t.db, { kind, kindVersion: 1 });
    const v2 = await enqueue(t.db, { kind, kindVersion: 2, idempotencyKey: `report:${kind}` });
    const contract = { kind, version: 2, schema: {} };
    expect((await expectEnqueued(t.db, { kind: contract })).id).toBe(v2.id);
    expect((await expectEnqueued(t.db, { kind, idempotencyKey: `report:${kind}` })).id).toBe(v2.id);
    expect(await enqueuedJobs(t.db, { kind, state: ['done', 'dead'] })).toEqual([]);
    expect(await enqueuedJobs(t.db, { kind, state: 'ready' })).toHaveLength(2);
  });

  it('refuses an unknown filter field or state with a sentence naming it', async () => {
    const error = await enqueuedJobs(t.db, { knd: 'x', state: 'finished' } as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LeaseholdInputError);
    expect((error as LeaseholdInputError).problems).toEqual([
      expect.stringMatching(/^filter\.knd: unknown/),
      expect.stringMatching(/^filter\.state: one of ready, running, done, dead, cancelled/),
    ]);
  });
});
