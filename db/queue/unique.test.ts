/**
 * Uniqueness keys (docs/jobs.md, "Uniqueness"): every cell of the semantics table, on real
 * PostgreSQL, through enqueue and enqueueMany (leasehold.enqueue() in db/surface.test.ts).
 */
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  claim,
  completeIfLeaseHeld,
  completeManyIfLeaseHeld,
  enqueue,
  enqueueMany,
  failIfLeaseHeld,
  LeaseholdInputError,
  retryIfTerminal,
} from '.';
import type { EnqueueSpec } from './enqueue-spec.ts';
import { useTestDatabase } from '../../test/db.ts';
import { claimOne, getJob, uniqueQueue } from '../../test/factories.ts';
import { run } from './executor.ts';
import { removeExpiredHistory } from './retention.ts';

const t = useTestDatabase({ max: 40 });

let n = 0;
const key = () => `unique-test:${process.pid}:${++n}`;

const jobsOf = async (uniqueKey: string) =>
  run<{ id: string; state: string; payload: unknown }>(
    t.db,
    sql`SELECT id, state, payload FROM leasehold.jobs WHERE options->>'uniqueKey' = ${uniqueKey} ORDER BY id`,
  );

const spec = (queue: string, unique: EnqueueSpec['unique'], payload: unknown = {}): EnqueueSpec => ({
  queue,
  kind: 'unique.test',
  payload,
  unique,
});

describe('a second enqueue while the holder is in a state named', () => {
  it('returns the waiting holder (ready) and creates nothing', async () => {
    const queue = uniqueQueue();
    const k = key();
    const first = await enqueue(t.db, spec(queue, { key: k }, { v: 1 }));
    const second = await enqueue(t.db, spec(queue, { key: k }, { v: 2 }));
    expect(first).toMatchObject({ created: true, unique: 'created' });
    expect(second).toMatchObject({ id: first.id, created: false, unique: 'kept' });
    expect(second.job).toMatchObject({ id: first.id, payload: { v: 1 }, uniqueKey: k });
    expect(await jobsOf(k)).toHaveLength(1);
  });

  it('returns a scheduled holder while scheduled is named, and makes a new job while only ready is', async () => {
    const queue = uniqueQueue();
    const k = key();
    const first = await enqueue(t.db, { ...spec(queue, { key: k, while: ['scheduled'] }), delayMs: 60_000 });
    const again = await enqueue(t.db, spec(queue, { key: k, while: ['scheduled'] }));
    expect(again).toMatchObject({ id: first.id, created: false });
    const other = await enqueue(t.db, spec(queue, { key: k, while: ['ready'] }));
    expect(other.created).toBe(true);
    expect(other.id).not.toBe(first.id);
  });

  it('returns a retrying holder (waiting after a failure) only while retrying is named', async () => {
    const queue = uniqueQueue();
    const k = key();
    const first = await enqueue(t.db, spec(queue, { key: k, while: ['retrying'] }));
    const claimed = await claimOne(t.db, queue);
    const failed = await failIfLeaseHeld(t.db, claimed, { error: 'boom', failureClass: 'transient' });
    expect(failed).toMatchObject({ applied: true, state: 'ready' });
    expect(await enqueue(t.db, spec(queue, { key: k, while: ['retrying'] }))).toMatchObject({
      id: first.id,
      created: false,
    });
    const other = await enqueue(t.db, spec(queue, { key: k, while: ['ready', 'scheduled'] }));
    expect(other.created).toBe(true);
  });

  it('returns a running holder unchanged, in every mode, while running is named', async () => {
    const queue = uniqueQueue();
    const k = key();
    const first = await enqueue(t.db, spec(queue, { key: k }, { v: 1 }));
    const claimed = await claimOne(t.db, queue);
    expect(claimed.id).toBe(first.id);
    const replaced = await enqueue(t.db, spec(queue, { key: k, onConflict: 'replace' }, { v: 2 }));
    const debounced = await enqueue(t.db, spec(queue, { key: k, onConflict: 'debounce', debounceMs: 5_000 }));
    expect(replaced).toMatchObject({ id: first.id, created: false, unique: 'kept' });
    expect(debounced).toMatchObject({ id: first.id, created: false, unique: 'kept' });
    expect(await getJob(t.db, first.id)).toMatchObject({ state: 'running', payload: { v: 1 } });
    // Not named: a running holder does not stop a new job.
    const other = await enqueue(t.db, spec(queue, { key: k, while: ['ready', 'scheduled', 'retrying'] }));
    expect(other.created).toBe(true);
  });

  it('makes a new job once the holder ended', async () => {
    const queue = uniqueQueue();
    const k = key();
    const first = await enqueue(t.db, spec(queue, { key: k }));
    const claimed = await claimOne(t.db, queue);
    expect(await completeIfLeaseHeld(t.db, claimed)).toEqual({ applied: true });
    const next = await enqueue(t.db, spec(queue, { key: k }));
    expect(next).toMatchObject({ created: true });
    expect(next.id).not.toBe(first.id);
    const held = await run<{ job_id: string }>(t.db, sql`SELECT job_id FROM leasehold.unique_keys WHERE key = ${k}`);
    expect(held[0]?.job_id).toBe(next.id);
  });
});

describe('retention', () => {
  it('removes a key with its ended holder, and leaves a key handed on to a newer job', async () => {
    const queue = uniqueQueue();
    const [gone, handedOn] = [key(), key()];
    for (const k of [gone, handedOn]) {
      await enqueue(t.db, spec(queue, { key: k }));
      await completeManyIfLeaseHeld(t.db, [await claimOne(t.db, queue)]);
    }
    const newer = await enqueue(t.db, spec(queue, { key: handedOn }));
    await run(
      t.db,
      sql`UPDATE leasehold.jobs SET finished_at = finished_at - interval '30 days',
                          created_at = created_at - interval '30 days' WHERE queue = ${queue} AND state = 'done'`,
    );
    const removed = await removeExpiredHistory(t.db, { doneAfterSeconds: 3600 });
    expect(removed.jobs).toBeGreaterThanOrEqual(2);
    const keys = await run<{ key: string; job_id: string }>(
      t.db,
      sql`SELECT key, job_id FROM leasehold.unique_keys WHERE key IN (${gone}, ${handedOn})`,
    );
    expect(keys).toEqual([{ key: handedOn, job_id: newer.id }]);
  });
});

describe('onConflict', () => {
  it('replace gives the waiting holder the new payload and run time', async () => {
    const queue = uniqueQueue();
    const k = key();
    const first = await enqueue(t.db, {
      ...spec(queue, { key: k, onConflict: 'replace' }, { v: 1 }),
      delayMs: 3_600_000,
    });
    const runAt = new Date(Date.now() + 120_000);
    const second = await enqueue(t.db, { ...spec(queue, { key: k, onConflict: 'replace' }, { v: 2 }), runAt });
    expect(second).toMatchObject({ id: first.id, created: false, unique: 'replaced' });
    const job = await getJob(t.db, first.id);
    expect(job.payload).toEqual({ v: 2 });
    expect(job.runAt.getTime()).toBe(runAt.getTime());
    // Its ready row moved with it: the claim does not take it before its new run time.
    expect(await claim(t.db, { queues: [queue], workerId: 'w', limit: 5 })).toEqual([]);
  });

  it('debounce turns a burst of 1,000 enqueues into one job that runs a window after the last', async () => {
    const queue = uniqueQueue();
    const k = key();
    const burst = { key: k, onConflict: 'debounce' as const, debounceMs: 2_000 };
    const started = Date.now();
    const results = [];
    for (let i = 0; i < 1000; i++) results.push(await enqueue(t.db, spec(queue, burst, { i })));
    const lastAt = Date.now();
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(results.filter((r) => r.unique === 'debounced')).toHaveLength(999);
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    const [job] = await jobsOf(k);
    expect(job?.payload).toEqual({ i: 0 }); // debounce keeps the first payload
    const stored = await getJob(t.db, results[0]!.id);
    // Pushed by each enqueue: at least the window after the burst's last call began.
    expect(stored.runAt.getTime()).toBeGreaterThan(started + 2_000);
    expect(stored.runAt.getTime()).toBeLessThanOrEqual(lastAt + 2_000 + 1_000);
    const counted = await run<{ debounced: number }>(
      t.db,
      sql`SELECT debounced::int FROM leasehold.unique_keys WHERE key = ${k}`,
    );
    expect(counted[0]?.debounced).toBe(999);
  });

  for (const mode of ['keep', 'replace', 'debounce'] as const) {
    it(`32 concurrent enqueues of one key (${mode}) make one job and answer all with it`, async () => {
      const queue = uniqueQueue();
      const k = key();
      const unique =
        mode === 'debounce' ? { key: k, onConflict: mode, debounceMs: 1_000 } : { key: k, onConflict: mode };
      const clients = await Promise.all(
        Array.from({ length: 32 }, async () => {
          const client = new pg.Client({ connectionString: t.url });
          await client.connect();
          return client;
        }),
      );
      try {
        const results = await Promise.all(clients.map((c, i) => enqueue(c, spec(queue, unique, { i }))));
        const ids = new Set(results.map((r) => r.id));
        expect(ids.size).toBe(1);
        expect(results.filter((r) => r.created)).toHaveLength(1);
        const jobs = await jobsOf(k);
        expect(jobs).toHaveLength(1);
        expect(jobs[0]?.id).toBe([...ids][0]);
        if (mode === 'replace') expect(results.filter((r) => r.unique === 'replaced')).toHaveLength(31);
      } finally {
        await Promise.all(clients.map((c) => c.end()));
      }
    });
  }
});

describe('enqueueMany', () => {
  it('resolves repeats of a key within the call against its first job, and later keys against holders', async () => {
    const queue = uniqueQueue();
    const [a, b] = [key(), key()];
    const held = await enqueue(t.db, spec(queue, { key: b }, { held: true }));
    const results = await enqueueMany(t.db, [
      spec(queue, { key: a }, { n: 1 }),
      spec(queue, { key: a, onConflict: 'replace' }, { n: 2 }),
      spec(queue, { key: b }, { n: 3 }),
      { queue, kind: 'unique.test', payload: { plain: true } },
    ]);
    expect(results[0]).toMatchObject({ created: true });
    expect(results[1]).toEqual({ id: results[0]!.id, created: false });
    expect(results[2]).toEqual({ id: held.id, created: false });
    expect(results[3]).toMatchObject({ created: true });
    expect((await getJob(t.db, results[0]!.id)).payload).toEqual({ n: 2 });
    expect(await jobsOf(a)).toHaveLength(1);
  });
});

describe('a retry of a dead job', () => {
  it('is refused while another job holds its key, and takes the key back once that one ended', async () => {
    const queue = uniqueQueue();
    const k = key();
    const first = await enqueue(t.db, { ...spec(queue, { key: k }), maxAttempts: 1 });
    const claimed = await claimOne(t.db, queue);
    expect(await failIfLeaseHeld(t.db, claimed, { error: 'no', failureClass: 'permanent' })).toMatchObject({
      state: 'dead',
    });
    const second = await enqueue(t.db, spec(queue, { key: k }));
    expect(second.created).toBe(true);
    const refused = await retryIfTerminal(t.db, { id: first.id, actor: 'test' });
    expect(refused).toMatchObject({ applied: false, reason: 'unique_key_held' });
    expect((await getJob(t.db, first.id)).state).toBe('dead');
    const running = await claimOne(t.db, queue);
    await completeManyIfLeaseHeld(t.db, [running]);
    expect(await retryIfTerminal(t.db, { id: first.id, actor: 'test' })).toMatchObject({ applied: true });
    const holder = await run<{ job_id: string }>(t.db, sql`SELECT job_id FROM leasehold.unique_keys WHERE key = ${k}`);
    expect(holder[0]?.job_id).toBe(first.id);
    expect(await enqueue(t.db, spec(queue, { key: k }))).toMatchObject({ id: first.id, created: false });
  });
});

describe('bad input', () => {
  const cases: [string, unknown, RegExp][] = [
    ['a key over 512 characters', { key: 'k'.repeat(513) }, /unique\.key/],
    ['an empty while', { key: 'k', while: [] }, /unique\.while/],
    ['an unknown state', { key: 'k', while: ['waiting'] }, /unique\.while/],
    ['an unknown mode', { key: 'k', onConflict: 'merge' }, /unique\.onConflict/],
    ['a debounce of 0', { key: 'k', onConflict: 'debounce', debounceMs: 0 }, /unique\.debounceMs/],
    ['a debounce without its mode', { key: 'k', debounceMs: 10 }, /debounceMs/],
  ];
  for (const [name, unique, says] of cases) {
    it(`refuses ${name} at the call, writing nothing and leaving the transaction usable`, async () => {
      const queue = uniqueQueue();
      const client = await t.pool.connect();
      try {
        await client.query('BEGIN');
        // As a caller without types would pass it.
        const bad: EnqueueSpec = JSON.parse(JSON.stringify({ queue, kind: 'unique.test', unique }));
        await expect(enqueue(client, bad)).rejects.toBeInstanceOf(LeaseholdInputError);
        await expect(enqueue(client, bad)).rejects.toThrow(says);
        // Not poisoned: the transaction goes on.
        const ok = await enqueue(client, { queue, kind: 'unique.test' });
        await client.query('COMMIT');
        const rows = await run<{ n: number }>(
          t.db,
          sql`SELECT count(*)::int AS n FROM leasehold.jobs WHERE queue = ${queue}`,
        );
        expect(rows[0]?.n).toBe(1);
        expect(ok.created).toBe(true);
      } finally {
        client.release();
      }
    });
  }

  it('refuses a uniqueness key beside an idempotency key', async () => {
    await expect(enqueue(t.db, { kind: 'unique.test', idempotencyKey: 'i', unique: { key: 'u' } })).rejects.toThrow(
      /idempotencyKey or unique/,
    );
  });
});

describe('a caller transaction that replaced a job and stays open', () => {
  let other: pg.Client;
  beforeAll(async () => {
    other = new pg.Client({ connectionString: t.url });
    await other.connect();
  });
  afterAll(() => other.end());

  it('holds no claim or acknowledgement of other jobs back for 10 s', { timeout: 30_000 }, async () => {
    const queue = uniqueQueue();
    const k = key();
    await enqueue(t.db, spec(queue, { key: k, onConflict: 'replace' }, { v: 1 }));
    await other.query('BEGIN');
    const replaced = await enqueue(other, spec(queue, { key: k, onConflict: 'replace' }, { v: 2 }));
    expect(replaced.unique).toBe('replaced');
    const until = Date.now() + 10_000;
    const slowest: number[] = [];
    let settled = 0;
    try {
      while (Date.now() < until) {
        await enqueue(t.db, { queue, kind: 'unique.test', payload: { plain: settled } });
        const began = performance.now();
        const taken = await claim(t.db, { queues: [queue], workerId: 'w', limit: 10 });
        const outcome = await completeManyIfLeaseHeld(t.db, taken);
        slowest.push(performance.now() - began);
        settled += taken.length;
        expect(outcome.filter((o) => o.applied)).toHaveLength(taken.length);
        // The replaced job is locked by the open transaction: never claimed meanwhile.
        expect(taken.some((job) => JSON.stringify(job.payload).includes('"v"'))).toBe(false);
      }
    } finally {
      await other.query('COMMIT');
    }
    expect(settled).toBeGreaterThan(20);
    expect(Math.max(...slowest)).toBeLessThan(1_000);
  });
});
