import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { claim, completeManyIfLeaseHeld, enqueueMany, failIfLeaseHeld, removeExpiredHistory } from '.';
import { useTestDatabase } from '../../test/db';
import { makeDue, mixedFixture, uniqueQueue } from '../../test/factories';
import { run } from './executor';

const t = useTestDatabase();

const countIn = async (queue: string) =>
  await run<{ state: string; n: number }>(
    t.db,
    sql`SELECT state, count(*)::int AS n FROM leasehold.jobs WHERE queue = ${queue} GROUP BY state ORDER BY state`,
  );

describe('retention', () => {
  it('removes terminal jobs past their state’s age and never touches live ones', async () => {
    const queue = uniqueQueue();
    await mixedFixture(t.db, queue);
    await run(
      t.db,
      sql`UPDATE leasehold.jobs SET finished_at = now() - interval '30 days', created_at = now() - interval '30 days' - interval '1 minute' WHERE queue = ${queue} AND finished_at IS NOT NULL`,
    );
    const result = await removeExpiredHistory(t.db, {
      doneAfterSeconds: 86400,
      deadAfterSeconds: 40 * 86400, // dead jobs are kept longer: only done and cancelled go
      cancelledAfterSeconds: 86400,
    });
    expect(result.jobs).toBe(2);
    expect(await countIn(queue)).toEqual([
      { state: 'dead', n: 1 },
      { state: 'ready', n: 3 },
      { state: 'running', n: 2 },
    ]);
  });

  it('works in bounded batches', async () => {
    // Other files' and tests' old rows must not count here: keep every other state.
    const keepOthers = { deadAfterSeconds: 10 ** 9, cancelledAfterSeconds: 10 ** 9 };
    const queue = uniqueQueue();
    await enqueueMany(
      t.db,
      Array.from({ length: 25 }, () => ({ queue, kind: 'k' })),
    );
    await completeManyIfLeaseHeld(t.db, await claim(t.db, { queues: [queue], workerId: 'w', limit: 25 }));
    await run(
      t.db,
      sql`UPDATE leasehold.jobs SET finished_at = now() - interval '2 days', created_at = now() - interval '2 days' - interval '1 minute' WHERE queue = ${queue}`,
    );
    const batches: number[] = [];
    for (;;) {
      const { jobs } = await removeExpiredHistory(t.db, { limit: 10, doneAfterSeconds: 86400, ...keepOthers });
      batches.push(jobs);
      if (jobs < 10) break;
    }
    expect(batches).toEqual([10, 10, 5]);
  });

  it('drops attempt history and expired idempotency keys on their own windows', async () => {
    const queue = uniqueQueue();
    const [created] = await enqueueMany(t.db, [
      { queue, kind: 'k', idempotencyKey: `ret-${queue}`, dedupeWindowSeconds: 1 },
    ]);
    // One failed attempt (an attempt row), then the completing one (recorded on the job row).
    const [first] = await claim(t.db, { queues: [queue], workerId: 'w' });
    await failIfLeaseHeld(t.db, first!, { error: 'flaky', failureClass: 'transient' });
    await makeDue(t.db, created!.id);
    await completeManyIfLeaseHeld(t.db, await claim(t.db, { queues: [queue], workerId: 'w' }));
    await run(
      t.db,
      sql`UPDATE leasehold.job_attempts SET ended_at = now() - interval '30 days' WHERE queue = ${queue}`,
    );
    await run(
      t.db,
      sql`UPDATE leasehold.dedupe_keys SET expires_at = now() - interval '1 second' WHERE key = ${`ret-${queue}`}`,
    );

    // The job still exists: its key must keep deduplicating.
    const removed = await removeExpiredHistory(t.db, { doneAfterSeconds: 86400 });
    expect(removed.attempts).toBeGreaterThanOrEqual(1);
    expect(await run(t.db, sql`SELECT 1 FROM leasehold.dedupe_keys WHERE key = ${`ret-${queue}`}`)).toHaveLength(1);

    await run(
      t.db,
      sql`UPDATE leasehold.jobs SET finished_at = now() - interval '2 days', created_at = now() - interval '2 days' - interval '1 minute' WHERE queue = ${queue}`,
    );
    await removeExpiredHistory(t.db, { doneAfterSeconds: 86400 });
    await removeExpiredHistory(t.db, { doneAfterSeconds: 86400 });
    expect(await run(t.db, sql`SELECT 1 FROM leasehold.dedupe_keys WHERE key = ${`ret-${queue}`}`)).toHaveLength(0);
  });
});
