import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { completeIfLeaseHeld, failIfLeaseHeld } from '.';
import { useTestDatabase } from '../../test/db.ts';
import { addJob, claimOne, makeDue, uniqueQueue } from '../../test/factories.ts';
import { run } from './executor.ts';
import { attemptHistory } from './history.ts';

const t = useTestDatabase();

describe('attempt history', () => {
  it('lists a failed attempt from its row and the completing attempt from the done job, with times and worker', async () => {
    const queue = uniqueQueue();
    const job = await addJob(t.db, { queue });
    const first = await claimOne(t.db, queue, 'worker-a');
    await failIfLeaseHeld(t.db, first, { error: 'flaky', failureClass: 'transient' });
    await makeDue(t.db, job.id);
    const second = await claimOne(t.db, queue, 'worker-b');
    expect(await completeIfLeaseHeld(t.db, second)).toEqual({ applied: true });

    const history = await attemptHistory(t.db, job.id);
    expect(history.map((a) => [a.attempt, a.outcome, a.workerId, a.failureClass, a.error])).toEqual([
      [1, 'failed', 'worker-a', 'transient', 'flaky'],
      [2, 'completed', 'worker-b', null, null],
    ]);
    const done = history[1]!;
    expect(done.endedAt.getTime()).toBeGreaterThanOrEqual(done.startedAt.getTime());
    expect(Math.abs(done.durationMs - (done.endedAt.getTime() - done.startedAt.getTime()))).toBeLessThanOrEqual(1);
    // The completion wrote no attempt row of its own.
    expect(await run(t.db, sql`SELECT attempt FROM leasehold.job_attempts WHERE job_id = ${job.id}::uuid`)).toEqual([
      { attempt: 1 },
    ]);
  });

  it('shows a completion once when an older version already wrote a completed row for it', async () => {
    const queue = uniqueQueue();
    const job = await addJob(t.db, { queue });
    const lease = await claimOne(t.db, queue);
    await completeIfLeaseHeld(t.db, lease);
    await run(
      t.db,
      sql`INSERT INTO leasehold.job_attempts (job_id, attempt, queue, kind, worker_id, lease_token, started_at, ended_at, outcome, duration_ms)
          SELECT id, attempts, queue, kind, worker_id, ${lease.leaseToken}::uuid, started_at, finished_at, 'completed', 0 FROM leasehold.jobs WHERE id = ${job.id}::uuid`,
    );
    const history = await attemptHistory(t.db, job.id);
    expect(history.map((a) => [a.attempt, a.outcome, a.leaseToken])).toEqual([[1, 'completed', lease.leaseToken]]);
  });

  it('lists nothing for a job that has not ended an attempt yet', async () => {
    const queue = uniqueQueue();
    const job = await addJob(t.db, { queue });
    await claimOne(t.db, queue);
    expect(await attemptHistory(t.db, job.id)).toEqual([]);
  });
});
