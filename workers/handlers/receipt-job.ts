/**
 * The `receipt.send` job contract: what the orders service enqueues and the receipt handler
 * runs. It imports only the queue core and zod, so a web tier that enqueues receipts does not
 * load the handler (workers/handlers/receipt-send.ts) or anything of the worker.
 */
import { z } from 'zod';
import { defineJob } from '../../db/queue/index.ts';

export const receiptPayload = z.strictObject({
  orderId: z.uuid(),
  email: z.email(),
  totalCents: z.int().min(0),
});

export const receiptJob = defineJob({ kind: 'receipt.send', version: 1, queue: 'receipts', schema: receiptPayload });
