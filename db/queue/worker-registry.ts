/**
 * The worker registry: live worker processes, for operators and the dashboard. A worker
 * records itself at start, refreshes `last_seen_at` while it runs and removes itself on a
 * graceful stop; entries that stop refreshing (SIGKILL, lost host) are removed as stale.
 *
 * With its entry a worker records the kind versions it runs (`worker_kinds`, removed with the
 * entry): "a live worker runs kind K version V" is such a row of a worker seen within
 * LIVE_WORKER_SECONDS. The dashboard counts the ready jobs no live worker runs, and
 * maintenance ends them `dead` after the grace period (deadIfKindUnrun, reap.ts).
 */
import { sql } from 'drizzle-orm';
import { run, toDate, type Executor, type PgTimestamp } from './executor.ts';

/** A worker is live while its entry was refreshed this recently (it refreshes every 10 s). */
export const LIVE_WORKER_SECONDS = 60;

export interface WorkerInfo {
  id: string;
  host: string;
  pid: number;
  queues: string[];
  concurrency: number;
  version?: string | null;
  /** The schema version of the Leasehold code it runs (SCHEMA_VERSION); a worker passes its own. */
  codeVersion?: number | null;
  /** The oldest schema version its code reads (SUPPORTED_SCHEMA.min); a worker passes its own. */
  schemaFrom?: number | null;
  /** The kind versions it runs (its handlers'). */
  kinds?: readonly { kind: string; version: number }[] | undefined;
}

/** Records (or re-records) the entry and exactly the kind versions given, in one statement. */
export async function registerWorker(executor: Executor, info: WorkerInfo): Promise<void> {
  const kinds = JSON.stringify((info.kinds ?? []).map((k) => ({ kind: k.kind, version: k.version })));
  await run(
    executor,
    sql`WITH entry AS (
          INSERT INTO leasehold.workers (id, host, pid, queues, concurrency, version, code_version, schema_from)
          VALUES (${info.id}, ${info.host}, ${info.pid}, ${sql.param(info.queues)}::text[], ${info.concurrency}, ${info.version ?? null},
                  ${info.codeVersion ?? null}::int, ${info.schemaFrom ?? null}::int)
          ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, queues = excluded.queues,
            concurrency = excluded.concurrency, version = excluded.version, code_version = excluded.code_version,
            schema_from = excluded.schema_from,
            last_seen_at = statement_timestamp()
          RETURNING id
        ),
        given AS (SELECT DISTINCT k.kind, k.version FROM jsonb_to_recordset(${kinds}::jsonb) AS k(kind text, version int)),
        dropped AS (
          DELETE FROM leasehold.worker_kinds wk WHERE wk.worker_id = ${info.id}
            AND NOT EXISTS (SELECT 1 FROM given g WHERE g.kind = wk.kind AND g.version = wk.version)
        )
        INSERT INTO leasehold.worker_kinds (worker_id, kind, version)
        SELECT e.id, g.kind, g.version FROM entry e, given g
        ON CONFLICT DO NOTHING`,
  );
}

/** Refreshes `last_seen_at`; false when the entry is gone (removed as stale) and must be re-registered. */
export async function touchWorker(executor: Executor, id: string): Promise<boolean> {
  const rows = await run<{ id: string }>(
    executor,
    sql`UPDATE leasehold.workers SET last_seen_at = statement_timestamp() WHERE id = ${id} RETURNING id`,
  );
  return rows.length === 1;
}

export async function deregisterWorker(executor: Executor, id: string): Promise<void> {
  await run(executor, sql`DELETE FROM leasehold.workers WHERE id = ${id}`);
}

export async function removeStaleWorkers(executor: Executor, staleAfterSeconds: number): Promise<number> {
  const rows = await run<{ id: string }>(
    executor,
    sql`DELETE FROM leasehold.workers WHERE last_seen_at < statement_timestamp() - make_interval(secs => ${staleAfterSeconds}::float8) RETURNING id`,
  );
  return rows.length;
}

/**
 * Workers seen within `seenWithinSeconds`, oldest first: each with the schema range its code
 * reads (code_version back to schema_from; null for older code) and the kind versions it runs.
 */
export async function listWorkers(executor: Executor, seenWithinSeconds: number) {
  const rows = await run<{
    id: string;
    host: string;
    pid: number;
    queues: string[];
    concurrency: number;
    version: string | null;
    code_version: number | null;
    schema_from: number | null;
    kinds: { kind: string; version: number }[];
    started_at: PgTimestamp;
    last_seen_at: PgTimestamp;
  }>(
    executor,
    sql`SELECT w.id, w.host, w.pid, w.queues, w.concurrency, w.version, w.code_version, w.schema_from, w.started_at, w.last_seen_at,
          coalesce((SELECT jsonb_agg(jsonb_build_object('kind', k.kind, 'version', k.version) ORDER BY k.kind, k.version)
                    FROM leasehold.worker_kinds k WHERE k.worker_id = w.id), '[]'::jsonb) AS kinds
        FROM leasehold.workers w
        WHERE w.last_seen_at >= statement_timestamp() - make_interval(secs => ${seenWithinSeconds}::float8) ORDER BY w.started_at`,
  );
  return rows.map((r) => ({
    id: r.id,
    host: r.host,
    pid: r.pid,
    queues: r.queues,
    concurrency: r.concurrency,
    version: r.version,
    codeVersion: r.code_version,
    schemaFrom: r.schema_from,
    kinds: r.kinds,
    startedAt: toDate(r.started_at),
    lastSeenAt: toDate(r.last_seen_at),
  }));
}
