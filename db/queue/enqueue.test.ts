import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  claim,
  completeIfLeaseHeld,
  enqueue,
  enqueueMany,
  LeaseholdInputError,
  removeExpiredHistory,
  WAKE_CHANNEL,
  WAKE_DEBOUNCE_MS,
} from '.';
import { BULK_CHUNK } from './enqueue.ts';
import type { EnqueueSpec } from './enqueue-spec.ts';
import { DEFAULT_MAX_ATTEMPTS, MAX_PAYLOAD_BYTES } from '../schema.ts';
import { useTestDatabase } from '../../test/db.ts';
import { allJobs, getJob, uniqueQueue } from '../../test/factories.ts';
import { run, type Executor } from './executor.ts';
import { planWake } from './wake.ts';
import { createDb } from '../client.ts';

const t = useTestDatabase({ max: 40 });

const count = async (where = sql`true`) =>
  (await run<{ n: number }>(t.db, sql`SELECT count(*)::int AS n FROM leasehold.jobs WHERE ${where}`))[0]!.n;

describe('enqueue inside the caller transaction', () => {
  it('commits the job with the business write (Drizzle transaction)', async () => {
    const queue = uniqueQueue();
    const id = await t.db.transaction(async (tx) => {
      const result = await enqueue(tx, { queue, kind: 'receipt.send', payload: { orderId: 42 } });
      return result.id;
    });
    const job = await getJob(t.db, id);
    expect(job).toMatchObject({ state: 'ready', kind: 'receipt.send', payload: { orderId: 42 }, attempts: 0, queue });
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/); // UUIDv7 when the app gives none
  });

  it('leaves nothing when the transaction rolls back (pg client)', async () => {
    const queue = uniqueQueue();
    const client = await t.pool.connect();
    try {
      await client.query('BEGIN');
      await enqueue(client, { queue, kind: 'k', idempotencyKey: `rolled-back-${queue}` });
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    expect(await count(sql`queue = ${queue}`)).toBe(0);
    const keys = await run(t.db, sql`SELECT 1 FROM leasehold.dedupe_keys WHERE key = ${`rolled-back-${queue}`}`);
    expect(keys).toEqual([]);
    // The key is free again: a later enqueue creates the job.
    expect((await enqueue(t.db, { queue, kind: 'k', idempotencyKey: `rolled-back-${queue}` })).created).toBe(true);
  });

  it('keeps the app-supplied id, priority, run time, attempts and trace id', async () => {
    const queue = uniqueQueue();
    const id = '0190f0e8-0000-7000-8000-00000000abcd';
    const runAt = new Date(Date.now() + 60_000);
    const { job } = await enqueue(t.db, {
      id,
      queue,
      kind: 'k',
      kindVersion: 2,
      priority: 5,
      runAt,
      maxAttempts: 3,
      traceId: 'trace-1',
      maxAgeSeconds: 600,
    });
    expect(job).toMatchObject({ id, kindVersion: 2, priority: 5, maxAttempts: 3, traceId: 'trace-1' });
    expect(job!.runAt.getTime()).toBe(runAt.getTime());
    expect(job!.expiresAt!.getTime() - job!.createdAt.getTime()).toBeCloseTo(600_000, -2);
  });

  it('returns the job exactly as stored, with and without priority, delay and max age, on a pool and in a transaction', async () => {
    const queue = uniqueQueue();
    const pool = new pg.Pool({ connectionString: t.url, max: 2 });
    try {
      const specs = [
        { queue, kind: 'k', payload: { n: 1, nested: { list: [1, 'two', null] } } },
        { queue, kind: 'k', priority: 7, delayMs: 1500, maxAgeSeconds: 90, traceId: 't-1' },
        { queue, kind: 'k', payload: 'just text', runAt: new Date(Date.now() - 5_000), kindVersion: 3 },
      ];
      for (const spec of specs) {
        for (const executor of [pool, t.db]) {
          const { job } = await enqueue(executor, spec);
          expect(job).toEqual(await getJob(t.db, job!.id));
        }
        const { job } = await t.db.transaction((tx) => enqueue(tx, spec));
        expect(job).toEqual(await getJob(t.db, job!.id));
      }
    } finally {
      await pool.end();
    }
  });
});

describe('idempotency keys', () => {
  it('32 concurrent enqueues of one key on separate connections give exactly one job', async () => {
    const queue = uniqueQueue();
    const key = `receipt:order-${queue}`;
    const results = await Promise.all(
      Array.from({ length: 32 }, async (_, i) => {
        const client = new pg.Client({ connectionString: t.url });
        await client.connect();
        try {
          await client.query('BEGIN');
          const result = await enqueue(client, { queue, kind: 'receipt.send', idempotencyKey: key, payload: { i } });
          await new Promise((r) => setTimeout(r, Math.random() * 20));
          await client.query('COMMIT');
          return result;
        } finally {
          await client.end();
        }
      }),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    expect(await count(sql`queue = ${queue}`)).toBe(1);
    const duplicate = results.find((r) => !r.created)!;
    expect(duplicate.job).toMatchObject({ id: duplicate.id, queue });
  });

  it('gives the key to a waiting enqueue when the first holder rolls back', async () => {
    const queue = uniqueQueue();
    const key = `k-${queue}`;
    const first = new pg.Client({ connectionString: t.url });
    const second = new pg.Client({ connectionString: t.url });
    await Promise.all([first.connect(), second.connect()]);
    try {
      await first.query('BEGIN');
      await enqueue(first, { queue, kind: 'k', idempotencyKey: key });
      const waiting = enqueue(second, { queue, kind: 'k', idempotencyKey: key });
      await new Promise((r) => setTimeout(r, 200));
      await first.query('ROLLBACK');
      const result = await waiting;
      expect(result.created).toBe(true);
    } finally {
      await Promise.all([first.end(), second.end()]);
    }
    expect(await count(sql`queue = ${queue}`)).toBe(1);
  });

  it('still dedupes after retention removed the job', async () => {
    const queue = uniqueQueue();
    const key = `k-${queue}`;
    const first = await enqueue(t.db, { queue, kind: 'k', idempotencyKey: key });
    const [job] = await claim(t.db, { queues: [queue], workerId: 'w' });
    await completeIfLeaseHeld(t.db, job!);
    await run(
      t.db,
      sql`UPDATE leasehold.jobs SET finished_at = now() - interval '2 days', created_at = now() - interval '2 days' - interval '1 minute' WHERE id = ${first.id}::uuid`,
    );
    const removed = await removeExpiredHistory(t.db, { doneAfterSeconds: 3600 });
    expect(removed.jobs).toBeGreaterThanOrEqual(1);
    expect(await count(sql`id = ${first.id}::uuid`)).toBe(0);

    const again = await enqueue(t.db, { queue, kind: 'k', idempotencyKey: key });
    expect(again).toEqual({ id: first.id, created: false, job: null });
    expect(await count(sql`queue = ${queue}`)).toBe(0);
  });

  it('dedupes within one bulk call and against earlier jobs, reporting the owner', async () => {
    const queue = uniqueQueue();
    const earlier = await enqueue(t.db, { queue, kind: 'k', idempotencyKey: `a-${queue}` });
    const results = await enqueueMany(t.db, [
      { queue, kind: 'k', idempotencyKey: `a-${queue}` },
      { queue, kind: 'k', idempotencyKey: `b-${queue}` },
      { queue, kind: 'k', idempotencyKey: `b-${queue}` },
      { queue, kind: 'k' },
    ]);
    expect(results.map((r) => r.created)).toEqual([false, true, false, true]);
    expect(results[0]!.id).toBe(earlier.id);
    expect(results[2]!.id).toBe(results[1]!.id);
    expect(await count(sql`queue = ${queue}`)).toBe(3);
  });
});

/** An object nested `levels` deep: {a: {a: … {}}}. */
function nested(levels: number): unknown {
  let value: unknown = {};
  for (let i = 0; i < levels; i++) value = { a: value };
  return value;
}

describe('bad input', () => {
  const cases: [string, unknown, RegExp][] = [
    ['an unknown field', { kind: 'k', colour: 'red' }, /colour/],
    ['a missing kind', { queue: 'q' }, /kind/],
    ['an invalid id', { kind: 'k', id: 'not-a-uuid' }, /id: expected a UUID/],
    ['a priority out of range', { kind: 'k', priority: 101 }, /priority/],
    ['a negative priority', { kind: 'k', priority: -1 }, /priority/],
    ['an idempotency key with U+0000', { kind: 'k', idempotencyKey: 'a\u0000' }, /U\+0000/],
    ['a fractional priority', { kind: 'k', priority: 1.5 }, /priority/],
    ['a bad queue name', { kind: 'k', queue: 'no spaces please' }, /queue/],
    ['a non-JSON payload (function)', { kind: 'k', payload: { f: () => 1 } }, /payload\.f: a function is not JSON/],
    ['a non-JSON payload (NaN)', { kind: 'k', payload: { n: Number.NaN } }, /payload\.n: NaN/],
    ['a non-JSON payload (Date)', { kind: 'k', payload: { at: new Date() } }, /payload\.at: a Date is not JSON/],
    ['a non-JSON payload (BigInt)', { kind: 'k', payload: { n: 10n } }, /bigint is not JSON/],
    ['a payload with U+0000', { kind: 'k', payload: { s: 'a\u0000b' } }, /U\+0000/],
    [
      'an oversized payload',
      { kind: 'k', payload: { blob: 'x'.repeat(MAX_PAYLOAD_BYTES) } },
      /bytes of JSON, more than/,
    ],
    [
      'an oversized payload of multi-byte text',
      { kind: 'k', payload: { blob: 'é'.repeat(MAX_PAYLOAD_BYTES / 2) } },
      /bytes of JSON, more than/,
    ],
    [
      'a key with U+0000 deep in a payload',
      { kind: 'k', payload: { list: [1, { ['a\u0000']: 1 }] } },
      /payload\.list\[1\]\.a.*U\+0000/,
    ],
    [
      'a lone surrogate in a payload array',
      { kind: 'k', payload: { list: ['ok', '\ud800'] } },
      /payload\.list\[1\]: contains a lone UTF-16 surrogate/,
    ],
    [
      'undefined in a payload array',
      { kind: 'k', payload: { list: [1, undefined] } },
      /payload\.list\[1\]: a undefined is not JSON/,
    ],
    ['an undefined payload field', { kind: 'k', payload: { a: 1, b: undefined } }, /payload\.b: undefined is not JSON/],
    ['a payload nested deeper than 100 levels', { kind: 'k', payload: nested(101) }, /nested deeper than 100 levels/],
    ['both runAt and delayMs', { kind: 'k', runAt: new Date(), delayMs: 5 }, /runAt or delayMs/],
    ['zero max attempts', { kind: 'k', maxAttempts: 0 }, /maxAttempts/],
  ];
  it.each(cases)('refuses %s with a typed error and writes nothing', async (_name, spec, message) => {
    const before = await count();
    const error = await enqueue(t.db, spec as EnqueueSpec).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LeaseholdInputError);
    expect((error as LeaseholdInputError).message).toMatch(message);
    expect(await count()).toBe(before);
  });

  it('refuses a circular payload', async () => {
    const payload: Record<string, unknown> = {};
    payload.self = payload;
    await expect(enqueue(t.db, { kind: 'k', payload })).rejects.toThrow(/circular/);
  });

  it('refuses a whole bulk call when one job is bad, naming its index, and writes none of it', async () => {
    const queue = uniqueQueue();
    const error = await enqueueMany(t.db, [
      { queue, kind: 'k' },
      { queue, kind: 'k', priority: 1000 },
    ]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LeaseholdInputError);
    expect((error as Error).message).toMatch(/jobs\[1\]\.priority/);
    expect(await count(sql`queue = ${queue}`)).toBe(0);
  });

  it('refuses a second job with the same id, saying to use an idempotency key', async () => {
    const queue = uniqueQueue();
    const { id } = await enqueue(t.db, { queue, kind: 'k' });
    await expect(enqueue(t.db, { id, queue, kind: 'k' })).rejects.toThrow(/already exists/);
    expect(await count(sql`queue = ${queue}`)).toBe(1);
  });

  it('lets the database CHECK refuse what bypasses the API (invariants are not only in code)', async () => {
    await expect(
      run(t.db, sql`INSERT INTO leasehold.jobs (id, kind, state) VALUES (gen_random_uuid(), 'k', 'running')`),
    ).rejects.toThrow(/jobs_lease_check/);
    await expect(
      run(t.db, sql`INSERT INTO leasehold.jobs (id, kind, state) VALUES (gen_random_uuid(), 'k', 'done')`),
    ).rejects.toThrow(/jobs_finished_check/);
    await expect(
      run(t.db, sql`INSERT INTO leasehold.jobs (id, kind, state) VALUES (gen_random_uuid(), 'k', 'lost')`),
    ).rejects.toThrow(/jobs_state_check/);
    await expect(
      run(
        t.db,
        sql`INSERT INTO leasehold.jobs (id, kind, attempts, max_attempts) VALUES (gen_random_uuid(), 'k', 3, 3)`,
      ),
    ).rejects.toThrow(/jobs_attempts_check/);
  });

  // drizzle/0017: checked by the trigger jobs_fixed_columns_check, not a CHECK, so that the
  // claim and the acknowledgement (which never set these columns) do not evaluate them.
  it.each([
    ['jobs_names_check', `queue`, `'${'q'.repeat(129)}'`],
    ['jobs_queue_pattern_check', `queue`, `E'red\\nteam'`],
    ['jobs_kind_pattern_check', `kind`, `'<b>kind</b>'`],
    ['jobs_kind_version_check', `kind_version`, `0`],
    ['jobs_priority_check', `priority`, `101`],
    ['jobs_max_attempts_check', `max_attempts`, `1001`],
    ['jobs_payload_text_check', `payload`, `jsonb_build_object('blob', repeat('x', 400000))`],
  ])(
    'refuses a fixed column out of bounds, on INSERT and on an UPDATE that sets it, naming %s with SQLSTATE 23514',
    async (constraint, column, value) => {
      const queue = uniqueQueue();
      // Plain SQL from outside the library, as a producer's own statement would be.
      const refusal = async (text: string) => {
        const error = (await t.pool.query(text).catch((e: unknown) => e)) as pg.DatabaseError;
        return { code: error.code, constraint: error.constraint, message: error.message };
      };
      const row: Record<string, string> = { queue: `'${queue}'`, kind: `'k'`, [column]: value };
      const inserted = await refusal(
        `INSERT INTO leasehold.jobs (id, ${Object.keys(row).join(', ')}) VALUES (gen_random_uuid(), ${Object.values(row).join(', ')})`,
      );
      expect(inserted).toMatchObject({ code: '23514', constraint });
      expect(inserted.message).toMatch(new RegExp(`violates check constraint "${constraint}"`));
      expect(await count(sql`queue = ${queue}`)).toBe(0);

      const { id } = await enqueue(t.db, { queue, kind: 'k' });
      const updated = await refusal(`UPDATE leasehold.jobs SET ${column} = ${value} WHERE id = '${id}'`);
      expect(updated).toMatchObject({ code: '23514', constraint });
      const job = await getJob(t.db, id);
      expect({ queue: job.queue, kind: job.kind, priority: job.priority }).toEqual({ queue, kind: 'k', priority: 0 });
    },
  );

  it('lets an UPDATE that sets none of the fixed columns through, and one that sets them within bounds', async () => {
    const queue = uniqueQueue();
    const { id } = await enqueue(t.db, { queue, kind: 'k' });
    await run(
      t.db,
      sql`UPDATE leasehold.jobs SET priority = 100, max_attempts = 1000, kind_version = 2 WHERE id = ${id}`,
    );
    await run(t.db, sql`UPDATE leasehold.jobs SET run_at = run_at + interval '1 hour' WHERE id = ${id}`);
    const job = await getJob(t.db, id);
    expect({ priority: job.priority, maxAttempts: job.maxAttempts }).toEqual({ priority: 100, maxAttempts: 1000 });
  });
});

describe('bulk enqueue', () => {
  it('stores each payload of a bulk call as given, with or without keys: quotes, backslashes, commas, braces, unicode, arrays, scalars', async () => {
    const queue = uniqueQueue();
    const payloads: unknown[] = [
      { text: 'say "hi", then \\ leave {now}' },
      ['a', 1, null, { nested: [true, false] }],
      'a bare string, with "quotes"',
      42,
      null,
      { emoji: '😀', accents: 'éàü', cjk: '漢字', escapes: '\n\t' },
      {},
    ];
    for (const withKeys of [false, true]) {
      const results = await enqueueMany(
        t.db,
        payloads.map((payload, i) => ({
          queue,
          kind: 'k',
          payload,
          ...(withKeys ? { idempotencyKey: `${queue}:${i}` } : {}),
        })),
      );
      const stored = await run<{ id: string; payload: unknown }>(
        t.db,
        sql`SELECT id, payload FROM leasehold.jobs WHERE id = ANY(${sql.param(results.map((r) => r.id))}::uuid[])`,
      );
      const byId = new Map(stored.map((r) => [r.id, r.payload]));
      expect(results.map((r) => byId.get(r.id))).toEqual(payloads);
    }
  });

  it("stores each job's own settings in a bulk call, whether the jobs share a setting or not", async () => {
    const [q1, q2] = [uniqueQueue(), uniqueQueue()];
    const runAt = new Date(Date.now() + 60_000);
    const mixed = [
      { queue: q1, kind: 'a', payload: { n: 1 } },
      {
        queue: q2,
        kind: 'b',
        kindVersion: 2,
        priority: 7,
        delayMs: 90_000,
        maxAttempts: 3,
        maxAgeSeconds: 600,
        traceId: 't-1',
      },
      { queue: q1, kind: 'a', priority: 2, runAt, maxAttempts: 9, idempotencyKey: `mixed-${q1}` },
    ];
    // Every setting shared, none the default.
    const shared = Array.from({ length: 3 }, (_, n) => ({
      queue: q2,
      kind: 'c',
      kindVersion: 4,
      priority: 5,
      runAt,
      maxAttempts: 2,
      maxAgeSeconds: 60,
      traceId: 'same',
      payload: { n },
    }));
    for (const specs of [mixed, shared]) {
      const results = await enqueueMany(t.db, specs);
      for (const [i, spec] of specs.entries()) {
        const job = (await getJob(t.db, results[i]!.id))!;
        expect(job).toMatchObject({
          queue: spec.queue,
          kind: spec.kind,
          kindVersion: spec.kindVersion ?? 1,
          priority: spec.priority ?? 0,
          maxAttempts: spec.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
          traceId: spec.traceId ?? job.id.replaceAll('-', ''),
          payload: spec.payload ?? {},
        });
        if (spec.runAt) expect(job.runAt.getTime()).toBe(spec.runAt.getTime());
        const delayMs = 'delayMs' in spec ? spec.delayMs : 0;
        if (!spec.runAt) expect(job.runAt.getTime() - job.createdAt.getTime()).toBeCloseTo(delayMs ?? 0, -2);
        if (spec.maxAgeSeconds)
          expect(job.expiresAt!.getTime() - job.createdAt.getTime()).toBeCloseTo(spec.maxAgeSeconds * 1000, -2);
        else expect(job.expiresAt).toBeNull();
      }
    }
  });

  it('writes 10,000 jobs in one call, in input order', async () => {
    const queue = uniqueQueue();
    const results = await enqueueMany(
      t.db,
      Array.from({ length: 10_000 }, (_, i) => ({ queue, kind: 'k', payload: { i } })),
    );
    expect(results).toHaveLength(10_000);
    expect(results.every((r) => r.created)).toBe(true);
    expect(await count(sql`queue = ${queue}`)).toBe(10_000);
    const [first] = await run<{ payload: { i: number } }>(
      t.db,
      sql`SELECT payload FROM leasehold.jobs WHERE id = ${results[0]!.id}::uuid`,
    );
    expect(first!.payload).toEqual({ i: 0 });
    expect((await allJobs(t.db)).length).toBeGreaterThanOrEqual(10_000);
  });
});

describe('bulk enqueue in parts (more than BULK_CHUNK jobs without keys, through a pool)', () => {
  const total = 2 * BULK_CHUNK + 5_000;
  const specsFor = (queue: string) => Array.from({ length: total }, (_, i) => ({ queue, kind: 'k', payload: { i } }));
  const storedInOrder = async (queue: string) =>
    (
      await run<{ id: string }>(
        t.db,
        sql`SELECT id FROM leasehold.jobs WHERE queue = ${queue} ORDER BY (payload->>'i')::int`,
      )
    ).map((r) => r.id);
  /** Counts the bulk INSERT statements sent through a pool's connections. */
  const countInserts = (pool: pg.Pool) => {
    const counter = { inserts: 0 };
    pool.on('connect', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as { query: unknown }).query = (...args: unknown[]) => {
        const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string } | null)?.text;
        if (text?.includes('WITH input AS')) counter.inserts += 1;
        return query(...args);
      };
    });
    return counter;
  };

  it('writes every job once, in input order, in parts through a pool and a Drizzle database, as one statement on a client', async () => {
    const pool = new pg.Pool({ connectionString: t.url, max: 2 });
    const drizzleDb = createDb(t.url, { max: 2 });
    const client = new pg.Client({ connectionString: t.url });
    await client.connect();
    try {
      const executors = [
        { executor: pool as Executor, counter: countInserts(pool), statements: 3 },
        { executor: drizzleDb.db as Executor, counter: countInserts(drizzleDb.pool), statements: 3 },
        { executor: client as Executor, counter: null, statements: 1 },
      ];
      for (const { executor, counter, statements } of executors) {
        const queue = uniqueQueue();
        const results = await enqueueMany(executor, specsFor(queue));
        expect(results.every((r) => r.created)).toBe(true);
        expect(await storedInOrder(queue)).toEqual(results.map((r) => r.id));
        if (counter) expect(counter.inserts).toBe(statements);
      }
      expect(client.getTransactionStatus()).toBe('I');
    } finally {
      await client.end();
      await drizzleDb.close();
      await pool.end();
    }
  });

  it('refuses the whole call when a job in a later part is bad, naming its index, writes none of it and keeps the connection', async () => {
    const pool = new pg.Pool({ connectionString: t.url, max: 1 });
    const counter = countInserts(pool);
    try {
      const pid = async () => (await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      const before = await pid();
      for (const executor of [pool, t.db]) {
        const queue = uniqueQueue();
        const specs = specsFor(queue);
        specs[total - 10] = { queue, kind: '', payload: { i: total - 10 } };
        const error = await enqueueMany(executor, specs).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(LeaseholdInputError);
        expect(String((error as Error).message)).toContain(`jobs[${total - 10}].kind`);
        expect(await count(sql`queue = ${queue}`)).toBe(0);
      }
      expect(counter.inserts).toBe(2); // two parts written through the pool, then rolled back
      // The same connection serves the next statement: rolled back, not left in a failed
      // transaction, and not closed for a refused job.
      expect(await pid()).toBe(before);
    } finally {
      await pool.end();
    }
  });

  it('rolls back the parts already written when the database refuses a later one (an id that exists)', async () => {
    const queue = uniqueQueue();
    const { id } = await enqueue(t.db, { queue: uniqueQueue(), kind: 'k' });
    const specs: EnqueueSpec[] = specsFor(queue);
    specs[BULK_CHUNK + 1] = { ...specs[BULK_CHUNK + 1]!, id };
    await expect(enqueueMany(t.db, specs)).rejects.toThrow(/a job with this id already exists/);
    expect(await count(sql`queue = ${queue}`)).toBe(0);
  });

  it("inside the caller's transaction goes as one statement, so a refused call leaves nothing in it", async () => {
    const queue = uniqueQueue();
    const specs = specsFor(queue);
    specs[total - 1] = { queue, kind: '', payload: { i: total - 1 } };
    await t.db.transaction(async (tx) => {
      await expect(enqueueMany(tx, specs)).rejects.toBeInstanceOf(LeaseholdInputError);
      await enqueue(tx, { queue, kind: 'k', payload: { i: -1 } });
    });
    expect(await count(sql`queue = ${queue}`)).toBe(1);
  });
});

describe('payload size', () => {
  it('stores a payload just under the limit even when jsonb is larger than its JSON text', async () => {
    const queue = uniqueQueue();
    // 100,000 small numbers: about 200 KB of JSON, several times that as jsonb.
    const payload = { values: Array.from({ length: 100_000 }, () => 0) };
    const result = await enqueue(t.db, { queue, kind: 'k', payload });
    expect(result.created).toBe(true);
  });
});

describe('idempotency keys across transactions', () => {
  it('two bulk enqueues taking the same keys in opposite orders do not deadlock', async () => {
    const queue = uniqueQueue();
    const keys = Array.from({ length: 500 }, (_, i) => `dl-${queue}-${String(i).padStart(3, '0')}`);
    const a = new pg.Client({ connectionString: t.url });
    const b = new pg.Client({ connectionString: t.url });
    await Promise.all([a.connect(), b.connect()]);
    try {
      await Promise.all([a.query('BEGIN'), b.query('BEGIN')]);
      const inOrder = (client: pg.Client, order: string[]) =>
        enqueueMany(
          client,
          order.map((idempotencyKey) => ({ queue, kind: 'k', idempotencyKey })),
        ).then(async (r) => {
          await client.query('COMMIT');
          return r;
        });
      const settled = await Promise.allSettled([inOrder(a, keys), inOrder(b, [...keys].reverse())]);
      const errors = settled
        .filter((s) => s.status === 'rejected')
        .map((s) => String((s as PromiseRejectedResult).reason));
      expect(errors).toEqual([]);
    } finally {
      await Promise.all([a.end(), b.end()]);
    }
    expect(await count(sql`queue = ${queue}`)).toBe(500);
  });
});

describe('wake-ups', () => {
  // One LISTEN connection for the block, keeping each notification's arrival time; each test
  // looks only at its own queue.
  const heard: { queue: string; at: number }[] = [];
  let listener: pg.Client;
  beforeAll(async () => {
    listener = new pg.Client({ connectionString: t.url });
    await listener.connect();
    listener.on('notification', (m) => heard.push({ queue: m.payload ?? '', at: performance.now() }));
    await listener.query(`LISTEN ${WAKE_CHANNEL}`);
  });
  afterAll(() => listener.end());
  const heardFor = (queue: string) => heard.filter((h) => h.queue === queue);
  const settle = () => new Promise((r) => setTimeout(r, WAKE_DEBOUNCE_MS * 4 + 50));

  it('a transaction wakes its queue at commit, once however many jobs it adds', async () => {
    const queue = uniqueQueue();
    let committedAt = 0;
    await t.db.transaction(async (tx) => {
      for (let i = 0; i < 5; i++) await enqueue(tx, { queue, kind: 'k' });
      await settle();
      expect(heardFor(queue)).toEqual([]); // nothing before commit
      committedAt = performance.now();
    });
    await settle();
    const heard = heardFor(queue);
    expect(heard).toHaveLength(1);
    expect(heard[0]!.at).toBeGreaterThan(committedAt);
  });

  it('a burst through a pool is debounced, and a wake-up still follows the last commit', async () => {
    const queue = uniqueQueue();
    const started = performance.now();
    let lastReturned = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let i = 0; i < 25; i++) await enqueue(t.db, { queue, kind: 'k' });
        lastReturned = Math.max(lastReturned, performance.now());
      }),
    );
    await settle();
    const heard = heardFor(queue);
    const windows = Math.ceil((lastReturned - started) / WAKE_DEBOUNCE_MS) + 1;
    expect(heard.length).toBeGreaterThan(0);
    expect(heard.length).toBeLessThan(200); // far fewer than one per job…
    expect(heard.length).toBeLessThanOrEqual(2 * windows); // …at most two per window…
    expect(heard.at(-1)!.at).toBeGreaterThanOrEqual(lastReturned); // …and the last after every commit
    expect(await count(sql`queue = ${queue}`)).toBe(200);
  });

  it('a call in parts wakes every queue it added to, including one found only in its first part', async () => {
    const [early, late] = [uniqueQueue(), uniqueQueue()];
    const specs = Array.from({ length: BULK_CHUNK + 10 }, (_, i) => ({ queue: i < 10 ? early : late, kind: 'k' }));
    const pool = new pg.Pool({ connectionString: t.url, max: 1 });
    try {
      await enqueueMany(pool, specs);
    } finally {
      await pool.end();
    }
    for (
      let waited = 0;
      waited < 2_000 && (heardFor(early).length === 0 || heardFor(late).length === 0);
      waited += 20
    ) {
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(heardFor(early).length).toBeGreaterThanOrEqual(1);
    expect(heardFor(late).length).toBeGreaterThanOrEqual(1);
  });

  it('keeps a debounce window per pool, which a Drizzle database over that pool shares', async () => {
    const queue = uniqueQueue();
    const a = createDb(t.url, { max: 1 });
    const b = new pg.Pool({ connectionString: t.url, max: 1 });
    try {
      expect(planWake(a.pool, [queue], true).inStatement).toBe(true); // first in a's window
      expect(planWake(a.db, [queue], true).inStatement).toBe(false); // same pool, same window
      expect(planWake(b, [queue], true).inStatement).toBe(true); // b's window is its own
    } finally {
      await Promise.all([a.close(), b.end()]);
    }
  });

  it('sends nothing with notify: false', async () => {
    const queue = uniqueQueue();
    await enqueue(t.db, { queue, kind: 'k' }, { notify: false });
    await enqueueMany(t.db, [{ queue, kind: 'k' }], { notify: false });
    await settle();
    expect(heardFor(queue)).toEqual([]);
  });
});
