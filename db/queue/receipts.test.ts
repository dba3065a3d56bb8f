import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDatabase, type TestDatabase } from '../../test/db.ts';
import { addJob, expireLease, uniqueQueue } from '../../test/factories.ts';
import { claim } from './claim.ts';
import { run } from './executor.ts';
import { claimReceiptIfLeaseHeld, dropReceiptClaim, recordReceipt, removeOldReceipts } from './receipts.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await testDatabase();
});
afterAll(async () => {
  await t?.close();
});

/** Two attempts claimed in one statement: one lease token, two jobs. */
async function twoClaimedJobs() {
  const queue = uniqueQueue('receipt');
  await addJob(t.db, { queue });
  await addJob(t.db, { queue });
  const [a, b] = await claim(t.db, { queues: [queue], workerId: 'w', limit: 2, leaseSeconds: 30 });
  expect(b!.leaseToken).toBe(a!.leaseToken);
  return { a: a!, b: b!, key: `key-${queue}` };
}

describe('receipt claims', () => {
  it('lets one attempt hold a key while its lease is held, and hands the next one its receipt', async () => {
    const { a, b, key } = await twoClaimedJobs();
    expect(await claimReceiptIfLeaseHeld(t.db, key, a)).toEqual({ kind: 'claimed' });
    expect(await claimReceiptIfLeaseHeld(t.db, key, b)).toEqual({ kind: 'held', jobId: a.id, attempt: a.attempt });
    // Its own claim again: still its own.
    expect(await claimReceiptIfLeaseHeld(t.db, key, a)).toEqual({ kind: 'claimed' });
    await recordReceipt(t.db, { key, jobId: a.id, attempt: a.attempt, result: { n: 1 }, leaseToken: a.leaseToken });
    expect(await claimReceiptIfLeaseHeld(t.db, key, b)).toMatchObject({
      kind: 'done',
      receipt: { jobId: a.id, result: { n: 1 } },
    });
    const claims = await run(t.db, sql`SELECT 1 FROM leasehold.receipt_claims WHERE key = ${key}`);
    expect(claims).toHaveLength(0);
  });

  it('lets one of two attempts claiming a key at the same moment have it', async () => {
    const { a, b, key } = await twoClaimedJobs();
    const outcomes = await Promise.all([claimReceiptIfLeaseHeld(t.db, key, a), claimReceiptIfLeaseHeld(t.db, key, b)]);
    expect(outcomes.map((o) => o.kind).sort()).toEqual(['claimed', 'held']);
  });

  it("takes over the claim of an attempt that lost its lease, and frees a failed effect's claim", async () => {
    const { a, b, key } = await twoClaimedJobs();
    expect(await claimReceiptIfLeaseHeld(t.db, key, a)).toEqual({ kind: 'claimed' });
    await expireLease(t.db, a.id);
    expect(await claimReceiptIfLeaseHeld(t.db, key, a)).toEqual({ kind: 'lease_lost' });
    expect(await claimReceiptIfLeaseHeld(t.db, key, b)).toEqual({ kind: 'claimed' });
    await dropReceiptClaim(t.db, key, b);
    const claims = await run(t.db, sql`SELECT 1 FROM leasehold.receipt_claims WHERE key = ${key}`);
    expect(claims).toHaveLength(0);
  });

  it('removes old claims whose attempt no longer holds its lease, and keeps a held one', async () => {
    const { a, b, key } = await twoClaimedJobs();
    await claimReceiptIfLeaseHeld(t.db, `${key}-a`, a);
    await claimReceiptIfLeaseHeld(t.db, `${key}-b`, b);
    await expireLease(t.db, a.id);
    await run(
      t.db,
      sql`UPDATE leasehold.receipt_claims SET claimed_at = now() - interval '2 hours' WHERE key LIKE ${`${key}-%`}`,
    );
    await removeOldReceipts(t.db, { olderThanSeconds: 3600 });
    const left = await run<{ key: string }>(
      t.db,
      sql`SELECT key FROM leasehold.receipt_claims WHERE key LIKE ${`${key}-%`}`,
    );
    expect(left.map((r) => r.key)).toEqual([`${key}-b`]);
  });

  // The lease guard is the transitions' (leaseHeld): the deadline against statement_timestamp(),
  // not now(), which inside a transaction stays at its start (docs/contract.md).
  describe('inside a transaction older than the lease deadline', () => {
    async function shortLease() {
      const queue = uniqueQueue('receipt-time');
      await addJob(t.db, { queue });
      await addJob(t.db, { queue });
      const [short] = await claim(t.db, { queues: [queue], workerId: 'w', limit: 1, leaseSeconds: 1 });
      const [long] = await claim(t.db, { queues: [queue], workerId: 'w', limit: 1, leaseSeconds: 60 });
      return { short: short!, long: long!, key: `key-${queue}` };
    }

    it('refuses a claim whose lease ended after the transaction began', async () => {
      const { short, key } = await shortLease();
      const outcome = await t.db.transaction(async (tx) => {
        await run(tx, sql`SELECT pg_sleep(1.5)`);
        return claimReceiptIfLeaseHeld(tx, key, short);
      });
      expect(outcome).toEqual({ kind: 'lease_lost' });
    });

    it('takes over the claim of an attempt whose lease ended after the transaction began', async () => {
      const { short, long, key } = await shortLease();
      expect(await claimReceiptIfLeaseHeld(t.db, key, short)).toEqual({ kind: 'claimed' });
      const outcome = await t.db.transaction(async (tx) => {
        await run(tx, sql`SELECT pg_sleep(1.5)`);
        return claimReceiptIfLeaseHeld(tx, key, long);
      });
      expect(outcome).toEqual({ kind: 'claimed' });
    });
  });
});
