/**
 * The demo's job contracts: `receipt.send`, what the orders service (demo/orders.ts) enqueues
 * and the receipt handler (demo/handlers.ts) runs. It imports only `leasehold` and zod, as a
 * user's contract would, so a web tier that enqueues receipts loads neither the handler nor
 * anything of the worker.
 */
import { defineJob } from 'leasehold';
import { z } from 'zod';

export const receiptPayload = z.strictObject({
  orderId: z.uuid(),
  email: z.email(),
  totalCents: z.int().min(0),
});

export const receiptJob = defineJob({ kind: 'receipt.send', version: 1, queue: 'receipts', schema: receiptPayload });
