/**
 * The invariants that span tables in schema v1 (docs/design/schema-v1.md), for writes from
 * outside the library: plain SQL against leasehold.jobs, as an operator's psql session or an
 * application's migration would do. The triggers of drizzle/0001 keep them.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { claim, completeIfLeaseHeld, failIfLeaseHeld, reapExpiredLeases } from '.';
import { useTestDatabase } from '../../test/db.ts';
import { addJob, claimOne, expireLease, getJob, uniqueQueue } from '../../test/factories.ts';
import { run } from './executor.ts';

const t = useTestDatabase();

const readyRows = async (id: string) =>
  (await run<{ n: number }>(t.db, sql`SELECT count(*)::int AS n FROM leasehold.ready_jobs WHERE id = ${id}::uuid`))[0]!
    .n;

describe('cross-table invariants under writes from outside the library', () => {
  it('a dead job set to ready by a plain SQL UPDATE becomes claimable', async () => {
    const queue = uniqueQueue('outside-ready');
    const job = await addJob(t.db, { queue, maxAttempts: 1 });
    const lease = await claimOne(t.db, queue);
    await failIfLeaseHeld(t.db, lease, { error: 'boom', failureClass: 'permanent' });
    expect((await getJob(t.db, job.id)).state).toBe('dead');
    expect(await readyRows(job.id)).toBe(0);

    await run(
      t.db,
      sql`UPDATE leasehold.jobs SET state = 'ready', finished_at = NULL, max_attempts = 2, run_at = now(), claim_at = now()
          WHERE id = ${job.id}::uuid`,
    );
    expect(await readyRows(job.id)).toBe(1);
    const [again] = await claim(t.db, { queues: [queue], workerId: 'w', limit: 1 });
    expect(again?.id).toBe(job.id);
    expect(again?.attempt).toBe(2);
  });

  it('a ready job cancelled by plain SQL leaves no ready row, so a claim of one takes the next job', async () => {
    const queue = uniqueQueue('outside-cancel');
    const first = await addJob(t.db, { queue });
    const second = await addJob(t.db, { queue });
    await run(
      t.db,
      sql`UPDATE leasehold.jobs SET state = 'cancelled', failure_class = 'cancelled', finished_at = now()
          WHERE id = ${first.id}::uuid`,
    );
    expect(await readyRows(first.id)).toBe(0);
    const [taken] = await claim(t.db, { queues: [queue], workerId: 'w', limit: 1 });
    expect(taken?.id).toBe(second.id);
  });

  it('a ready job moved later by plain SQL is not claimed before its new run time', async () => {
    const queue = uniqueQueue('outside-move');
    const job = await addJob(t.db, { queue });
    await run(
      t.db,
      sql`UPDATE leasehold.jobs SET run_at = now() + interval '1 hour', claim_at = now() + interval '1 hour'
          WHERE id = ${job.id}::uuid`,
    );
    expect(await readyRows(job.id)).toBe(1);
    expect(await claim(t.db, { queues: [queue], workerId: 'w', limit: 10 })).toEqual([]);
    await run(t.db, sql`UPDATE leasehold.jobs SET run_at = now(), claim_at = now() WHERE id = ${job.id}::uuid`);
    const [taken] = await claim(t.db, { queues: [queue], workerId: 'w', limit: 10 });
    expect(taken?.id).toBe(job.id);
  });

  it('a running job whose deadline is moved into the past by plain SQL is reaped', async () => {
    const queue = uniqueQueue('outside-expire');
    const job = await addJob(t.db, { queue });
    await claimOne(t.db, queue, 'w', 600);
    await expireLease(t.db, job.id);
    const result = await reapExpiredLeases(t.db, { leaseExpiredDelayMs: 0 });
    expect(result.retried).toContain(job.id);
    expect((await getJob(t.db, job.id)).state).toBe('ready');
  });

  it('a claim batch leaves one lease row counted down by settlements and deleted by the reaper', async () => {
    const queue = uniqueQueue('lease-row');
    await addJob(t.db, { queue });
    await addJob(t.db, { queue });
    const jobs = await claim(t.db, { queues: [queue], workerId: 'w', limit: 2, leaseSeconds: 1 });
    const leaseRow = async () =>
      await run<{ running: number; jobs: number }>(
        t.db,
        sql`SELECT running, cardinality(job_ids) AS jobs FROM leasehold.leases WHERE token = ${jobs[0]!.leaseToken}::uuid`,
      );
    expect(await leaseRow()).toEqual([{ running: 2, jobs: 2 }]);
    await completeIfLeaseHeld(t.db, jobs[0]!);
    expect(await leaseRow()).toEqual([{ running: 1, jobs: 2 }]);
    await completeIfLeaseHeld(t.db, jobs[1]!);
    expect(await leaseRow()).toEqual([{ running: 0, jobs: 2 }]);
    await run(
      t.db,
      sql`UPDATE leasehold.leases SET lease_until = now() - interval '1 second' WHERE token = ${jobs[0]!.leaseToken}::uuid`,
    );
    expect((await reapExpiredLeases(t.db)).reaped).toBe(0);
    expect(await leaseRow()).toEqual([]);
  });
});
