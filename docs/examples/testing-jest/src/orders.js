/**
 * The application code under test: an order is written and its receipt enqueued in one
 * transaction, and the receipt handler sends it (to an in-memory outbox, standing in for a
 * mail provider).
 */
import { defineJob, enqueue } from 'leasehold';
import { defineHandler } from 'leasehold/worker';
import { z } from 'zod';

export const receiptJob = defineJob({
  kind: 'receipt.send',
  version: 1,
  queue: 'receipts',
  schema: z.object({ orderId: z.number().int(), email: z.string().email() }),
});

/** Writes the order and enqueues its receipt on `client` (a pg PoolClient), inside the caller's transaction. */
export async function createOrder(client, order, options = {}) {
  await client.query('INSERT INTO orders (id, email) VALUES ($1, $2)', [order.id, order.email]);
  await enqueue(
    client,
    receiptJob,
    { orderId: order.id, email: order.email },
    { idempotencyKey: `receipt:${order.id}`, ...(options.sendAt ? { runAt: options.sendAt } : {}) },
  );
}

/** What the "mail provider" was asked to send. */
export const outbox = [];

export const receiptHandler = defineHandler(
  receiptJob,
  async ({ payload }) => {
    outbox.push(payload);
  },
  { timeoutMs: 5_000 },
);
