import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import {
  claim,
  completeIfLeaseHeld,
  enqueue,
  failIfLeaseHeld,
  reapExpiredLeases,
  registerKinds,
  releaseIfLeaseHeld,
} from '.';
import { run } from './executor.ts';
import { ATTEMPT_LIMIT_SENTENCE, MAX_ATTEMPTS, noAttemptsLeft } from './attempt-cap.ts';
import { useTestDatabase } from '../../test/db.ts';
import { addJob, attemptsOf, claimOne, expireLease, getJob, uniqueQueue } from '../../test/factories.ts';

const t = useTestDatabase();

async function released(id: string): Promise<number> {
  const [row] = await run<{ released: number }>(t.db, sql`SELECT released FROM leasehold.jobs WHERE id = ${id}::uuid`);
  return row!.released;
}

/** A ready job that has already used `attempts` of its `maxAttempts` (as if it had failed so often). */
async function jobAt(queue: string, attempts: number, maxAttempts: number, kind = 'test.noop') {
  const job = await addJob(t.db, { queue, kind, maxAttempts });
  await run(t.db, sql`UPDATE leasehold.jobs SET attempts = ${attempts} WHERE id = ${job.id}::uuid`);
  return job;
}

async function registerCap(kind: string, maxAttempts: number | null) {
  await registerKinds(t.db, [
    { kind, version: 1, defaultQueue: 'default', displayName: kind, redactedPaths: [], rerunSafe: false, maxAttempts },
  ]);
}

describe('a release is not charged', () => {
  it('counts the release, leaves max_attempts alone, and the next attempt number still grows', async () => {
    const queue = uniqueQueue();
    const job = await addJob(t.db, { queue, maxAttempts: 2 });
    const first = await claimOne(t.db, queue);
    expect(await releaseIfLeaseHeld(t.db, first)).toEqual({ applied: true });
    expect(await getJob(t.db, job.id)).toMatchObject({ state: 'ready', attempts: 1, maxAttempts: 2 });
    expect(await released(job.id)).toBe(1);
    expect((await claimOne(t.db, queue)).attempt).toBe(2);
  });

  it('lets a job released more times than its handler cap still fail transiently, retry and complete', async () => {
    const queue = uniqueQueue();
    const job = await addJob(t.db, { queue, maxAttempts: 10 });
    const handlerCap = 2;
    for (let i = 0; i < 3; i++) {
      const lease = await claimOne(t.db, queue);
      expect(await releaseIfLeaseHeld(t.db, lease)).toEqual({ applied: true });
    }
    const fourth = await claimOne(t.db, queue);
    expect(fourth.attempt).toBe(4);
    // What the worker passes: min(the job's cap, the handler's).
    const failed = await failIfLeaseHeld(
      t.db,
      { ...fourth, maxAttempts: Math.min(fourth.maxAttempts, handlerCap) },
      { error: 'flaky', failureClass: 'transient', policy: { baseDelayMs: 0, maxDelayMs: 0 } },
    );
    expect(failed).toMatchObject({ applied: true, state: 'ready' });
    const fifth = await claimOne(t.db, queue);
    expect(await completeIfLeaseHeld(t.db, fifth)).toEqual({ applied: true });
    expect((await attemptsOf(t.db, job.id)).map((a) => a.outcome)).toEqual([
      'released',
      'released',
      'released',
      'failed',
      'completed',
    ]);
  });

  it('is applied at the 1,000-attempt cap, where it was refused as lease_lost', async () => {
    const queue = uniqueQueue();
    const job = await jobAt(queue, MAX_ATTEMPTS - 1, MAX_ATTEMPTS);
    const last = await claimOne(t.db, queue);
    expect(last.attempt).toBe(MAX_ATTEMPTS);
    expect(await releaseIfLeaseHeld(t.db, last)).toEqual({ applied: true });
    const again = await claimOne(t.db, queue);
    expect(again.attempt).toBe(MAX_ATTEMPTS + 1);
    expect(await completeIfLeaseHeld(t.db, again)).toEqual({ applied: true });
    expect(await getJob(t.db, job.id)).toMatchObject({ state: 'done', attempts: MAX_ATTEMPTS + 1 });
  });
});

describe('the reaper honours the handler cap', () => {
  it("ends a crash-looping job dead at the handler's cap, below the job's own", async () => {
    const queue = uniqueQueue();
    const kind = `capped-${queue}`;
    await registerCap(kind, 2);
    const job = await addJob(t.db, { queue, kind, maxAttempts: 10 });
    for (let attempt = 1; attempt <= 2; attempt++) {
      await claimOne(t.db, queue);
      await expireLease(t.db, job.id);
      const reaped = await reapExpiredLeases(t.db, { leaseExpiredDelayMs: 0 });
      expect(attempt < 2 ? reaped.retried : reaped.dead).toContain(job.id);
    }
    const stored = await getJob(t.db, job.id);
    expect(stored).toMatchObject({ state: 'dead', failureClass: 'lease_expired', attempts: 2, maxAttempts: 10 });
    expect(stored.lastError).toContain(`; ${noAttemptsLeft(2, 2)}`);
  });

  it('does not charge releases there either', async () => {
    const queue = uniqueQueue();
    const kind = `capped-${queue}`;
    await registerCap(kind, 1);
    const job = await addJob(t.db, { queue, kind, maxAttempts: 10 });
    expect(await releaseIfLeaseHeld(t.db, await claimOne(t.db, queue))).toEqual({ applied: true });
    await claimOne(t.db, queue);
    await expireLease(t.db, job.id);
    expect((await reapExpiredLeases(t.db, { leaseExpiredDelayMs: 0 })).dead).toContain(job.id);
    expect(await getJob(t.db, job.id)).toMatchObject({ state: 'dead', attempts: 2 });
    expect(await released(job.id)).toBe(1);
  });

  it("uses the job's own max_attempts for a kind registered without a cap", async () => {
    const queue = uniqueQueue();
    const kind = `uncapped-${queue}`;
    await registerCap(kind, null);
    const job = await addJob(t.db, { queue, kind, maxAttempts: 3 });
    await claimOne(t.db, queue);
    await expireLease(t.db, job.id);
    expect((await reapExpiredLeases(t.db, { leaseExpiredDelayMs: 0 })).retried).toContain(job.id);
  });
});

describe('the sentence at the 1,000-attempt cap', () => {
  const atLimit = noAttemptsLeft(MAX_ATTEMPTS, MAX_ATTEMPTS);

  it('is the same for an enqueue over the limit, a failure and a reap at the limit', async () => {
    expect(atLimit).toBe(`no attempts left: 1000 of 1000 used (${ATTEMPT_LIMIT_SENTENCE})`);
    const queue = uniqueQueue();

    const refused = await enqueue(t.db, { queue, kind: 'test.noop', maxAttempts: MAX_ATTEMPTS + 1 }).catch(
      (e: unknown) => e,
    );
    expect(String(refused)).toContain(`maxAttempts: 1001 asked for (${ATTEMPT_LIMIT_SENTENCE})`);
    expect(await claim(t.db, { queues: [queue], workerId: 'w' })).toEqual([]);

    const failing = await jobAt(queue, MAX_ATTEMPTS - 1, MAX_ATTEMPTS);
    const lease = await claimOne(t.db, queue);
    const failed = await failIfLeaseHeld(t.db, lease, { error: 'boom', failureClass: 'transient' });
    expect(failed).toMatchObject({ applied: true, state: 'dead', failureClass: 'transient' });
    expect((await getJob(t.db, failing.id)).lastError).toBe(`boom; ${atLimit}`);

    const crashing = await jobAt(queue, MAX_ATTEMPTS - 1, MAX_ATTEMPTS);
    await claimOne(t.db, queue);
    await expireLease(t.db, crashing.id);
    expect((await reapExpiredLeases(t.db, { leaseExpiredDelayMs: 0 })).dead).toContain(crashing.id);
    const reapedError = (await getJob(t.db, crashing.id)).lastError!;
    expect(reapedError.endsWith(`; ${atLimit}`)).toBe(true);
  });

  it('names the lower cap, without the limit, when the handler or the job caps first', async () => {
    const queue = uniqueQueue();
    const job = await addJob(t.db, { queue, maxAttempts: 5 });
    const lease = await claimOne(t.db, queue);
    await failIfLeaseHeld(t.db, { ...lease, maxAttempts: 1 }, { error: 'boom', failureClass: 'transient' });
    expect((await getJob(t.db, job.id)).lastError).toBe(`boom; ${noAttemptsLeft(1, 1)}`);
    expect(noAttemptsLeft(1, 1)).toBe('no attempts left: 1 of 1 used');
  });
});
