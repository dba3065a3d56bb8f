import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../db/queue/index.ts';
import { DEFAULT_HANDLER_TIMEOUT_MS, defineHandler, type Handler, HandlerRegistry } from './handler.ts';

const receiptJob = defineJob({ kind: 'receipt.send', version: 2, queue: 'receipts', schema: z.object({}) });
const handle = async () => {};

describe('defineHandler with a job contract', () => {
  it("takes the contract's kind, version, schema and queue, and the options given", () => {
    const handler = defineHandler(receiptJob, handle, {
      timeoutMs: 5000,
      maxAttempts: 4,
      displayName: 'Receipt',
      redact: ['email'],
      searchable: ['orderId', 'customer.region'],
      rerunSafe: true,
      retry: { baseDelayMs: 10 },
      jobSettings: { timeoutMs: [1_000, 120_000], snooze: { maxCount: 5, maxTotalMs: 60_000 } },
    });
    expect(handler).toEqual({
      kind: 'receipt.send',
      versions: [2],
      schema: receiptJob.schema,
      defaultQueue: 'receipts',
      timeoutMs: 5000,
      maxAttempts: 4,
      displayName: 'Receipt',
      redact: ['email'],
      searchable: ['orderId', 'customer.region'],
      rerunSafe: true,
      retry: { baseDelayMs: 10 },
      jobSettings: { timeoutMs: [1_000, 120_000], snooze: { maxCount: 5, maxTotalMs: 60_000 } },
      handle,
    });
    // Registered as the kinds registry records it, under the contract's queue.
    expect(new HandlerRegistry([handler]).registrations()).toEqual([
      {
        kind: 'receipt.send',
        version: 2,
        defaultQueue: 'receipts',
        displayName: 'Receipt',
        redactedPaths: ['email'],
        searchablePaths: ['orderId', 'customer.region'],
        rerunSafe: true,
        maxAttempts: 4,
        // The payload's JSON Schema, from the contract's zod schema (a run-time schedule's payload must fit it).
        payloadSchema: { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: {} },
        // The bounds a job's own timeout is checked against at enqueue, and the snooze cap.
        jobSettings: { timeoutMs: [1_000, 120_000], snooze: { maxCount: 5, maxTotalMs: 60_000 } },
      },
    ]);
  });

  it('times out after a minute when no timeout is given, and accepts several versions', () => {
    const handler = defineHandler(receiptJob, handle, { versions: [1, 2] });
    expect(handler).toMatchObject({ timeoutMs: DEFAULT_HANDLER_TIMEOUT_MS, versions: [1, 2] });
    expect(DEFAULT_HANDLER_TIMEOUT_MS).toBe(60_000);
    expect(Object.keys(defineHandler(receiptJob, handle)).sort()).toEqual(
      ['defaultQueue', 'handle', 'kind', 'schema', 'timeoutMs', 'versions'].sort(),
    );
  });

  it("refuses versions that leave out the contract's, a missing handle, and a non-contract with a handle", () => {
    expect(() => defineHandler(receiptJob, handle, { versions: [1] })).toThrow(
      "Leasehold defineHandler(receipt.send): versions: [1] leaves out the contract's version 2",
    );
    const untyped = defineHandler as (...args: unknown[]) => unknown;
    expect(() => untyped(receiptJob)).toThrow(/defineHandler\(receipt\.send\): handle: expected a function/);
    expect(() => untyped({ kind: 'x' }, handle)).toThrow(/the first argument is not a job contract/);
  });
});

describe('the handler registry', () => {
  it('refuses a handler whose schema is not a Standard Schema, naming the schema', () => {
    const legacy = { kind: 'legacy', versions: [1], schema: { parse: (v: unknown) => v }, timeoutMs: 1000, handle };
    expect(() => new HandlerRegistry([legacy as unknown as Handler])).toThrow(
      /handler legacy: schema: expected a Standard Schema v1 validator/,
    );
  });

  it('refuses two handlers for one kind, from a contract and from an object', () => {
    const object = defineHandler({ kind: 'receipt.send', versions: [1], schema: z.object({}), timeoutMs: 1, handle });
    expect(() => new HandlerRegistry([defineHandler(receiptJob, handle), object])).toThrow(
      'Leasehold workers: two handlers for kind receipt.send',
    );
  });
});
