import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { useTestDatabase } from '../../test/db.ts';
import { getJob, uniqueQueue } from '../../test/factories.ts';
import { run } from './executor.ts';
import { MASK } from './redaction-rules.ts';
import { defineJob, enqueue, enqueueMany, LeaseholdInputError, type StandardSchemaV1 } from './index.ts';

const t = useTestDatabase();

const receiptJob = defineJob({
  kind: 'receipt.send',
  version: 3,
  queue: 'receipts',
  schema: z.strictObject({ orderId: z.uuid(), email: z.email(), totalCents: z.int().min(0) }),
});
const orderId = '0190f0e8-0000-7000-8000-000000000042';
const good = { orderId, email: 'a@example.com', totalCents: 1200 };

/** Every row of the tables an enqueue writes, for before/after comparisons. */
async function rows() {
  return {
    jobs: await run(t.db, sql`SELECT * FROM leasehold.jobs ORDER BY id`),
    keys: await run(t.db, sql`SELECT * FROM leasehold.dedupe_keys ORDER BY key`),
  };
}

/** The error a call throws (fails the test if it does not throw). */
async function errorOf(call: () => Promise<unknown>): Promise<LeaseholdInputError> {
  const error = await call().then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(LeaseholdInputError);
  return error as LeaseholdInputError;
}

describe('enqueue with a job contract', () => {
  it("writes the job with the contract's kind, version and queue, and the payload as given", async () => {
    const { id, created } = await enqueue(t.db, receiptJob, good, {
      idempotencyKey: `receipt:${orderId}`,
      priority: 7,
    });
    expect(created).toBe(true);
    expect(await getJob(t.db, id)).toMatchObject({
      kind: 'receipt.send',
      kindVersion: 3,
      queue: 'receipts',
      payload: good,
      idempotencyKey: `receipt:${orderId}`,
      priority: 7,
      state: 'ready',
    });
    // The key deduplicates as with a spec.
    const again = await enqueue(t.db, receiptJob, good, { idempotencyKey: `receipt:${orderId}` });
    expect(again).toMatchObject({ id, created: false });
  });

  it('sends the job to the queue an enqueue names instead of the contract’s', async () => {
    const queue = uniqueQueue('override');
    const { id } = await enqueue(t.db, receiptJob, good, { queue });
    expect(await getJob(t.db, id)).toMatchObject({ queue, kind: 'receipt.send', kindVersion: 3 });
    const plain = defineJob({ kind: 'plain', version: 1, schema: z.object({}) });
    const { id: plainId } = await enqueue(t.db, plain, {});
    expect(await getJob(t.db, plainId)).toMatchObject({ queue: 'default', kindVersion: 1 });
  });

  it('refuses a payload its schema refuses, naming the field, and writes nothing', async () => {
    await enqueue(t.db, receiptJob, good); // something in the table, so that "unchanged" means something
    const before = await rows();
    expect(before.jobs.length).toBeGreaterThan(0);
    const error = await errorOf(() =>
      enqueue(t.db, receiptJob, { ...good, orderId: 'not-a-uuid' }, { idempotencyKey: 'refused-key' }),
    );
    expect(error.problems).toEqual([expect.stringMatching(/^payload\.orderId: /)]);
    expect(error.message).toMatch(/^Leasehold enqueue of receipt\.send v3: invalid input: payload\.orderId: /);
    // Two fields wrong: both named.
    const two = await errorOf(() => enqueue(t.db, receiptJob, { ...good, email: 'nope', totalCents: -1 }));
    expect(two.problems.map((p) => p.split(':')[0])).toEqual(['payload.email', 'payload.totalCents']);
    // No payload at all (a caller without types).
    const none = await errorOf(() => (enqueue as (...args: unknown[]) => Promise<unknown>)(t.db, receiptJob));
    expect(none.problems).toEqual([expect.stringMatching(/^payload: /)]);
    expect(await rows()).toEqual(before);
  });

  it("refuses a refused payload before any statement, so the caller's transaction still commits", async () => {
    const queue = uniqueQueue('tx');
    const client = await t.pool.connect();
    try {
      await client.query('BEGIN');
      const { id } = await enqueue(client, receiptJob, good, { queue });
      await errorOf(() => enqueue(client, receiptJob, { ...good, totalCents: 1.5 }, { queue }));
      await client.query('COMMIT');
      expect(await getJob(t.db, id)).toMatchObject({ queue, payload: good });
    } finally {
      client.release();
    }
    const [{ n }] = (await run<{ n: number }>(
      t.db,
      sql`SELECT count(*)::int AS n FROM leasehold.jobs WHERE queue = ${queue}`,
    )) as [{ n: number }];
    expect(n).toBe(1);
  });

  it('refuses settings the contract owns and bad spec settings, naming them, and writes nothing', async () => {
    const before = await rows();
    const untyped = enqueue as (...args: unknown[]) => Promise<unknown>;
    const owned = await errorOf(() => untyped(t.db, receiptJob, good, { kind: 'other', kindVersion: 9 }));
    expect(owned.problems).toEqual([
      expect.stringMatching(/^options\.kind: set by the job contract/),
      expect.stringMatching(/^options\.kindVersion: set by the job contract/),
    ]);
    const settings = await errorOf(() => enqueue(t.db, receiptJob, good, { priority: 1000 }));
    expect(settings.problems).toEqual([expect.stringMatching(/^priority: /)]);
    expect(await rows()).toEqual(before);
  });

  it('keeps the input when the schema transforms or fills defaults (the handler gets the output)', async () => {
    const job = defineJob({
      kind: 'transformed',
      version: 1,
      schema: z.object({ at: z.iso.datetime().transform((s) => new Date(s)), tries: z.int().default(3) }),
    });
    const { id } = await enqueue(t.db, job, { at: '2026-01-02T03:04:05Z' });
    // Stored as given: a Date output is not JSON, and the default is applied again at run time.
    expect((await getJob(t.db, id)).payload).toEqual({ at: '2026-01-02T03:04:05Z' });
  });

  it("stores a stripping schema's output: a field outside the schema is not written", async () => {
    const job = defineJob({ kind: 'strip.send', version: 1, schema: z.object({ userId: z.int() }) });
    const { id } = await enqueue(t.db, job, { userId: 1, extra: 'x' } as { userId: number });
    expect((await getJob(t.db, id)).payload).toEqual({ userId: 1 });
    const [stored] = await run<{ text: string }>(
      t.db,
      sql`SELECT payload::text AS text FROM leasehold.jobs WHERE id = ${id}::uuid`,
    );
    expect(stored?.text).not.toMatch(/extra/);
  });

  it("stores a defaulting schema's output, its defaults filled in", async () => {
    const job = defineJob({
      kind: 'default.send',
      version: 1,
      schema: z.object({ to: z.string(), tries: z.int().default(3), tags: z.array(z.string()).default([]) }),
    });
    const { id } = await enqueue(t.db, job, { to: 'a@example.com' });
    expect((await getJob(t.db, id)).payload).toEqual({ to: 'a@example.com', tries: 3, tags: [] });
  });

  it('stores the input when the output does not pass the schema again (z.string().transform(Number))', async () => {
    const job = defineJob({ kind: 'number.send', version: 1, schema: z.string().transform(Number) });
    const { id } = await enqueue(t.db, job, '42');
    // 42 is JSON, but z.string() refuses it: the input is what the worker's check takes again.
    expect((await getJob(t.db, id)).payload).toBe('42');
  });

  it('masks, in a stored input, every path the output lacks', async () => {
    const job = defineJob({
      kind: 'mixed.send',
      version: 1,
      schema: z.object({ amount: z.string().transform(Number), lines: z.array(z.object({ sku: z.string() })) }),
    });
    const input = { amount: '12', lines: [{ sku: 'a', note: 'call 555-0100' }], email: 'a@example.com' };
    const { id } = await enqueue(t.db, job, input as never);
    const stored = (await getJob(t.db, id)).payload;
    expect(stored).toEqual({ amount: '12', lines: [{ sku: 'a', note: MASK }], email: MASK });
    // What the handler gets from the stored payload is what it would have got from the input.
    expect(job.schema['~standard'].validate(stored)).toEqual({ value: { amount: 12, lines: [{ sku: 'a' }] } });
  });

  it('refuses, writing nothing, a payload whose extra field the schema needs in its input but drops from its output', async () => {
    const job = defineJob({
      kind: 'needs.send',
      version: 1,
      schema: z.object({ at: z.string(), secret: z.number() }).transform(({ at }) => ({ at: new Date(at) })),
    });
    const before = await rows();
    const error = await errorOf(() => enqueue(t.db, job, { at: '2026-01-02T03:04:05Z', secret: 7 }));
    expect(error.problems).toEqual([expect.stringMatching(/^payload\.secret: not in the schema's output/)]);
    expect(await rows()).toEqual(before);
  });

  it('takes a hand-written Standard Schema, sync or async, and names its issue paths', async () => {
    const calls: unknown[] = [];
    const positive: StandardSchemaV1<{ items: { n: number }[] }> = {
      '~standard': {
        version: 1,
        vendor: 'hand',
        validate: async (value) => {
          calls.push(value);
          await new Promise((resolve) => setTimeout(resolve, 5));
          const items = (value as { items?: { n?: unknown }[] }).items ?? [];
          const bad = items.findIndex((item) => typeof item.n !== 'number' || item.n <= 0);
          return bad < 0
            ? { value: value as { items: { n: number }[] } }
            : { issues: [{ message: 'must be positive', path: ['items', { key: bad }, 'n'] }] };
        },
      },
    };
    const job = defineJob({ kind: 'hand.async', version: 2, schema: positive });
    const { id } = await enqueue(t.db, job, { items: [{ n: 1 }, { n: 2 }] });
    expect(await getJob(t.db, id)).toMatchObject({
      kind: 'hand.async',
      kindVersion: 2,
      payload: { items: [{ n: 1 }, { n: 2 }] },
    });
    const before = await rows();
    const error = await errorOf(() => enqueue(t.db, job, { items: [{ n: 1 }, { n: -4 }] }));
    expect(error.problems).toEqual(['payload.items[1].n: must be positive']);
    expect(await rows()).toEqual(before);
    // The good payload twice (its output is checked again before it is stored), the bad one once.
    expect(calls).toHaveLength(3);

    const sync: StandardSchemaV1<string> = {
      '~standard': {
        version: 1,
        vendor: 'hand',
        validate: (value) => (typeof value === 'string' ? { value } : { issues: [{ message: 'expected a string' }] }),
      },
    };
    const stringJob = defineJob({ kind: 'hand.sync', version: 1, schema: sync });
    expect((await getJob(t.db, (await enqueue(t.db, stringJob, 'hello')).id)).payload).toBe('hello');
    expect((await errorOf(() => enqueue(t.db, stringJob, 5 as unknown as string))).problems).toEqual([
      'payload: expected a string',
    ]);
  });

  it('keeps the spec form working beside it', async () => {
    const queue = uniqueQueue('spec');
    const { id } = await enqueue(t.db, { queue, kind: 'receipt.send', payload: { anything: true } });
    expect(await getJob(t.db, id)).toMatchObject({ queue, kindVersion: 1, payload: { anything: true } });
  });
});

describe('enqueueMany with a job contract', () => {
  it('stores each payload as the schema outputs it, extra fields left out', async () => {
    const job = defineJob({ kind: 'strip.many', version: 1, schema: z.object({ n: z.int(), d: z.int().default(0) }) });
    const results = await enqueueMany(t.db, job, [{ n: 1, extra: 'x' } as { n: number }, { n: 2, d: 5 }]);
    const payloads = await Promise.all(results.map(async (r) => (await getJob(t.db, r.id)).payload));
    expect(payloads).toEqual([
      { n: 1, d: 0 },
      { n: 2, d: 5 },
    ]);
  });

  const invoiceJob = defineJob({ kind: 'invoice.send', version: 1, schema: z.object({ invoiceId: z.int().min(1) }) });

  it('writes every job with the contract’s settings and keys made from each payload', async () => {
    const queue = uniqueQueue('many');
    const results = await enqueueMany(t.db, invoiceJob, [{ invoiceId: 1 }, { invoiceId: 2 }, { invoiceId: 1 }], {
      queue,
      priority: 3,
      idempotencyKey: (payload) => `invoice:${queue}:${payload.invoiceId}`,
    });
    expect(results.map((r) => r.created)).toEqual([true, true, false]);
    expect(results[2]!.id).toBe(results[0]!.id);
    const jobs = await Promise.all(results.slice(0, 2).map((r) => getJob(t.db, r.id)));
    expect(jobs).toMatchObject([
      {
        queue,
        kind: 'invoice.send',
        kindVersion: 1,
        priority: 3,
        payload: { invoiceId: 1 },
        idempotencyKey: `invoice:${queue}:1`,
      },
      {
        queue,
        kind: 'invoice.send',
        kindVersion: 1,
        priority: 3,
        payload: { invoiceId: 2 },
        idempotencyKey: `invoice:${queue}:2`,
      },
    ]);
  });

  it('refuses the whole call when one payload fails, naming its index and field, and writes nothing', async () => {
    const before = await rows();
    const error = await errorOf(() =>
      enqueueMany(t.db, invoiceJob, [{ invoiceId: 1 }, { invoiceId: 0 }, { invoiceId: 3 }, { invoiceId: 1.5 }]),
    );
    expect(error.problems.map((p) => p.split(':')[0])).toEqual([
      'jobs[1].payload.invoiceId',
      'jobs[3].payload.invoiceId',
    ]);
    expect(error.message).toMatch(/^Leasehold enqueueMany of invoice\.send v1: invalid input: /);
    expect(await rows()).toEqual(before);
  });
});

describe('defineJob', () => {
  it('refuses bad settings, naming each, when the contract is defined', () => {
    const define = defineJob as (input: unknown) => unknown;
    let error: unknown;
    try {
      define({ kind: 'has space', version: 0, schema: { parse: () => null }, queue: '' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(LeaseholdInputError);
    expect((error as LeaseholdInputError).problems.map((p) => p.split(':')[0])).toEqual([
      'kind',
      'version',
      'schema',
      'queue',
    ]);
    expect(() => define({ kind: 'ok', version: 1.5, schema: z.object({}) })).toThrow(
      /defineJob: invalid input: version: /,
    );
    expect(() => define(null)).toThrow(/input: expected an object/);
  });

  it('gives a frozen contract with the default queue when none is named', () => {
    const job = defineJob({ kind: 'k', version: 1, schema: z.string() });
    expect(job).toMatchObject({ kind: 'k', version: 1, queue: 'default' });
    expect(Object.isFrozen(job)).toBe(true);
  });
});
