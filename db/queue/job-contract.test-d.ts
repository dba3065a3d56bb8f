/**
 * Type tests (vitest --typecheck, see vitest.config.ts): a job contract types its enqueue's
 * payload as the schema's input, and nothing else passes.
 */
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import type { Executor } from './executor.ts';
import {
  defineJob,
  enqueue,
  enqueueMany,
  type BulkEnqueueResult,
  type EnqueueResult,
  type JobContract,
  type JobEnqueueOptions,
  type JobInput,
  type JobOutput,
  type StandardSchemaV1,
} from './index.ts';

declare const tx: Executor;

// Input and output differ: `attempts` has a default, `at` is a string turned into a Date.
const receiptJob = defineJob({
  kind: 'receipt.send',
  version: 1,
  queue: 'receipts',
  schema: z.strictObject({
    orderId: z.uuid(),
    attempts: z.int().default(1),
    at: z.iso.datetime().transform((s) => new Date(s)),
  }),
});
type ReceiptInput = { orderId: string; attempts?: number | undefined; at: string };
type ReceiptOutput = { orderId: string; attempts: number; at: Date };

const invoiceJob = defineJob({ kind: 'invoice.send', version: 2, schema: z.object({ invoiceId: z.int() }) });

describe('defineJob', () => {
  it('carries the kind as a literal and the schema input and output types', () => {
    expectTypeOf(receiptJob.kind).toEqualTypeOf<'receipt.send'>();
    expectTypeOf(receiptJob.version).toEqualTypeOf<number>();
    expectTypeOf(receiptJob.queue).toEqualTypeOf<string>();
    expectTypeOf<JobInput<typeof receiptJob>>().toEqualTypeOf<ReceiptInput>();
    expectTypeOf<JobOutput<typeof receiptJob>>().toEqualTypeOf<ReceiptOutput>();
    expectTypeOf(receiptJob).toExtend<JobContract<ReceiptInput, ReceiptOutput, 'receipt.send'>>();
    expectTypeOf(receiptJob).not.toExtend<JobContract<ReceiptInput, ReceiptOutput, 'invoice.send'>>();
  });

  it('takes a hand-written Standard Schema and types the contract from it', () => {
    const schema: StandardSchemaV1<{ n: number }> = {
      '~standard': {
        version: 1,
        vendor: 'hand',
        validate: (value) => ({ value: value as { n: number } }),
      },
    };
    const job = defineJob({ kind: 'hand.made', version: 1, schema });
    expectTypeOf<JobInput<typeof job>>().toEqualTypeOf<{ n: number }>();
    expectTypeOf<JobOutput<typeof job>>().toEqualTypeOf<{ n: number }>();
  });

  it('refuses a definition without a version, a schema that is not a Standard Schema, or a non-string queue', () => {
    expectTypeOf(defineJob).toBeCallableWith({ kind: 'k', version: 1, schema: z.object({}), queue: 'q' });
    // @ts-expect-error version is required
    defineJob({ kind: 'k', schema: z.object({}) });
    // @ts-expect-error a plain function is not a Standard Schema
    defineJob({ kind: 'k', version: 1, schema: (v: unknown) => v });
    // @ts-expect-error queue is a name
    defineJob({ kind: 'k', version: 1, schema: z.object({}), queue: 7 });
  });
});

describe('enqueue with a job contract', () => {
  it("takes exactly the schema's input type as the payload", () => {
    type Payload = Parameters<typeof enqueue<typeof receiptJob>>[2];
    expectTypeOf<Payload>().toEqualTypeOf<ReceiptInput>();
    expectTypeOf<Parameters<typeof enqueue<typeof invoiceJob>>[2]>().toEqualTypeOf<{ invoiceId: number }>();
    expectTypeOf<Parameters<typeof enqueue<typeof receiptJob>>[3]>().toEqualTypeOf<JobEnqueueOptions | undefined>();
    expectTypeOf(enqueue(tx, receiptJob, { orderId: 'x', at: 'y' })).resolves.toEqualTypeOf<EnqueueResult>();
  });

  it('accepts a valid payload with and without options', () => {
    expectTypeOf(enqueue).toBeCallableWith(tx, receiptJob, { orderId: 'x', at: 'y' });
    expectTypeOf(enqueue).toBeCallableWith(tx, receiptJob, { orderId: 'x', at: 'y', attempts: 3 });
    expectTypeOf(enqueue).toBeCallableWith(tx, invoiceJob, { invoiceId: 1 }, { idempotencyKey: 'k', priority: 5 });
  });

  it('refuses a wrong, missing or output-typed payload, and options the contract sets', () => {
    expectTypeOf(enqueue).toBeCallableWith(tx, invoiceJob, { invoiceId: 1 }, { queue: 'elsewhere' });
    // @ts-expect-error orderId must be a string
    void enqueue(tx, receiptJob, { orderId: 42, at: 'y' });
    // @ts-expect-error `at` is missing
    void enqueue(tx, receiptJob, { orderId: 'x' });
    // @ts-expect-error the schema is strict about unknown keys in its type too
    void enqueue(tx, receiptJob, { orderId: 'x', at: 'y', extra: true });
    // @ts-expect-error the output (a Date) is not the input (a string)
    void enqueue(tx, receiptJob, { orderId: 'x', at: new Date(), attempts: 1 });
    // @ts-expect-error another job's payload
    void enqueue(tx, receiptJob, { invoiceId: 1 });
    // @ts-expect-error no payload: a contract is not a spec
    void enqueue(tx, receiptJob);
    // @ts-expect-error the contract sets the kind
    void enqueue(tx, invoiceJob, { invoiceId: 1 }, { kind: 'other' });
    // @ts-expect-error the contract sets the version
    void enqueue(tx, invoiceJob, { invoiceId: 1 }, { kindVersion: 3 });
  });

  it('keeps the spec form', () => {
    expectTypeOf(enqueue).toBeCallableWith(tx, { kind: 'k', payload: { anything: 1 } });
    expectTypeOf(enqueue).toBeCallableWith(tx, { kind: 'k' }, { notify: false });
    // @ts-expect-error a spec needs a kind
    void enqueue(tx, { payload: {} });
  });
});

describe('enqueueMany with a job contract', () => {
  it('takes an array of the input type, and keys made from each payload', () => {
    type Payloads = Parameters<typeof enqueueMany<typeof invoiceJob>>[2];
    expectTypeOf<Payloads>().toEqualTypeOf<readonly { invoiceId: number }[]>();
    const result = enqueueMany(tx, invoiceJob, [{ invoiceId: 1 }], {
      idempotencyKey: (payload, index) => {
        expectTypeOf(payload).toEqualTypeOf<{ invoiceId: number }>();
        expectTypeOf(index).toEqualTypeOf<number>();
        return `invoice:${payload.invoiceId}`;
      },
    });
    expectTypeOf(result).resolves.toEqualTypeOf<BulkEnqueueResult[]>();
  });

  it('refuses a wrong payload and a shared idempotency key', () => {
    // @ts-expect-error invoiceId must be a number
    void enqueueMany(tx, invoiceJob, [{ invoiceId: '1' }]);
    // @ts-expect-error one key for every job would collapse them into one
    void enqueueMany(tx, invoiceJob, [{ invoiceId: 1 }], { idempotencyKey: 'same' });
    expectTypeOf(enqueueMany).toBeCallableWith(tx, [{ kind: 'k' }, { kind: 'k', payload: 1 }]);
  });
});
