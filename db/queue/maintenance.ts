/**
 * Maintenance (reaper, unknown kinds, retention) may run in every worker process, but at most
 * one instance of each task is active per database at a time: the task runs inside a
 * transaction that holds its row of `leasehold.maintenance_locks` (`FOR UPDATE SKIP LOCKED`),
 * so the others skip the round. The row lock ends with the transaction, so a worker that dies
 * cannot leave it held, and it needs no session state (PgBouncer's transaction mode keeps none).
 *
 * Only the worker role may lock those rows (a row lock needs UPDATE on the table, which
 * db/roles.sql grants the worker alone): a producer or dashboard login cannot stop the reaper.
 * While workers of the previous release are supported (they take only the advisory lock), the
 * round also try-locks the transaction advisory lock `(19528, hashtext(task))` those workers
 * take (db/advisory-locks.ts), so old and new never run a task at once; held by a login that is
 * not a worker's (a producer's, the dashboard's), it does not make the round skip. That lock
 * goes when `compatible-from` is raised past schema version 8 (docs/versioning.md).
 */
import { sql } from 'drizzle-orm';
import { MAINTENANCE_LOCK_CLASS as LOCK_NAMESPACE } from '../advisory-locks.ts';
import { run, type Executor } from './executor.ts';

interface Transactional {
  transaction<T>(work: (tx: Executor) => Promise<T>): Promise<T>;
}

/**
 * Runs `work` in a transaction holding the lock for `task`. Returns `{ ran: false }` when
 * another process holds it. A task with no row yet (the migration made rows for `reaper`,
 * `unknown kinds` and `retention`) gets one first, in a transaction of its own that commits at
 * once, so no round ever waits on another's uncommitted row.
 */
export async function withMaintenanceLock<T>(
  db: Transactional,
  task: string,
  work: (tx: Executor) => Promise<T>,
): Promise<{ ran: true; result: T } | { ran: false }> {
  for (let round = 0; ; round++) {
    const outcome = await db.transaction(async (tx) => {
      const [row] = await run<{ locked: boolean; known: boolean }>(
        tx,
        sql`WITH mine AS (SELECT task FROM leasehold.maintenance_locks WHERE task = ${task} FOR UPDATE SKIP LOCKED)
            SELECT EXISTS (SELECT 1 FROM mine) AS locked,
                   EXISTS (SELECT 1 FROM leasehold.maintenance_locks WHERE task = ${task}) AS known`,
      );
      if (row?.locked !== true) return row?.known === true ? ({ ran: false } as const) : ('unknown' as const);
      // The previous release's lock, for as long as its workers are supported. Held by a session
      // that is not a worker's (any login can take an advisory lock), it is no reason to skip.
      const [legacy] = await run<{ locked: boolean; by_worker: boolean }>(
        tx,
        sql`SELECT pg_try_advisory_xact_lock(${LOCK_NAMESPACE}, hashtext(${task})) AS locked,
                   EXISTS (
                     SELECT 1 FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
                     WHERE l.locktype = 'advisory' AND l.granted AND l.pid <> pg_catalog.pg_backend_pid()
                       AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
                       AND l.classid = ${LOCK_NAMESPACE} AND l.objid = hashtext(${task})::oid AND l.objsubid = 2
                       AND (pg_catalog.to_regrole('leasehold_worker') IS NULL
                            OR pg_catalog.pg_has_role(a.usesysid, 'leasehold_worker', 'MEMBER'))
                   ) AS by_worker`,
      );
      if (!legacy?.locked && legacy?.by_worker !== false) return { ran: false } as const;
      return { ran: true, result: await work(tx) } as const;
    });
    if (outcome !== 'unknown') return outcome;
    if (round > 0) return { ran: false };
    await db.transaction((tx) =>
      run(tx, sql`INSERT INTO leasehold.maintenance_locks (task) VALUES (${task}) ON CONFLICT (task) DO NOTHING`),
    );
  }
}
