/**
 * advance(): time that the database's guards honour. A job scheduled an hour out is claimed
 * after advance(1 h) and not before, with no sleep; a retry's backoff ends; a lease expires for
 * the reaper; the ready rows, lease rows and rollup stay in step with the jobs.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { LeaseholdInputError } from '../db/queue/errors.ts';
import {
  claim,
  declareSchedules,
  defineJob,
  defineSchedule,
  enqueue,
  reapExpiredLeases,
  runDueSchedules,
} from '../db/queue/index.ts';
import { TransientError } from '../workers/errors.ts';
import type { Handler } from '../workers/handler.ts';
import { advance, SHIFTED_COLUMNS, UNSHIFTED_COLUMNS } from './clock.ts';
import { createTestDatabase, type TestDatabase } from './database.ts';
import { JobNotRunnable, runJob } from './run.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase({ connectionString: inject('serverUrl') });
});
afterAll(() => t?.drop());

let queueCount = 0;
const newQueue = () => `clock-${++queueCount}`;
const HOUR = 3_600_000;

const handler = (kind: string, handle: Handler['handle'], extra: Partial<Handler> = {}): Handler => ({
  kind,
  versions: [1],
  schema: z.unknown(),
  timeoutMs: 5000,
  handle,
  ...extra,
});

async function jobState(id: string) {
  const { rows } = await t.pool.query<{ state: string; attempts: number; failure_class: string | null }>(
    'SELECT state, attempts, failure_class FROM leasehold.jobs WHERE id = $1',
    [id],
  );
  return rows[0];
}

/** The ready rows that are not exactly the ready jobs' (queue, claim_at, run_at, id): none, if in step. */
async function readyRowsOutOfStep(): Promise<number> {
  const { rows } = await t.pool.query<{ n: number }>(`
    SELECT count(*)::int AS n FROM (
      (SELECT queue, claim_at, run_at, id FROM leasehold.ready_jobs
       EXCEPT ALL SELECT queue, claim_at, run_at, id FROM leasehold.jobs WHERE state = 'ready')
      UNION ALL
      (SELECT queue, claim_at, run_at, id FROM leasehold.jobs WHERE state = 'ready'
       EXCEPT ALL SELECT queue, claim_at, run_at, id FROM leasehold.ready_jobs)
    ) d`);
  return rows[0]!.n;
}

describe('advance', () => {
  it('makes a job scheduled an hour out claimable: not before advance(1 h), at once after it', async () => {
    const queue = newQueue();
    const { id } = await enqueue(t.db, { queue, kind: 'report.send', runAt: new Date(Date.now() + HOUR) });
    const options = { queues: [queue], workerId: 'clock-test', limit: 10, leaseSeconds: 30 };
    expect(await claim(t.db, options)).toEqual([]);
    await advance(t.db, HOUR - 60_000);
    expect(await claim(t.db, options)).toEqual([]);
    await advance(t.db, 60_000);
    const claimed = await claim(t.db, options);
    expect(claimed.map((j) => [j.id, j.attempt])).toEqual([[id, 1]]);
    expect(await readyRowsOutOfStep()).toBe(0);
  });

  it('lets runJob run a scheduled job once advanced, and refuses it before, touching nothing', async () => {
    const queue = newQueue();
    const ran: string[] = [];
    const handlers = [handler('report.build', async ({ job }) => void ran.push(job.id))];
    const { id } = await enqueue(t.db, { queue, kind: 'report.build', delayMs: HOUR });
    const refused = await runJob(t.db, handlers, id).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(JobNotRunnable);
    expect((refused as JobNotRunnable).reason).toBe('not_due');
    expect((refused as JobNotRunnable).message).toMatch(/advance\(db, \d+\) first/);
    expect(await jobState(id)).toEqual({ state: 'ready', attempts: 0, failure_class: null });
    await advance(t.db, HOUR);
    expect((await runJob(t.db, handlers, id)).state).toBe('done');
    expect(ran).toEqual([id]);
  });

  it("ends a retry's backoff: the failed job is not claimable until advanced past it", async () => {
    const queue = newQueue();
    let calls = 0;
    const handlers = [
      handler(
        'mail.send',
        async () => {
          calls += 1;
          if (calls === 1) throw new TransientError('provider 503');
        },
        { retry: { baseDelayMs: 10 * 60_000, maxDelayMs: 10 * 60_000 } },
      ),
    ];
    const { id } = await enqueue(t.db, { queue, kind: 'mail.send' });
    const first = await runJob(t.db, handlers, id);
    expect(first).toMatchObject({ outcome: 'failed', failureClass: 'transient', state: 'ready', attempts: 1 });
    // Equal jitter: the backoff is between half and all of the 10-minute step.
    const options = { queues: [queue], workerId: 'clock-test', limit: 1, leaseSeconds: 30 };
    expect(await claim(t.db, options)).toEqual([]);
    await advance(t.db, 4 * 60_000);
    expect(await claim(t.db, options)).toEqual([]);
    await advance(t.db, 6 * 60_000);
    const second = await runJob(t.db, handlers, id);
    expect(second).toMatchObject({ attempt: 2, outcome: 'completed', state: 'done', attempts: 2 });
  });

  it('expires a lease for the reaper: nothing to reap before, the job back to ready after', async () => {
    const queue = newQueue();
    const { id } = await enqueue(t.db, { queue, kind: 'stuck.job' });
    const [job] = await claim(t.db, { queues: [queue], workerId: 'crashed-worker', limit: 1, leaseSeconds: 60 });
    expect(job?.id).toBe(id);
    // The reaper is database-wide: earlier tests' advances expired leases of their own.
    expect((await reapExpiredLeases(t.db)).retried).not.toContain(id);
    await advance(t.db, 59_000);
    expect((await reapExpiredLeases(t.db)).retried).not.toContain(id);
    expect(await jobState(id)).toEqual({ state: 'running', attempts: 1, failure_class: null });
    await advance(t.db, 2_000);
    const reaped = await reapExpiredLeases(t.db);
    expect(reaped.retried).toEqual([id]);
    expect(await jobState(id)).toEqual({ state: 'ready', attempts: 1, failure_class: 'lease_expired' });
    expect(await readyRowsOutOfStep()).toBe(0);
    const { rows } = await t.pool.query('SELECT 1 FROM leasehold.leases WHERE token = $1', [job!.leaseToken]);
    expect(rows).toEqual([]);
  });

  it("ends a job's max age: a failure after it makes the job dead as expired, not retried", async () => {
    const queue = newQueue();
    const handlers = [
      handler('slow.job', async () => {
        throw new TransientError('still failing');
      }),
    ];
    const { id } = await enqueue(t.db, { queue, kind: 'slow.job', maxAgeSeconds: 3600 });
    await advance(t.db, HOUR);
    expect(await runJob(t.db, handlers, id)).toMatchObject({ state: 'dead', job: { failureClass: 'expired' } });
  });

  it('moves the per-minute rollup to earlier whole minutes without colliding with its neighbours', async () => {
    // Two rows a minute apart with the same key: shifting them one by one would collide.
    await t.pool.query(`
      INSERT INTO leasehold.finished_rollup (minute, queue, kind, state, attempts, shard, jobs)
      SELECT date_trunc('minute', now()) - m * interval '1 minute', 'rollup-q', 'k', 'done', 1, 0, 5
      FROM generate_series(0, 1) m`);
    await advance(t.db, 60_000);
    const { rows } = await t.pool.query<{ back: number; jobs: number }>(`
      SELECT (extract(epoch FROM date_trunc('minute', now()) - minute) / 60)::int AS back, jobs
      FROM leasehold.finished_rollup WHERE queue = 'rollup-q' ORDER BY minute DESC`);
    expect(rows).toEqual([
      { back: 1, jobs: 5 },
      { back: 2, jobs: 5 },
    ]);
  });

  it('runs inside the caller’s transaction: rolled back, nothing moved', async () => {
    const queue = newQueue();
    const { id } = await enqueue(t.db, { queue, kind: 'tx.job', delayMs: HOUR });
    const runAt = async () =>
      (await t.pool.query<{ run_at: Date }>('SELECT run_at FROM leasehold.jobs WHERE id = $1', [id])).rows[0]!.run_at;
    const before = await runAt();
    const client = await t.pool.connect();
    try {
      await client.query('BEGIN');
      const moved = await advance(client, HOUR);
      expect(moved.jobs).toBeGreaterThan(0);
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    expect(await runAt()).toEqual(before);
  });

  it('refuses a negative, infinite or missing amount with a sentence naming ms, moving nothing', async () => {
    const { rows: before } = await t.pool.query('SELECT id, run_at FROM leasehold.jobs ORDER BY id');
    for (const ms of [-1, Number.POSITIVE_INFINITY, Number.NaN, undefined]) {
      const error = await advance(t.db, ms as number).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LeaseholdInputError);
      expect((error as Error).message).toMatch(/ms: a number of milliseconds from 0/);
    }
    const { rows: after } = await t.pool.query('SELECT id, run_at FROM leasehold.jobs ORDER BY id');
    expect(after).toEqual(before);
  });

  it("lists every time column of Leasehold's schema as shifted or deliberately not", async () => {
    const { rows } = await t.pool.query<{ table_name: string; column_name: string }>(`
      SELECT c.table_name, c.column_name FROM information_schema.columns c
      JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
      WHERE c.table_schema = 'leasehold' AND t.table_type = 'BASE TABLE'
        AND c.data_type IN ('timestamp with time zone', 'timestamp without time zone', 'date')
      ORDER BY 1, 2`);
    const inCatalog = rows.map((r) => `${r.table_name}.${r.column_name}`);
    const listed = Object.entries({ ...SHIFTED_COLUMNS, ...UNSHIFTED_COLUMNS })
      .flatMap(([table, columns]) => columns.map((c) => `${table}.${c}`))
      .sort();
    expect(inCatalog).toEqual(listed);
  });
});

describe('advance and schedules', () => {
  it("makes the advanced time's ticks due: ten minutes of a minute schedule, the newest run late, the rest missed", async () => {
    const queue = newQueue();
    const job = defineJob({ kind: `tick-${queue}`, version: 1, queue, schema: z.strictObject({}) });
    const name = `advanced-${queue}`;
    await declareSchedules(t.db, [defineSchedule({ name, job, cron: '* * * * *', payload: {}, missed: 'once' })]);
    await runDueSchedules(t.db);
    await advance(t.db, 10 * 60_000);
    const mine = (await runDueSchedules(t.db)).ticks.filter((x) => x.schedule === name);
    expect(mine.filter((x) => x.outcome === 'late')).toHaveLength(1);
    expect(mine.filter((x) => x.outcome === 'missed')).toHaveLength(1);
    const { rows } = await t.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM leasehold.jobs WHERE queue = $1',
      [queue],
    );
    expect(rows[0]!.n).toBe(mine.filter((x) => x.outcome !== 'missed').length);
  });
});
