import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import {
  claim,
  completeManyIfLeaseHeld,
  enqueue,
  enqueueMany,
  failIfLeaseHeld,
  recordReceipt,
  removeExpiredHistory,
  removeOldAudit,
  removeOldReceipts,
} from '.';
import { jobListSchema, listJobs } from '../queries/jobs.ts';
import { attemptHistory } from './history.ts';
import { newJobId } from './ids.ts';
import { useTestDatabase } from '../../test/db.ts';
import { makeDue, mixedFixture, uniqueQueue } from '../../test/factories.ts';
import { run } from './executor.ts';

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

  describe('when the application reuses a job id after retention (security review B6)', () => {
    /** Enqueues, fails once (an attempt row), completes, and ages the job past retention. */
    async function finishedAndOld(queue: string, id: string, idempotencyKey?: string) {
      await enqueue(t.db, { id, queue, kind: 'k', ...(idempotencyKey ? { idempotencyKey } : {}) });
      await failIfLeaseHeld(t.db, (await claim(t.db, { queues: [queue], workerId: 'w' }))[0]!, {
        error: 'flaky',
        failureClass: 'transient',
      });
      await makeDue(t.db, id);
      await completeManyIfLeaseHeld(t.db, await claim(t.db, { queues: [queue], workerId: 'w' }));
      await run(
        t.db,
        sql`UPDATE leasehold.jobs SET finished_at = now() - interval '2 days', created_at = now() - interval '2 days'
            WHERE id = ${id}::uuid`,
      );
    }

    it("keeps the new job's attempt history when the old job's expires", async () => {
      const queue = uniqueQueue('reuse-attempts');
      const id = newJobId();
      await finishedAndOld(queue, id);
      // The old job goes; its attempt rows stay on their own (longer) window.
      expect(
        (await removeExpiredHistory(t.db, { doneAfterSeconds: 86400, attemptsAfterSeconds: 30 * 86400 })).jobs,
      ).toBe(1);
      // The same id again: its first attempt fails too, with the same attempt number.
      await enqueue(t.db, { id, queue, kind: 'k' });
      const [fresh] = await claim(t.db, { queues: [queue], workerId: 'w' });
      expect(fresh!.attempt).toBe(1);
      await failIfLeaseHeld(t.db, fresh!, { error: 'again', failureClass: 'transient' });
      // Only the old job's attempt row is past its window.
      await run(
        t.db,
        sql`UPDATE leasehold.job_attempts SET ended_at = now() - interval '30 days' WHERE job_id = ${id}::uuid AND error = 'flaky'`,
      );
      const removed = await removeExpiredHistory(t.db, { attemptsAfterSeconds: 14 * 86400 });
      expect(removed.attempts).toBe(1);
      const left = await attemptHistory(t.db, id);
      expect(left.map((a) => [a.attempt, a.error])).toEqual([[1, 'again']]);
    });

    it('resolves an idempotency key to its own job only, never to a newer job with the id', async () => {
      const queue = uniqueQueue('reuse-key');
      const id = newJobId();
      const key = `reuse-${queue}`;
      await finishedAndOld(queue, id, key);
      await removeExpiredHistory(t.db, { doneAfterSeconds: 86400 });
      // The key's window is still open; the id comes back for an unrelated job.
      await enqueue(t.db, { id, queue, kind: 'unrelated' });
      const repeat = await enqueue(t.db, { queue, kind: 'k', idempotencyKey: key });
      expect(repeat).toMatchObject({ id, created: false, job: null });
      expect((await listJobs(t.db, jobListSchema.parse({ search: key }))).jobs).toEqual([]);
    });

    it('keeps a receipt while its job is still ready or running, however old', async () => {
      const queue = uniqueQueue('receipt');
      const job = await enqueue(t.db, { queue, kind: 'k' });
      await recordReceipt(t.db, { key: `r-${queue}`, jobId: job.id, attempt: 1, result: { sent: true } });
      await run(
        t.db,
        sql`UPDATE leasehold.receipts SET created_at = now() - interval '30 days' WHERE key = ${`r-${queue}`}`,
      );
      expect(await removeOldReceipts(t.db, { olderThanSeconds: 86400 })).toBe(0);
      await completeManyIfLeaseHeld(t.db, await claim(t.db, { queues: [queue], workerId: 'w' }));
      expect(await removeOldReceipts(t.db, { olderThanSeconds: 86400 })).toBe(1);
    });
  });

  describe('of the audit log', () => {
    const DAY = 86_400;
    it('removes rows past the age (400 days by default) through the database function, oldest first, in batches', async () => {
      const actor = `retention-${uniqueQueue()}`;
      await run(
        t.db,
        sql`INSERT INTO leasehold.audit_log (at, actor, action, requested, affected, outcome)
            SELECT now() - make_interval(days => d), ${actor}, 'reveal_payload', 0, 0, 'applied'
            FROM unnest(ARRAY[10, 95, 399, 401, 402, 500]) AS d`,
      );
      const left = async () =>
        (
          await run<{ days: number }>(
            t.db,
            sql`SELECT round(extract(epoch FROM now() - at) / 86400)::int AS days FROM leasehold.audit_log WHERE actor = ${actor} ORDER BY at DESC`,
          )
        ).map((r) => r.days);
      expect(await removeOldAudit(t.db, { limit: 2 })).toBe(2);
      expect(await left()).toEqual([10, 95, 399, 401]);
      expect(await removeOldAudit(t.db)).toBe(1);
      expect(await left()).toEqual([10, 95, 399]);
      expect(await removeOldAudit(t.db, { auditAfterSeconds: 90 * DAY })).toBe(2);
      expect(await left()).toEqual([10]);
    });

    it('refuses an age under 90 days, in TypeScript and in the database, and removes nothing', async () => {
      const actor = `retention-young-${uniqueQueue()}`;
      await run(
        t.db,
        sql`INSERT INTO leasehold.audit_log (at, actor, action, requested, affected, outcome)
            VALUES (now() - interval '89 days', ${actor}, 'reveal_payload', 0, 0, 'applied')`,
      );
      await expect(removeOldAudit(t.db, { auditAfterSeconds: 89 * DAY })).rejects.toThrow(
        /retention.*auditAfterSeconds: audit rows are kept at least 90 days/,
      );
      await expect(run(t.db, sql`SELECT leasehold.remove_old_audit(interval '89 days')`)).rejects.toThrow(
        /leasehold\.remove_old_audit refused: audit rows are kept at least 90 days, not 89 days/,
      );
      const [row] = await run<{ n: number }>(
        t.db,
        sql`SELECT count(*)::int AS n FROM leasehold.audit_log WHERE actor = ${actor}`,
      );
      expect(row).toEqual({ n: 1 });
    });
  });
});
