/**
 * Read models for the support actions (db/queue/support-actions.ts): whether a job's kind
 * version may be re-run, which jobs a re-run links (its original, its copies), and a purge's
 * preview (how many dead jobs of a queue finished before a date, and the frozen id set).
 */
import { sql } from 'drizzle-orm';
import { run, type Executor } from '../queue/executor.ts';

/** Whether the kind version is registered re-run safe (kinds.rerun_safe); false when not registered. */
export async function rerunSafe(executor: Executor, kind: string, version: number): Promise<boolean> {
  const [row] = await run<{ rerun_safe: boolean }>(
    executor,
    sql`SELECT rerun_safe FROM leasehold.kinds WHERE kind = ${kind} AND version = ${version}::int`,
  );
  return row?.rerun_safe === true;
}

export interface RerunLinks {
  /** The done job this one is a copy of. */
  rerunOf: string | null;
  /** The copies an operator's re-runs made of this job, oldest first (at most 20). */
  rerunAs: string[];
}

/**
 * A job's re-run links: its own `rerun_of`, and its copies. The copies are found by the re-runs'
 * audit rows (job_ids = [original, copy], by the audit log's GIN index on job_ids), not by a scan
 * of jobs: no index names rerun_of, which would cost every enqueue. A copy whose audit row
 * retention removed is not listed here (the copy's own page still names its original).
 */
export async function rerunLinks(executor: Executor, id: string): Promise<RerunLinks> {
  const [own, copies] = await Promise.all([
    run<{ rerun_of: string | null }>(executor, sql`SELECT rerun_of FROM leasehold.jobs WHERE id = ${id}::uuid`),
    run<{ copy: string }>(
      executor,
      sql`SELECT detail->>'copy' AS copy FROM leasehold.audit_log
          WHERE job_ids @> ARRAY[${id}::uuid] AND action = 'rerun' AND outcome = 'applied' AND job_ids[1] = ${id}::uuid
          ORDER BY id LIMIT 20`,
    ),
  ]);
  return { rerunOf: own[0]?.rerun_of ?? null, rerunAs: copies.map((c) => c.copy) };
}

/** Counted up to this many; a preview says "more than" past it. */
export const PURGE_COUNT_CAP = 100_000;

export interface PurgePreview {
  /** Dead jobs of the queue finished before the date (up to PURGE_COUNT_CAP + 1). */
  matched: number;
  /** The frozen set a purge takes: the first `cap` of them by id. */
  ids: string[];
}

/** The dead jobs of `queue` that finished before `before`: how many, and the first `cap` ids. */
export async function purgePreview(
  executor: Executor,
  queue: string,
  before: Date,
  cap: number,
): Promise<PurgePreview> {
  const where = sql`queue = ${queue} AND state = 'dead' AND finished_at < ${before.toISOString()}::timestamptz`;
  const [counted, ids] = await Promise.all([
    run<{ n: number }>(
      executor,
      sql`SELECT count(*)::int AS n FROM (SELECT 1 FROM leasehold.jobs WHERE ${where} LIMIT ${PURGE_COUNT_CAP + 1}) m`,
    ),
    run<{ id: string }>(executor, sql`SELECT id FROM leasehold.jobs WHERE ${where} ORDER BY id LIMIT ${cap}`),
  ]);
  return { matched: counted[0]?.n ?? 0, ids: ids.map((r) => r.id) };
}
