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
  /** What the workers declared for this kind version (the floor: the dashboard cannot remove these). */
  redactedPaths: string[];
  /** What admins added for every version of the kind (leasehold.kind_redactions), sorted. */
  addedPaths: string[];
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
    added_paths: string[];
    rerun_safe: boolean;
    first_seen_at: PgTimestamp;
    last_seen_at: PgTimestamp;
  }>(
    executor,
    sql`SELECT k.kind, k.version, k.default_queue, k.display_name, k.redacted_paths, k.rerun_safe, k.first_seen_at,
               k.last_seen_at,
               ARRAY(SELECT r.path FROM leasehold.kind_redactions r WHERE r.kind = k.kind ORDER BY r.path COLLATE "C") AS added_paths
        FROM leasehold.kinds k ORDER BY k.kind COLLATE "C", k.version LIMIT ${MAX_LISTED_KINDS}`,
  );
  return rows.map((r) => ({
    kind: r.kind,
    version: r.version,
    defaultQueue: r.default_queue,
    displayName: r.display_name,
    redactedPaths: r.redacted_paths,
    addedPaths: r.added_paths,
    rerunSafe: r.rerun_safe,
    firstSeenAt: toDate(r.first_seen_at),
    lastSeenAt: toDate(r.last_seen_at),
  }));
}

/**
 * The redacted paths of one kind version: what its workers declared and what admins added for
 * the kind, in one statement; null when no worker has registered that version (admin-added
 * paths alone do not make a version known: its payload stays hidden whole).
 */
export async function redactedPathsOf(executor: Executor, kind: string, version: number): Promise<string[] | null> {
  const rows = await run<{ redacted_paths: string[] }>(
    executor,
    sql`SELECT k.redacted_paths || ARRAY(SELECT r.path FROM leasehold.kind_redactions r WHERE r.kind = k.kind) AS redacted_paths
        FROM leasehold.kinds k WHERE k.kind = ${kind} AND k.version = ${version}::int`,
  );
  return rows[0] ? [...new Set(rows[0].redacted_paths)] : null;
}

/** The versions of `kind` some worker has registered (the kinds registry), lowest first: none when no worker runs it. */
export async function registeredVersions(executor: Executor, kind: string): Promise<number[]> {
  const rows = await run<{ version: number }>(
    executor,
    sql`SELECT version FROM leasehold.kinds WHERE kind = ${kind} ORDER BY version`,
  );
  return rows.map((r) => r.version);
}
