/**
 * Idempotency receipts: the recorded result of a side effect, keyed by its delivery key. The
 * first result recorded for a key wins; a later attempt reads it instead of repeating the call.
 *
 * Before the effect runs, the attempt claims the key (`claimReceiptIfLeaseHeld`: a row in
 * receipt_claims naming its job and lease token), and recording the receipt removes the claim
 * in the same statement. While one attempt holds the claim and its lease, another attempt on the
 * key does not run the effect: it waits for the receipt. A claim whose attempt no longer holds
 * its lease (expired, reaped, settled) is taken over, since that attempt may be dead.
 *
 * The receipt is written after the side effect returns, so a crash between the two repeats the
 * call on the next attempt (it takes the dead attempt's claim over): pass the same delivery key
 * to the outside system as well (an Idempotency-Key header) so that it, too, can refuse the repeat.
 */
import { sql } from 'drizzle-orm';
import { run, type Executor } from './executor.ts';
import { leaseHeldSql } from './transitions.ts';

export interface Receipt {
  key: string;
  jobId: string;
  attempt: number;
  result: unknown;
}

export async function findReceipt(executor: Executor, key: string): Promise<Receipt | null> {
  const rows = await run<{ key: string; job_id: string; attempt: number; result: unknown }>(
    executor,
    sql`SELECT key, job_id, attempt, result FROM leasehold.receipts WHERE key = ${key}`,
  );
  const row = rows[0];
  return row ? { key, jobId: row.job_id, attempt: row.attempt, result: row.result } : null;
}

/** What a claim on a receipt key came to. */
export type ReceiptClaim =
  /** This attempt holds the key: it runs the effect, then records the receipt. */
  | { kind: 'claimed' }
  /** The receipt is recorded already: its result stands. */
  | { kind: 'done'; receipt: Receipt }
  /** Another attempt holds the key and its lease: wait for its receipt (or for its lease to go). */
  | { kind: 'held'; jobId: string; attempt: number }
  /** This attempt's own lease is gone: it must stop. */
  | { kind: 'lease_lost' };

/**
 * Claims `key` for the attempt holding `lease`, unless a receipt is recorded or another attempt
 * holding its lease has the claim. A claim of an attempt whose lease is gone is taken over; the
 * attempt's own claim is renewed. Two statements when claimed: the second, on a fresh snapshot,
 * looks for a receipt recorded (with its claim removed) after the first one's snapshot was taken.
 */
export async function claimReceiptIfLeaseHeld(
  executor: Executor,
  key: string,
  lease: { id: string; leaseToken: string; attempt: number },
): Promise<ReceiptClaim> {
  const rows = await run<{
    lease_held: boolean;
    claimed: boolean;
    receipt_job: string | null;
    receipt_attempt: number | null;
    receipt_result: unknown;
    holder_job: string | null;
    holder_attempt: number | null;
  }>(
    executor,
    sql`WITH lease AS (
          SELECT 1 FROM leasehold.jobs j, (SELECT ${lease.leaseToken}::uuid AS token) t
          WHERE j.id = ${lease.id}::uuid AND ${leaseHeldSql('j', 't.token')}
        ), done AS (
          SELECT job_id, attempt, result FROM leasehold.receipts WHERE key = ${key}
        ), claimed AS (
          INSERT INTO leasehold.receipt_claims AS c (key, job_id, attempt, lease_token)
          SELECT ${key}, ${lease.id}::uuid, ${lease.attempt}, ${lease.leaseToken}::uuid
          WHERE EXISTS (SELECT 1 FROM lease) AND NOT EXISTS (SELECT 1 FROM done)
          ON CONFLICT (key) DO UPDATE
            SET job_id = excluded.job_id, attempt = excluded.attempt, lease_token = excluded.lease_token,
                claimed_at = now()
            WHERE (c.job_id = excluded.job_id AND c.lease_token = excluded.lease_token)
               OR NOT EXISTS (
                    SELECT 1 FROM leasehold.jobs j
                    WHERE j.id = c.job_id AND ${leaseHeldSql('j', 'c.lease_token')})
          RETURNING 1
        )
        SELECT EXISTS (SELECT 1 FROM lease) AS lease_held,
               EXISTS (SELECT 1 FROM claimed) AS claimed,
               (SELECT job_id FROM done) AS receipt_job,
               (SELECT attempt FROM done) AS receipt_attempt,
               (SELECT result FROM done) AS receipt_result,
               (SELECT job_id FROM leasehold.receipt_claims WHERE key = ${key}) AS holder_job,
               (SELECT attempt FROM leasehold.receipt_claims WHERE key = ${key}) AS holder_attempt`,
  );
  const row = rows[0]!;
  if (row.receipt_job !== null) {
    return {
      kind: 'done',
      receipt: { key, jobId: row.receipt_job, attempt: row.receipt_attempt!, result: row.receipt_result },
    };
  }
  if (!row.lease_held) return { kind: 'lease_lost' };
  if (!row.claimed) return { kind: 'held', jobId: row.holder_job ?? '', attempt: row.holder_attempt ?? 0 };
  // Claimed on a snapshot that may predate another attempt's receipt and the removal of its claim.
  const recorded = await findReceipt(executor, key);
  if (recorded) {
    await dropReceiptClaim(executor, key, lease);
    return { kind: 'done', receipt: recorded };
  }
  return { kind: 'claimed' };
}

/**
 * Removes this attempt's claim on `key` (its effect failed): the next attempt claims it at once.
 * An attempt is its job and lease token together: one claim statement gives its jobs one token.
 */
export async function dropReceiptClaim(
  executor: Executor,
  key: string,
  lease: { id: string; leaseToken: string },
): Promise<void> {
  await run<unknown>(
    executor,
    sql`DELETE FROM leasehold.receipt_claims
        WHERE key = ${key} AND job_id = ${lease.id}::uuid AND lease_token = ${lease.leaseToken}::uuid`,
  );
}

/**
 * Records `result` under `key` unless a receipt exists; returns the receipt that stands. With
 * `leaseToken`, the attempt's claim on the key is removed in the same statement.
 */
export async function recordReceipt(
  executor: Executor,
  receipt: { key: string; jobId: string; attempt: number; result: unknown; leaseToken?: string | undefined },
): Promise<{ recorded: boolean; receipt: Receipt }> {
  const rows = await run<{ key: string }>(
    executor,
    sql`WITH unclaimed AS (
          DELETE FROM leasehold.receipt_claims
          WHERE key = ${receipt.key} AND job_id = ${receipt.jobId}::uuid
            AND lease_token = ${receipt.leaseToken ?? null}::uuid
        )
        INSERT INTO leasehold.receipts (key, job_id, attempt, result)
        VALUES (${receipt.key}, ${receipt.jobId}::uuid, ${receipt.attempt}, ${JSON.stringify(receipt.result ?? null)}::jsonb)
        ON CONFLICT (key) DO NOTHING
        RETURNING key`,
  );
  if (rows.length === 1) {
    const { key, jobId, attempt } = receipt;
    return { recorded: true, receipt: { key, jobId, attempt, result: receipt.result ?? null } };
  }
  const existing = await findReceipt(executor, receipt.key);
  if (!existing) throw new Error(`Leasehold: receipt ${receipt.key} vanished while being recorded; try again`);
  return { recorded: false, receipt: existing };
}

/**
 * Removes receipts older than `olderThanSeconds`, at most `limit` per call, but never one whose
 * job is still ready or running: a job retrying for longer than the window must still find the
 * receipt of its earlier attempt's side effect.
 */
export async function removeOldReceipts(
  executor: Executor,
  options: { olderThanSeconds: number; limit?: number },
): Promise<number> {
  const rows = await run<unknown>(
    executor,
    sql`WITH old AS (
          SELECT key FROM leasehold.receipts r
          WHERE created_at < statement_timestamp() - make_interval(secs => ${options.olderThanSeconds}::float8)
            AND NOT EXISTS (SELECT 1 FROM leasehold.jobs j WHERE j.id = r.job_id AND j.state IN ('ready', 'running'))
          ORDER BY created_at LIMIT ${options.limit ?? 1000}
        )
        DELETE FROM leasehold.receipts r USING old WHERE r.key = old.key RETURNING 1`,
  );
  // Claims left by attempts that died between claim and receipt, once their lease is gone: the
  // next attempt would take them over anyway, but a job that never runs again leaves its claim.
  await run<unknown>(
    executor,
    sql`DELETE FROM leasehold.receipt_claims c
        WHERE claimed_at < statement_timestamp() - make_interval(secs => ${options.olderThanSeconds}::float8)
          AND NOT EXISTS (SELECT 1 FROM leasehold.jobs j
                          WHERE j.id = c.job_id AND ${leaseHeldSql('j', 'c.lease_token')})`,
  );
  return rows.length;
}
