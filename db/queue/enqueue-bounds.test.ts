import { sql } from 'drizzle-orm';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { enqueueMany, LeaseholdInputError } from '.';
import { BULK_CHUNK_BYTES, byPayloadBytes } from './enqueue.ts';
import { prepareSpecs, type EnqueueSpec } from './enqueue-spec.ts';
import { MAX_PAYLOAD_BYTES } from '../schema.ts';
import { useTestDatabase } from '../../test/db.ts';
import { uniqueQueue } from '../../test/factories.ts';
import { run } from './executor.ts';

const t = useTestDatabase({ max: 4 });

const jobsIn = async (queue: string) =>
  (await run<{ n: number }>(t.db, sql`SELECT count(*)::int AS n FROM leasehold.jobs WHERE queue = ${queue}`))[0]!.n;

/** `n` specs whose payloads are just under MAX_PAYLOAD_BYTES each: 270 of them pass BULK_CHUNK_BYTES. */
function bigSpecs(queue: string, n: number): EnqueueSpec[] {
  const blob = 'x'.repeat(MAX_PAYLOAD_BYTES - 64);
  return Array.from({ length: n }, (_, i) => ({ queue, kind: 'big', payload: { i, blob } }));
}

describe('enqueueMany bounds the size of each statement', () => {
  it('cuts parts at BULK_CHUNK_BYTES of payloads, keeping order and every job', () => {
    const jobs = prepareSpecs('enqueueMany', [
      { kind: 'k', payload: { s: 'a'.repeat(40) } },
      { kind: 'k', payload: { s: 'b'.repeat(40) } },
      { kind: 'k', payload: { s: 'é'.repeat(40) } }, // 80 bytes of UTF-8, 40 characters
      { kind: 'k', payload: { s: 'c'.repeat(10) } },
    ]);
    const parts = byPayloadBytes(jobs, 100);
    expect(parts.map((part) => part.length)).toEqual([2, 1, 1]);
    expect(parts.flat().map((j) => j.id)).toEqual(jobs.map((j) => j.id));
    for (const part of parts.filter((p) => p.length > 1)) {
      expect(part.reduce((sum, j) => sum + Buffer.byteLength(j.payloadText), 0)).toBeLessThanOrEqual(100);
    }
  });

  it('refuses a call in the caller transaction whose payloads pass BULK_CHUNK_BYTES, writing nothing', async () => {
    const queue = uniqueQueue();
    const specs = bigSpecs(queue, Math.ceil(BULK_CHUNK_BYTES / MAX_PAYLOAD_BYTES) + 4);
    const error = await t.db
      .transaction(async (tx) => enqueueMany(tx, specs))
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(LeaseholdInputError);
    expect((error as Error).message).toMatch(/jobs: the payloads total \d+ bytes of JSON, more than the 67108864/);
    expect(await jobsIn(queue)).toBe(0);
  });

  it('sends a pool call whose payloads pass BULK_CHUNK_BYTES in parts, each under the bound', async () => {
    const queue = uniqueQueue();
    const n = Math.ceil(BULK_CHUNK_BYTES / MAX_PAYLOAD_BYTES) + 4;
    const sizes: number[] = [];
    // The payload parameter of every statement sent, on any connection (parts run on one the
    // call checks out of the pool for its transaction).
    const query = Reflect.get(pg.Client.prototype, 'query') as (...args: unknown[]) => unknown;
    Reflect.set(pg.Client.prototype, 'query', function (this: pg.Client, ...args: unknown[]) {
      const config = args[0] as { values?: unknown[] } | string;
      const values = typeof config === 'object' ? config.values : (args[1] as unknown[] | undefined);
      const payloads = Array.isArray(values) ? values.find((v) => typeof v === 'string' && v.startsWith('[{')) : null;
      if (typeof payloads === 'string') sizes.push(Buffer.byteLength(payloads));
      return query.apply(this, args);
    });
    try {
      const results = await enqueueMany(t.db, bigSpecs(queue, n));
      expect(results).toHaveLength(n);
    } finally {
      Reflect.set(pg.Client.prototype, 'query', query);
    }
    expect(await jobsIn(queue)).toBe(n);
    expect(sizes.length).toBeGreaterThanOrEqual(2);
    // The parameter is the payloads joined: their bytes, a comma between each, two brackets.
    for (const size of sizes) expect(size).toBeLessThanOrEqual(BULK_CHUNK_BYTES + 300);
  });

  it('names a single payload past MAX_PAYLOAD_BYTES by its index, writing nothing', async () => {
    const queue = uniqueQueue();
    const specs: EnqueueSpec[] = [
      { queue, kind: 'k', payload: { ok: true } },
      { queue, kind: 'k', payload: { blob: 'x'.repeat(MAX_PAYLOAD_BYTES) } },
    ];
    await expect(enqueueMany(t.db, specs)).rejects.toThrow(
      /jobs\[1\]\.payload: \d+ bytes of JSON, more than the 262144/,
    );
    expect(await jobsIn(queue)).toBe(0);
  });
});
