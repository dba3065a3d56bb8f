/**
 * Type tests (vitest --typecheck, see vitest.config.ts): a handler that implements a job
 * contract gets the schema's output type, and a handler of one job is not a handler of another.
 */
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../db/queue/index.ts';
import { defineHandler, type Handler, type HandlerContext, type HandlerOptions, HandlerRegistry } from './handler.ts';

const receiptJob = defineJob({
  kind: 'receipt.send',
  version: 1,
  schema: z.strictObject({ orderId: z.uuid(), at: z.iso.datetime().transform((s) => new Date(s)) }),
});
type ReceiptOutput = { orderId: string; at: Date };
const invoiceJob = defineJob({ kind: 'invoice.send', version: 1, schema: z.object({ invoiceId: z.int() }) });

describe('defineHandler with a job contract', () => {
  it("hands the handler the schema's output type", () => {
    const handler = defineHandler(receiptJob, async (context) => {
      expectTypeOf(context).toEqualTypeOf<HandlerContext<ReceiptOutput>>();
      expectTypeOf(context.payload).toEqualTypeOf<ReceiptOutput>();
      expectTypeOf(context.payload.at).toEqualTypeOf<Date>();
    });
    expectTypeOf(handler).toEqualTypeOf<Handler<ReceiptOutput, 'receipt.send'>>();
    expectTypeOf<Parameters<typeof handler.handle>[0]>().toEqualTypeOf<HandlerContext<ReceiptOutput>>();
    const options: HandlerOptions = { timeoutMs: 1000, versions: [1], redact: ['orderId'], rerunSafe: true };
    expectTypeOf(defineHandler).toBeCallableWith(receiptJob, async () => {}, options);
  });

  it('refuses a handle that expects another payload, and unknown options', () => {
    const annotated = defineHandler(invoiceJob, async (context: HandlerContext<{ invoiceId: number }>) => context);
    expectTypeOf(annotated).toEqualTypeOf<Handler<{ invoiceId: number }, 'invoice.send'>>();
    // @ts-expect-error the payload is the receipt's, not the invoice's
    defineHandler(receiptJob, async (context: HandlerContext<{ invoiceId: number }>) => context);
    // @ts-expect-error the input type (at: string) is not what the handler gets
    defineHandler(receiptJob, async (context: HandlerContext<{ orderId: string; at: string }>) => context);
    // @ts-expect-error timeoutMs is a number
    defineHandler(receiptJob, async () => {}, { timeoutMs: '30s' });
    // @ts-expect-error the contract sets the kind
    defineHandler(receiptJob, async () => {}, { kind: 'other' });
  });

  it('does not let a handler of one job stand for a handler of another', () => {
    const receipts = defineHandler(receiptJob, async () => {});
    const invoices = defineHandler(invoiceJob, async () => {});
    expectTypeOf(receipts).not.toExtend<Handler<{ invoiceId: number }, 'invoice.send'>>();
    expectTypeOf(invoices).toExtend<Handler<{ invoiceId: number }, 'invoice.send'>>();
    // Either goes where any handler does (a worker's list of handlers).
    expectTypeOf(receipts).toExtend<Handler>();
    expectTypeOf(HandlerRegistry).toBeConstructibleWith([receipts, invoices]);
  });
});

describe('defineHandler with a handler object', () => {
  it("still types the payload as the schema's output", () => {
    const handler = defineHandler({
      kind: 'echo',
      versions: [1],
      schema: z.object({ n: z.string().transform(Number) }),
      timeoutMs: 1000,
      async handle({ payload }) {
        expectTypeOf(payload).toEqualTypeOf<{ n: number }>();
      },
    });
    expectTypeOf(handler).toExtend<Handler<{ n: number }>>();
  });
});
