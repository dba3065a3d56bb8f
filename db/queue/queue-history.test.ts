/**
 * A queue's history (db/queue/queue-history.ts, db/queries/history.ts): the maintenance round,
 * as the worker's role, records a queue's outcomes, failed attempts and live work per minute and
 * folds them per hour; the dashboard's role reads them back per range; old rows go.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type DbHandle } from '../client.ts';
import { HISTORY_RANGES, queueHistory } from '../queries/history.ts';
import { useRoleDatabase, sqlStateOf } from '../../test/roles.ts';
import { MIXED_FIXTURE_COUNTS, mixedFixture, uniqueQueue } from '../../test/factories.ts';
import { recordQueueHistory } from './queue-history.ts';

const r = useRoleDatabase();
let admin: DbHandle;
let worker: DbHandle;
let dashboard: DbHandle;

beforeAll(() => {
  admin = createDb(r.adminUrl, { max: 2 });
  worker = createDb(r.urls.worker, { max: 2 });
  dashboard = createDb(r.urls.dashboard, { max: 2 });
});
afterAll(async () => {
  await Promise.all([admin.close(), worker.close(), dashboard.close()]);
});

const minutesOf = async (queue: string) =>
  (
    await admin.pool.query<{
      done: number;
      dead: number;
      cancelled: number;
      failed_attempts: number;
      ready: number | null;
      retrying: number | null;
      running: number | null;
      lease_expired: number | null;
      oldest_ready_seconds: number | null;
    }>('SELECT * FROM leasehold.queue_minutes WHERE queue = $1 ORDER BY minute', [queue])
  ).rows;

describe('recording a queue’s history', () => {
  it('counts the minute’s outcomes and failed attempts and samples live work, as the worker’s role', async () => {
    const queue = uniqueQueue('history');
    await mixedFixture(admin.db, queue);
    const round = await recordQueueHistory(worker.db);
    expect(round.queuesSampled).toBeGreaterThanOrEqual(1);
    expect(round.minutesCounted).toBeGreaterThanOrEqual(1);
    expect(round.hoursFolded).toBeGreaterThanOrEqual(1);
    const rows = await minutesOf(queue);
    // Everything happened within a second or two: one minute, or two across a minute's edge.
    const sum = (key: 'done' | 'dead' | 'cancelled' | 'failed_attempts') => rows.reduce((n, m) => n + m[key], 0);
    expect({
      done: sum('done'),
      dead: sum('dead'),
      cancelled: sum('cancelled'),
      failed: sum('failed_attempts'),
    }).toEqual({
      done: 1,
      dead: MIXED_FIXTURE_COUNTS.dead,
      cancelled: MIXED_FIXTURE_COUNTS.cancelled,
      // The dead job's and the retrying job's failed attempts; the expired lease was not reaped yet.
      failed: 2,
    });
    const sampled = rows.at(-1)!;
    expect(sampled).toMatchObject({
      ready: MIXED_FIXTURE_COUNTS.ready,
      retrying: MIXED_FIXTURE_COUNTS.retrying,
      running: MIXED_FIXTURE_COUNTS.running,
      lease_expired: MIXED_FIXTURE_COUNTS.leaseExpired,
    });
    expect(sampled.oldest_ready_seconds).toBeGreaterThanOrEqual(0);
  });

  it('recounts instead of adding when a round runs twice', async () => {
    const queue = uniqueQueue('history-twice');
    await mixedFixture(admin.db, queue);
    await recordQueueHistory(worker.db);
    const outcomes = async () =>
      (await minutesOf(queue)).map((m) => [m.done, m.dead, m.cancelled, m.failed_attempts, m.ready, m.retrying]);
    const first = await outcomes();
    expect(first.flat().some((n) => (n ?? 0) > 0)).toBe(true);
    await recordQueueHistory(worker.db);
    expect(await outcomes()).toEqual(first);
  });

  it('gives the dashboard’s role every bucket of a range, with the failure rate', async () => {
    const queue = uniqueQueue('history-read');
    await mixedFixture(admin.db, queue);
    await recordQueueHistory(worker.db);
    for (const [range, shape] of Object.entries(HISTORY_RANGES)) {
      const history = await queueHistory(dashboard.db, range as keyof typeof HISTORY_RANGES, queue);
      expect(history.points).toHaveLength(shape.buckets);
      const steps = history.points.slice(1).map((p, i) => p.at.getTime() - history.points[i]!.at.getTime());
      expect(new Set(steps)).toEqual(new Set([shape.bucketSeconds * 1000]));
      const done = history.points.reduce((n, p) => n + p.done, 0);
      const failed = history.points.reduce((n, p) => n + p.failedAttempts, 0);
      expect({ range, done, failed }).toEqual({ range, done: 1, failed: 2 });
      const last = history.points.findLast((p) => p.failureRate !== null)!;
      expect(last.failureRate).toBeCloseTo(2 / 3, 5);
      expect(history.points.at(-1)!.ready).toBe(MIXED_FIXTURE_COUNTS.ready);
    }
    // Every queue together includes this one's.
    const all = await queueHistory(dashboard.db, '1h');
    expect(all.points.reduce((n, p) => n + p.done, 0)).toBeGreaterThanOrEqual(1);
  });

  it('marks buckets with no sample as unknown, not zero', async () => {
    const queue = uniqueQueue('history-gap');
    await mixedFixture(admin.db, queue);
    await recordQueueHistory(worker.db);
    const history = await queueHistory(dashboard.db, '1h', queue);
    const sampled = history.points.filter((p) => p.ready !== null);
    expect(sampled.length).toBeGreaterThanOrEqual(1);
    expect(history.points[0]!.ready).toBeNull();
    expect(history.points[0]!.done).toBe(0);
  });

  it('keeps the hours when the minutes are gone, and removes hours past 90 days', async () => {
    const queue = uniqueQueue('history-old');
    // What rounds 8 days ago left: a minute with a finished job and its folded hour; and an hour 91 days old.
    await admin.pool.query(
      `INSERT INTO leasehold.queue_minutes (minute, queue, done) VALUES (date_trunc('minute', now() - interval '8 days'), $1, 1);
       INSERT INTO leasehold.queue_hours (hour, queue, done) VALUES
         (date_bin('1 hour', now() - interval '8 days', '2000-01-01 00:00:00+00'), $1, 1),
         (date_bin('1 hour', now() - interval '91 days', '2000-01-01 00:00:00+00'), $1, 5)`.replaceAll(
        '$1',
        `'${queue}'`,
      ),
    );
    const round = await recordQueueHistory(worker.db);
    expect(round.removed).toBeGreaterThanOrEqual(2);
    expect(await minutesOf(queue)).toEqual([]);
    const hours = await admin.pool.query<{ done: number }>('SELECT done FROM leasehold.queue_hours WHERE queue = $1', [
      queue,
    ]);
    expect(hours.rows.map((h) => h.done)).toEqual([1]);
    const quarter = await queueHistory(dashboard.db, '90d', queue);
    expect(quarter.points.reduce((n, p) => n + p.done, 0)).toBe(1);
    expect((await queueHistory(dashboard.db, '7d', queue)).points.reduce((n, p) => n + p.done, 0)).toBe(0);
  });

  it('is written by the maintenance alone: the dashboard’s role may only read', async () => {
    expect(
      await sqlStateOf(
        dashboard.pool.query(
          "INSERT INTO leasehold.queue_minutes (minute, queue, done) VALUES (date_trunc('minute', now()), 'x', 5)",
        ),
      ),
    ).toBe('42501');
  });
});
