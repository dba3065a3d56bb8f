/**
 * Run with DATABASE_URL naming a PostgreSQL whose user may CREATE DATABASE:
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm test
 * (`npm test` sets NODE_OPTIONS=--experimental-vm-modules: Leasehold is an ES module, and Jest
 * loads ES modules only with it.) Each test file gets a database of its own.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { advance, createTestDatabase, drainQueue, expectEnqueued, expectNotEnqueued } from 'leasehold/testing';
import { createOrder, outbox, receiptHandler, receiptJob } from './src/orders.js';

const connectionString = process.env.DATABASE_URL;
if (!connectionString) throw new Error('Set DATABASE_URL to a PostgreSQL whose user may CREATE DATABASE');

let t;
beforeAll(async () => {
  t = await createTestDatabase({ connectionString });
  await t.pool.query('CREATE TABLE orders (id int PRIMARY KEY, email text NOT NULL)');
});
afterAll(() => t?.drop());
beforeEach(() => {
  outbox.length = 0;
});

/** Runs `work` in a transaction on its own client: committed, or rolled back when `rollback`. */
async function inTransaction(work, rollback = false) {
  const client = await t.pool.connect();
  try {
    await client.query('BEGIN');
    await work(client);
    await client.query(rollback ? 'ROLLBACK' : 'COMMIT');
  } finally {
    client.release();
  }
}

describe('receipts', () => {
  it("enqueues the receipt in the order's transaction, visible to it before the commit", async () => {
    await inTransaction(async (client) => {
      await createOrder(client, { id: 1, email: 'ada@example.com' });
      const job = await expectEnqueued(client, { kind: receiptJob, payload: { orderId: 1 } });
      expect(job.queue).toBe('receipts');
      // Not committed yet: another session sees nothing.
      await expectNotEnqueued(t.pool, { kind: receiptJob, payload: { orderId: 1 } });
    }, true);
    // Rolled back with the order: no receipt.
    await expectNotEnqueued(t.pool, { kind: receiptJob, payload: { orderId: 1 } });
  });

  it('sends the receipt when the queue is drained', async () => {
    await inTransaction((client) => createOrder(client, { id: 2, email: 'grace@example.com' }));
    const { runs } = await drainQueue(t.db, { handlers: [receiptHandler] });
    expect(runs.map((r) => [r.kind, r.state])).toEqual([['receipt.send', 'done']]);
    expect(outbox).toEqual([{ orderId: 2, email: 'grace@example.com' }]);
  });

  it('sends a scheduled receipt only once its time has come (no sleeping)', async () => {
    const inAnHour = new Date(Date.now() + 3_600_000);
    await inTransaction((client) => createOrder(client, { id: 3, email: 'alan@example.com' }, { sendAt: inAnHour }));
    expect((await drainQueue(t.db, { handlers: [receiptHandler] })).runs).toEqual([]);
    await advance(t.db, 3_600_000);
    const { runs } = await drainQueue(t.db, { handlers: [receiptHandler] });
    expect(runs.map((r) => r.state)).toEqual(['done']);
    expect(outbox).toEqual([{ orderId: 3, email: 'alan@example.com' }]);
  });
});
