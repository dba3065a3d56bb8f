/**
 * Read models over the kinds registry (`leasehold.kinds`, filled by workers at start, see
 * db/queue/kinds.ts): the kinds page, and the redacted paths a job page masks. The web process
 * learns what is secret in a payload here, never from a handler's code.
 */
import { sql } from 'drizzle-orm';
import { run, toDate, type Executor, type PgTimestamp } from '../queue/executor.ts';

/** Kind versions a page lists at most: a fleet has tens, not thousands. */
export const MAX_LISTED_KINDS = 1000;

export interface KindEntry {
  kind: string;
  version: number;
  defaultQueue: string;
  displayName: string;
  redactedPaths: string[];
  rerunSafe: boolean;
  firstSeenAt: Date;
  lastSeenAt: Date;
}

/** Every registered kind version, by kind then version (at most MAX_LISTED_KINDS). */
export async function listKinds(executor: Executor): Promise<KindEntry[]> {
  const rows = await run<{
    kind: string;
    version: number;
    default_queue: string;
    display_name: string;
    redacted_paths: string[];
    rerun_safe: boolean;
    first_seen_at: PgTimestamp;
    last_seen_at: PgTimestamp;
  }>(
    executor,
    sql`SELECT kind, version, default_queue, display_name, redacted_paths, rerun_safe, first_seen_at, last_seen_at
        FROM leasehold.kinds ORDER BY kind COLLATE "C", version LIMIT ${MAX_LISTED_KINDS}`,
  );
  return rows.map((r) => ({
    kind: r.kind,
    version: r.version,
    defaultQueue: r.default_queue,
    displayName: r.display_name,
    redactedPaths: r.redacted_paths,
    rerunSafe: r.rerun_safe,
    firstSeenAt: toDate(r.first_seen_at),
    lastSeenAt: toDate(r.last_seen_at),
  }));
}

/** The redacted paths of one kind version, or null when no worker has registered it. */
export async function redactedPathsOf(executor: Executor, kind: string, version: number): Promise<string[] | null> {
  const rows = await run<{ redacted_paths: string[] }>(
    executor,
    sql`SELECT redacted_paths FROM leasehold.kinds WHERE kind = ${kind} AND version = ${version}::int`,
  );
  return rows[0] ? rows[0].redacted_paths : null;
}
