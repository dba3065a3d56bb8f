/** The failure harness's guard-skipping claim still breaks the guard it is meant to break. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDatabase, type TestDatabase } from '../../../test/db.ts';
import { addJob, uniqueQueue } from '../../../test/factories.ts';
import { claim } from '../claim.ts';
import { claimWithoutReadyGuard } from './unguarded-claim.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await testDatabase();
});
afterAll(async () => {
  await t?.close();
});

describe('the unguarded claim (failpoint unguarded_claim)', () => {
  it('leases a job another attempt still holds, and a ready one, under a fresh token', async () => {
    const queue = uniqueQueue('unguarded');
    await addJob(t.db, { queue });
    const [held] = await claim(t.db, { queues: [queue], workerId: 'w1', limit: 1, leaseSeconds: 60 });
    await addJob(t.db, { queue });
    const taken = await claimWithoutReadyGuard(t.db, { queues: [queue], workerId: 'w2', limit: 10, leaseSeconds: 60 });
    expect(taken).toHaveLength(2);
    expect(taken.map((j) => j.id)).toContain(held!.id);
    expect(new Set(taken.map((j) => j.leaseToken)).size).toBe(1);
    expect(taken[0]!.leaseToken).not.toBe(held!.leaseToken);
    expect(taken.find((j) => j.id === held!.id)!.attempt).toBe(held!.attempt + 1);
  });
});
