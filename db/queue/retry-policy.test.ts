import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backoffDelayMs, claim, decideRetry, DEFAULT_RETRY_POLICY, failIfLeaseHeld, type ClaimedJob } from '.';
import type { FailureClass } from '../schema.ts';
import { testDatabase, type TestDatabase } from '../../test/db.ts';
import { addJob, attemptsOf, claimOne, getJob, makeDue, uniqueQueue } from '../../test/factories.ts';

describe('decideRetry (pure)', () => {
  const fixed = () => 0.5;

  it('backs off exponentially with equal jitter, capped', () => {
    const policy = { ...DEFAULT_RETRY_POLICY, baseDelayMs: 1000, maxDelayMs: 10_000 };
    expect(backoffDelayMs(1, policy, () => 0)).toBe(500);
    expect(backoffDelayMs(1, policy, () => 0.999999)).toBe(1000);
    expect(backoffDelayMs(3, policy, () => 0)).toBe(2000);
    expect(backoffDelayMs(30, policy, () => 0)).toBe(5000);
    expect(backoffDelayMs(30, policy, () => 0.999999)).toBe(10_000);
  });

  it.each<[FailureClass, 'retry' | 'dead']>([
    ['transient', 'retry'],
    ['rate_limited', 'retry'],
    ['timeout', 'retry'],
    ['unknown_outcome', 'retry'],
    ['lease_expired', 'retry'],
    ['permanent', 'dead'],
    ['validation', 'dead'],
    ['cancelled', 'dead'],
    ['expired', 'dead'],
  ])('%s on attempt 1 of 5 → %s', (failureClass, action) => {
    expect(decideRetry({ failureClass, attempt: 1, maxAttempts: 5, random: fixed }).action).toBe(action);
  });

  it('stops retrying any class once attempts are spent', () => {
    expect(decideRetry({ failureClass: 'transient', attempt: 5, maxAttempts: 5 })).toEqual({
      action: 'dead',
      reason: 'attempts_exhausted',
    });
  });

  it('honours Retry-After for rate_limited (capped), else backs off', () => {
    expect(decideRetry({ failureClass: 'rate_limited', attempt: 1, maxAttempts: 5, retryAfterMs: 42_000 })).toEqual({
      action: 'retry',
      delayMs: 42_000,
    });
    expect(decideRetry({ failureClass: 'rate_limited', attempt: 1, maxAttempts: 5, retryAfterMs: 10 ** 12 })).toEqual({
      action: 'retry',
      delayMs: DEFAULT_RETRY_POLICY.maxRetryAfterMs,
    });
    expect(decideRetry({ failureClass: 'rate_limited', attempt: 2, maxAttempts: 5, random: () => 0 })).toEqual({
      action: 'retry',
      delayMs: 1000,
    });
  });

  it('retries a lost lease after the fixed short delay', () => {
    expect(decideRetry({ failureClass: 'lease_expired', attempt: 4, maxAttempts: 5 })).toEqual({
      action: 'retry',
      delayMs: DEFAULT_RETRY_POLICY.leaseExpiredDelayMs,
    });
  });
});

describe('the retry matrix in the database', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await testDatabase();
  });
  afterAll(async () => {
    await t?.close();
  });

  async function failOnce(
    failureClass: FailureClass,
    options: { maxAttempts?: number; retryAfterMs?: number; maxAgeSeconds?: number } = {},
  ) {
    const queue = uniqueQueue();
    await addJob(t.db, {
      queue,
      maxAttempts: options.maxAttempts ?? 5,
      ...(options.maxAgeSeconds ? { maxAgeSeconds: options.maxAgeSeconds } : {}),
    });
    const job = await claimOne(t.db, queue);
    const outcome = await failIfLeaseHeld(t.db, job, {
      error: `failed as ${failureClass}`,
      failureClass,
      ...(options.retryAfterMs !== undefined ? { retryAfterMs: options.retryAfterMs } : {}),
    });
    return { job, outcome, stored: await getJob(t.db, job.id), queue };
  }

  it.each<[FailureClass, number, number]>([
    ['transient', 500, 1000],
    ['timeout', 500, 1000],
    ['unknown_outcome', 500, 1000],
    ['lease_expired', 5000, 5000],
  ])('%s goes back to ready, due after its backoff (%i–%i ms)', async (failureClass, min, max) => {
    const { stored, job } = await failOnce(failureClass);
    expect(stored).toMatchObject({ state: 'ready', failureClass, lastError: `failed as ${failureClass}`, attempts: 1 });
    expect(stored.finishedAt).toBeNull();
    const delay = stored.runAt.getTime() - stored.updatedAt.getTime();
    expect(delay).toBeGreaterThanOrEqual(min - 5);
    expect(delay).toBeLessThanOrEqual(max + 5);
    expect(await claim(t.db, { queues: [job.queue], workerId: 'w' })).toEqual([]);
    expect((await attemptsOf(t.db, job.id)).map((a) => [a.outcome, a.failureClass])).toEqual([
      ['failed', failureClass],
    ]);
  });

  it('rate_limited waits for Retry-After', async () => {
    const { stored } = await failOnce('rate_limited', { retryAfterMs: 30_000 });
    expect(stored.state).toBe('ready');
    expect(stored.runAt.getTime() - stored.updatedAt.getTime()).toBeCloseTo(30_000, -1);
  });

  it.each<FailureClass>(['permanent', 'validation'])('%s goes dead at once, with finished_at', async (failureClass) => {
    const { stored, outcome } = await failOnce(failureClass);
    expect(outcome).toMatchObject({ applied: true, state: 'dead', failureClass });
    expect(stored).toMatchObject({ state: 'dead', failureClass, attempts: 1, leaseToken: null });
    expect(stored.finishedAt).not.toBeNull();
  });

  it('cancelled ends cancelled, not dead', async () => {
    const { stored } = await failOnce('cancelled');
    expect(stored).toMatchObject({ state: 'cancelled', failureClass: 'cancelled' });
  });

  it('a transient failure on the last attempt goes dead with its class', async () => {
    const queue = uniqueQueue();
    const job = await addJob(t.db, { queue, maxAttempts: 2 });
    let claimed: ClaimedJob = await claimOne(t.db, queue);
    await failIfLeaseHeld(t.db, claimed, { error: '503', failureClass: 'transient' });
    await makeDue(t.db, job.id);
    claimed = await claimOne(t.db, queue);
    expect(claimed.attempt).toBe(2);
    const outcome = await failIfLeaseHeld(t.db, claimed, { error: '503 again', failureClass: 'transient' });
    expect(outcome).toMatchObject({ applied: true, state: 'dead', failureClass: 'transient' });
    expect((await attemptsOf(t.db, job.id)).map((a) => a.outcome)).toEqual(['failed', 'failed']);
  });

  it('a job past its max age goes dead as expired instead of retrying', async () => {
    const { stored } = await failOnce('transient', { maxAgeSeconds: 0.2 });
    // The backoff (≥ 500 ms) would end after the 200 ms max age.
    expect(stored).toMatchObject({ state: 'dead', failureClass: 'expired' });
    expect(stored.lastError).toMatch(/max age reached/);
  });

  it('refuses a failure class it does not know, writing nothing', async () => {
    const queue = uniqueQueue();
    await addJob(t.db, { queue });
    const job = await claimOne(t.db, queue);
    await expect(failIfLeaseHeld(t.db, job, { error: 'x', failureClass: 'mystery' as FailureClass })).rejects.toThrow(
      /failureClass/,
    );
    expect((await getJob(t.db, job.id)).state).toBe('running');
  });
});
