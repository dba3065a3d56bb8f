import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import {
  cancelIfUnchanged,
  cancelManyIfUnchanged,
  claim,
  enqueueMany,
  failIfLeaseHeld,
  LeaseholdInputError,
  pauseQueue,
  resumeQueue,
  retryIfTerminal,
  retryManyIfTerminal,
} from '.';
import { useTestDatabase } from '../../test/db.ts';
import { addJob, claimOne, getJob, mixedFixture, uniqueQueue } from '../../test/factories.ts';
import { run } from './executor.ts';

const t = useTestDatabase();

const auditRow = async (id: number) =>
  (
    await run(
      t.db,
      sql`SELECT actor, action, job_ids, queue, requested, affected, outcome, detail FROM leasehold.audit_log WHERE id = ${id}`,
    )
  )[0];

describe('retry', () => {
  it('puts a dead job back to ready with one more attempt, and audits it in the same statement', async () => {
    const queue = uniqueQueue();
    await addJob(t.db, { queue, maxAttempts: 1 });
    const job = await claimOne(t.db, queue);
    await failIfLeaseHeld(t.db, job, { error: 'boom', failureClass: 'transient' });
    expect((await getJob(t.db, job.id)).state).toBe('dead');

    const outcome = await retryIfTerminal(t.db, { id: job.id, actor: 'op@example.com', reason: 'provider fixed' });
    expect(outcome.applied).toBe(true);
    const stored = await getJob(t.db, job.id);
    expect(stored).toMatchObject({ state: 'ready', attempts: 1, maxAttempts: 2, finishedAt: null });
    expect(await auditRow(outcome.auditId)).toMatchObject({
      actor: 'op@example.com',
      action: 'retry',
      job_ids: [job.id],
      queue,
      requested: 1,
      affected: 1,
      outcome: 'applied',
      detail: { reason: 'provider fixed', applied: [job.id] },
    });
    const again = await claimOne(t.db, queue);
    expect(again.attempt).toBe(2);
  });

  it('refuses a job that is not dead or cancelled as changed since viewed, and audits the refusal', async () => {
    const queue = uniqueQueue();
    const job = await addJob(t.db, { queue });
    const outcome = await retryIfTerminal(t.db, { id: job.id, actor: 'op' });
    expect(outcome).toMatchObject({ applied: false, reason: 'changed_since_viewed', state: 'ready' });
    expect(await auditRow(outcome.auditId)).toMatchObject({ affected: 0, outcome: 'refused' });
  });

  it('says not_found for an id that does not exist', async () => {
    const outcome = await retryIfTerminal(t.db, { id: '00000000-0000-7000-8000-00000000dead', actor: 'op' });
    expect(outcome).toMatchObject({ applied: false, reason: 'not_found' });
  });

  it('bulk retry takes a frozen id set and reports what applied and what was refused', async () => {
    const queue = uniqueQueue();
    const jobs = await mixedFixture(t.db, queue);
    const ids = [jobs.dead!.id, jobs.cancelled!.id, jobs.done!.id, jobs.ready!.id];
    const result = await retryManyIfTerminal(t.db, { ids, actor: 'admin' });
    expect(result).toMatchObject({ requested: 4, affected: 2 });
    expect(result.applied.sort()).toEqual([jobs.dead!.id, jobs.cancelled!.id].sort());
    expect(result.refused).toEqual(
      expect.arrayContaining([
        { id: jobs.done!.id, reason: 'changed_since_viewed', state: 'done' },
        { id: jobs.ready!.id, reason: 'changed_since_viewed', state: 'ready' },
      ]),
    );
    expect(await auditRow(result.auditId)).toMatchObject({
      action: 'bulk_retry',
      requested: 4,
      affected: 2,
      outcome: 'partial',
    });
  });

  it('caps bulk actions at 1,000 ids and refuses repeats, writing nothing', async () => {
    const ids = Array.from({ length: 1001 }, (_, i) => `00000000-0000-7000-8000-${String(i).padStart(12, '0')}`);
    const [{ n: before }] = (await run(t.db, sql`SELECT count(*)::int AS n FROM leasehold.audit_log`)) as [
      { n: number },
    ];
    await expect(retryManyIfTerminal(t.db, { ids, actor: 'admin' })).rejects.toThrow(/at most 1000/);
    await expect(retryManyIfTerminal(t.db, { ids: [ids[0]!, ids[0]!], actor: 'admin' })).rejects.toThrow(/repeat/);
    await expect(retryManyIfTerminal(t.db, { ids: ['nope'], actor: 'admin' })).rejects.toBeInstanceOf(
      LeaseholdInputError,
    );
    const [{ n: after }] = (await run(t.db, sql`SELECT count(*)::int AS n FROM leasehold.audit_log`)) as [
      { n: number },
    ];
    expect(after).toBe(before);
  });
});

describe('cancel', () => {
  it('cancels a ready job without a token', async () => {
    const queue = uniqueQueue();
    const job = await addJob(t.db, { queue });
    const outcome = await cancelIfUnchanged(t.db, { id: job.id, actor: 'op', reason: 'customer asked' });
    expect(outcome.applied).toBe(true);
    const stored = await getJob(t.db, job.id);
    expect(stored).toMatchObject({
      state: 'cancelled',
      failureClass: 'cancelled',
      lastError: 'cancelled by op: customer asked',
    });
    expect(await claim(t.db, { queues: [queue], workerId: 'w' })).toEqual([]);
  });

  it('refuses a job that finished meanwhile', async () => {
    const queue = uniqueQueue();
    const jobs = await mixedFixture(t.db, queue);
    const outcome = await cancelIfUnchanged(t.db, { id: jobs.done!.id, actor: 'op' });
    expect(outcome).toMatchObject({ applied: false, reason: 'changed_since_viewed', state: 'done' });
  });

  it('bulk cancel cancels ready jobs and running jobs whose token matches what was seen', async () => {
    const queue = uniqueQueue();
    await enqueueMany(
      t.db,
      Array.from({ length: 4 }, () => ({ queue, kind: 'k' })),
    );
    const [r1, r2] = await claim(t.db, { queues: [queue], workerId: 'w', limit: 2 });
    const ready = (
      await run<{ id: string }>(t.db, sql`SELECT id FROM leasehold.jobs WHERE queue = ${queue} AND state = 'ready'`)
    ).map((r) => r.id);
    const result = await cancelManyIfUnchanged(t.db, {
      jobs: [
        { id: r1!.id, leaseToken: r1!.leaseToken },
        { id: r2!.id, leaseToken: '00000000-0000-4000-8000-000000000000' },
        ...ready.map((id) => ({ id })),
      ],
      actor: 'admin',
    });
    expect(result.affected).toBe(3);
    expect(result.refused).toEqual([{ id: r2!.id, reason: 'changed_since_viewed', state: 'running' }]);
    expect((await getJob(t.db, r2!.id)).state).toBe('running');
  });
});

describe('pause and resume', () => {
  it('are audited and refused when they would change nothing', async () => {
    const queue = uniqueQueue();
    const first = await pauseQueue(t.db, { queue, actor: 'admin' });
    const second = await pauseQueue(t.db, { queue, actor: 'admin' });
    expect([first.applied, second.applied]).toEqual([true, false]);
    expect(await auditRow(second.auditId)).toMatchObject({ action: 'pause', queue, outcome: 'refused' });
    expect((await resumeQueue(t.db, { queue, actor: 'admin' })).applied).toBe(true);
    expect((await resumeQueue(t.db, { queue, actor: 'admin' })).applied).toBe(false);
    expect((await resumeQueue(t.db, { queue: uniqueQueue('never-paused'), actor: 'admin' })).applied).toBe(false);
  });
});
