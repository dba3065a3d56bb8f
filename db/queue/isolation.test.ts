/**
 * Every operation changes only the jobs it names: a mixed fixture of jobs in every state sits
 * beside each operation, and its rows must be byte-for-byte the same afterwards.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cancelIfUnchanged,
  cancelManyIfUnchanged,
  claim,
  completeIfLeaseHeld,
  completeManyIfLeaseHeld,
  enqueue,
  enqueueMany,
  failIfLeaseHeld,
  heartbeatIfLeaseHeld,
  pauseQueue,
  reapExpiredLeases,
  releaseIfLeaseHeld,
  removeExpiredHistory,
  retryIfTerminal,
  retryManyIfTerminal,
  type ClaimedJob,
  type Job,
} from '.';
import { testDatabase, type TestDatabase } from '../../test/db.ts';
import { addJob, claimOne, expireLease, getJob, mixedFixture, uniqueQueue } from '../../test/factories.ts';

let t: TestDatabase;
let bystanders: Job[];
const bystanderQueue = uniqueQueue('bystanders');

beforeAll(async () => {
  t = await testDatabase();
  // The fixture's expired lease is rightly taken by any reap, so it is not a bystander; the
  // running job with a live lease is.
  const { expired: _reapable, ...fixture } = await mixedFixture(t.db, bystanderQueue);
  bystanders = Object.values(fixture);
});
afterAll(async () => {
  await t?.close();
});

async function expectBystandersUnchanged() {
  const now = await Promise.all(bystanders.map((j) => getJob(t.db, j.id)));
  expect(now).toEqual(bystanders);
}

async function target(): Promise<{ queue: string; job: ClaimedJob }> {
  const queue = uniqueQueue('target');
  await addJob(t.db, { queue });
  return { queue, job: await claimOne(t.db, queue) };
}

describe('operations leave other jobs unaffected', () => {
  it('enqueue and bulk enqueue', async () => {
    await enqueue(t.db, { queue: uniqueQueue(), kind: 'k' });
    await enqueueMany(t.db, [
      { queue: uniqueQueue(), kind: 'k' },
      { queue: uniqueQueue(), kind: 'k' },
    ]);
    await expectBystandersUnchanged();
  });

  it('claim of another queue', async () => {
    const queue = uniqueQueue();
    await addJob(t.db, { queue });
    expect(await claim(t.db, { queues: [queue], workerId: 'w', limit: 100 })).toHaveLength(1);
    await expectBystandersUnchanged();
  });

  it('complete, batch complete, heartbeat, fail and release', async () => {
    await completeIfLeaseHeld(t.db, (await target()).job);
    await completeManyIfLeaseHeld(t.db, [(await target()).job, (await target()).job]);
    await heartbeatIfLeaseHeld(t.db, (await target()).job, { leaseSeconds: 60 });
    await failIfLeaseHeld(t.db, (await target()).job, { error: 'x', failureClass: 'transient' });
    await failIfLeaseHeld(t.db, (await target()).job, { error: 'x', failureClass: 'permanent' });
    await releaseIfLeaseHeld(t.db, (await target()).job);
    await expectBystandersUnchanged();
  });

  it('settlements refused for a lost lease', async () => {
    const { job } = await target();
    const stale = { ...job, leaseToken: '00000000-0000-4000-8000-000000000001' };
    expect((await completeIfLeaseHeld(t.db, stale)).applied).toBe(false);
    expect((await failIfLeaseHeld(t.db, stale, { error: 'x', failureClass: 'transient' })).applied).toBe(false);
    await expectBystandersUnchanged();
  });

  it('reap', async () => {
    const { job } = await target();
    await expireLease(t.db, job.id);
    const result = await reapExpiredLeases(t.db, { limit: 1000 });
    expect(result.retried).toContain(job.id);
    await expectBystandersUnchanged();
  });

  it('operator retry, cancel, bulk forms and pause', async () => {
    const { job } = await target();
    await failIfLeaseHeld(t.db, job, { error: 'x', failureClass: 'permanent' });
    await retryIfTerminal(t.db, { id: job.id, actor: 'op' });
    const other = await target();
    await cancelIfUnchanged(t.db, { id: other.job.id, leaseToken: other.job.leaseToken, actor: 'op' });
    await retryManyIfTerminal(t.db, { ids: [other.job.id], actor: 'admin' });
    await cancelManyIfUnchanged(t.db, { jobs: [{ id: other.job.id }], actor: 'admin' });
    await pauseQueue(t.db, { queue: uniqueQueue(), actor: 'admin' });
    await expectBystandersUnchanged();
  });

  it('retention of old rows only', async () => {
    await removeExpiredHistory(t.db, { doneAfterSeconds: 3600, deadAfterSeconds: 3600, cancelledAfterSeconds: 3600 });
    await expectBystandersUnchanged();
  });
});
