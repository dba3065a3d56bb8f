/**
 * Idempotency receipts: the recorded result of a side effect, keyed by its delivery key. The
 * first result recorded for a key wins; a later attempt reads it instead of repeating the call.
 *
 * The receipt is written after the side effect returns, so a crash between the two repeats the
 * call on the next attempt: pass the same delivery key to the outside system as well (an
 * Idempotency-Key header) so that it, too, can refuse the repeat.
 */
import { sql } from 'drizzle-orm';
import { run, type Executor } from './executor.ts';

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

/** Records `result` under `key` unless a receipt exists; returns the receipt that stands. */
export async function recordReceipt(
  executor: Executor,
  receipt: { key: string; jobId: string; attempt: number; result: unknown },
): Promise<{ recorded: boolean; receipt: Receipt }> {
  const rows = await run<{ key: string }>(
    executor,
    sql`INSERT INTO leasehold.receipts (key, job_id, attempt, result)
        VALUES (${receipt.key}, ${receipt.jobId}::uuid, ${receipt.attempt}, ${JSON.stringify(receipt.result ?? null)}::jsonb)
        ON CONFLICT (key) DO NOTHING
        RETURNING key`,
  );
  if (rows.length === 1) return { recorded: true, receipt: { ...receipt, result: receipt.result ?? null } };
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
  return rows.length;
}
