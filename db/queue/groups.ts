/**
 * Fair groups' upkeep (docs/flow-control.md, "Fair groups"): the sweep of `ready_groups`.
 *
 * The grouped claim (transitions/claim-grouped.ts) marks a group it looked at and found nothing
 * due in (`idle_since`), and moves its turn on. The sweep, in the worker's maintenance round,
 * then deletes the group's row when the group has no ready job left, so the turns hold only
 * groups with work and a claim never reads a long tail of emptied ones; and when a job came
 * into the group while that claim ran (its enqueue could not see the claim's uncommitted turn,
 * nor the claim the uncommitted job), it brings the group's turn back to now.
 *
 * Why two statements in one transaction: the first locks the idle rows FOR UPDATE SKIP LOCKED,
 * skipping every row an uncommitted enqueue holds FOR KEY SHARE (leasehold.hold_ready_groups);
 * the second, whose snapshot is taken after those locks, sees every job committed before them,
 * and an enqueue that comes after them waits for this transaction, then finds the row gone and
 * adds it again. So a group's row is never deleted under a ready job.
 */
import { sql } from 'drizzle-orm';
import { autocommits, run, type Executor } from './executor.ts';

/** Idle groups one sweep looks at, at most. */
export const GROUP_SWEEP_BATCH = 1000;

export interface GroupSweep {
  /** Idle groups looked at. */
  looked: number;
  /** Rows deleted: groups without a ready job. */
  removed: number;
  /** Groups whose turn came back: a job of theirs is due. */
  returned: number;
}

/**
 * Sweeps up to `limit` idle groups. `tx` must be a transaction (the worker's maintenance round
 * runs it in the round's own): the lock of the first statement must last through the second.
 */
export async function sweepReadyGroups(tx: Executor, limit = GROUP_SWEEP_BATCH): Promise<GroupSweep> {
  if (autocommits(tx))
    throw new Error('Leasehold: sweepReadyGroups needs a transaction (its locks must outlast a statement)');
  type Key = { queue: string; kind: string; kind_version: number; group_key: string };
  const idle = await run<Key>(
    tx,
    sql`SELECT queue, kind, kind_version, group_key FROM leasehold.ready_groups
        WHERE idle_since IS NOT NULL ORDER BY idle_since LIMIT ${limit}::int
        FOR UPDATE SKIP LOCKED`,
  );
  if (idle.length === 0) return { looked: 0, removed: 0, returned: 0 };
  const [row] = await run<{ removed: number; returned: number }>(
    tx,
    sql`WITH w AS (
          SELECT * FROM unnest(${sql.param(idle.map((k) => k.queue))}::text[], ${sql.param(idle.map((k) => k.kind))}::text[],
                               ${sql.param(idle.map((k) => k.kind_version))}::int[], ${sql.param(idle.map((k) => k.group_key))}::text[])
            AS w(queue, kind, kind_version, group_key)
        ),
        looked AS (
          SELECT g.ctid AS gid,
                 EXISTS (SELECT 1 FROM leasehold.grouped_ready_jobs r
                         WHERE r.queue = g.queue AND r.kind = g.kind AND r.kind_version = g.kind_version
                           AND r.group_key = g.group_key) AS holds,
                 EXISTS (SELECT 1 FROM leasehold.grouped_ready_jobs r
                         WHERE r.queue = g.queue AND r.kind = g.kind AND r.kind_version = g.kind_version
                           AND r.group_key = g.group_key
                           AND r.claim_at <= statement_timestamp() AND r.run_at <= statement_timestamp()) AS due
          FROM leasehold.ready_groups g JOIN w
            ON g.queue = w.queue AND g.kind = w.kind AND g.kind_version = w.kind_version AND g.group_key = w.group_key
        ),
        removed AS (
          DELETE FROM leasehold.ready_groups g USING looked l WHERE g.ctid = l.gid AND NOT l.holds RETURNING 1
        ),
        kept AS (
          UPDATE leasehold.ready_groups g
          SET idle_since = NULL,
              turn_at = CASE WHEN l.due THEN least(g.turn_at, statement_timestamp()) ELSE g.turn_at END
          FROM looked l WHERE g.ctid = l.gid AND l.holds
          RETURNING l.due AS returned
        )
        SELECT (SELECT count(*)::int FROM removed) AS removed,
               (SELECT count(*)::int FROM kept WHERE returned) AS returned`,
  );
  return { looked: idle.length, removed: row?.removed ?? 0, returned: row?.returned ?? 0 };
}

/**
 * Which of `queues` hold grouped jobs (a row of `ready_groups`: one index probe a queue). A
 * worker asks at start and at each registry refresh, so its grouped claims run only where
 * grouped jobs may wait (workers/producer.ts).
 */
export async function groupedQueues(executor: Executor, queues: readonly string[]): Promise<string[]> {
  if (queues.length === 0) return [];
  const rows = await run<{ queue: string }>(
    executor,
    sql`SELECT q.queue FROM unnest(${sql.param([...queues])}::text[]) AS q(queue)
        WHERE EXISTS (SELECT 1 FROM leasehold.ready_groups g WHERE g.queue = q.queue)
        ORDER BY 1`,
  );
  return rows.map((r) => r.queue);
}

/**
 * A grouped job's wake-up payload: its queue and ` grouped` (a queue name holds no space). A
 * worker of this release then runs its grouped claims of the queue; one of an earlier release
 * serves no queue of that name and ignores it (it never takes a grouped job).
 */
export const GROUPED_WAKE_SUFFIX = ' grouped';
