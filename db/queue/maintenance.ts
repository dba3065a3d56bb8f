/**
 * Maintenance (reaper, retention) may run in every worker process, but at most one instance
 * of each task is active per database at a time: the task runs inside a transaction that holds
 * a transaction-scoped advisory lock, taken with try-lock so that the others skip the round.
 * The lock ends with the transaction, so a worker that dies cannot leave it held.
 */
import { sql } from 'drizzle-orm';
import { MAINTENANCE_LOCK_CLASS as LOCK_NAMESPACE } from '../advisory-locks.ts';
import { run, type Executor } from './executor.ts';

interface Transactional {
  transaction<T>(work: (tx: Executor) => Promise<T>): Promise<T>;
}

/**
 * Runs `work` in a transaction holding the advisory lock for `task`. Returns `{ ran: false }`
 * when another process holds it.
 */
export async function withMaintenanceLock<T>(
  db: Transactional,
  task: string,
  work: (tx: Executor) => Promise<T>,
): Promise<{ ran: true; result: T } | { ran: false }> {
  return db.transaction(async (tx) => {
    const [row] = await run<{ locked: boolean }>(
      tx,
      sql`SELECT pg_try_advisory_xact_lock(${LOCK_NAMESPACE}, hashtext(${task})) AS locked`,
    );
    if (!row?.locked) return { ran: false } as const;
    return { ran: true, result: await work(tx) } as const;
  });
}
