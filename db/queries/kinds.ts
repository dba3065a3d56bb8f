/**
 * Read models over the kinds registry (`leasehold.kinds`, filled by workers at start, see
 * db/queue/kinds.ts): the kinds page, and the redacted paths a job page masks. The web process
 * learns what is secret in a payload here, never from a handler's code.
 */
import { sql, type SQL } from 'drizzle-orm';
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
  /**
   * What this kind version can be searched by: the paths its workers declared and the ones
   * admins added for the kind, each with its index's state (db/migrate/search-indexes.ts):
   * `ready`, `building` (a concurrent build running, or one that failed), `missing`.
   */
  searchPaths: { path: string; added: boolean; index: SearchIndexState }[];
  firstSeenAt: Date;
  lastSeenAt: Date;
}

export type SearchIndexState = 'ready' | 'building' | 'missing';

/**
 * The state of (kind, path)'s search index by its name (`jobs_search_` and 16 hex of
 * md5(kind:path), as db/migrate/search-indexes.ts names it): valid, invalid, or none.
 */
const INDEX_STATE = (kind: SQL, path: SQL) =>
  sql`coalesce((SELECT CASE WHEN i.indisvalid THEN 'ready' ELSE 'building' END
               FROM pg_catalog.pg_class c JOIN pg_catalog.pg_index i ON i.indexrelid = c.oid
               WHERE c.relnamespace = 'leasehold'::regnamespace
                 AND c.relname = 'jobs_search_' || left(md5(${kind} || ':' || ${path}), 16)), 'missing')`;

const toIndexState = (s: string): SearchIndexState => (s === 'ready' || s === 'building' ? s : 'missing');

/** Every registered kind version, by kind then version (at most MAX_LISTED_KINDS). */
export async function listKinds(executor: Executor): Promise<KindEntry[]> {
  const rows = await run<{
    kind: string;
    version: number;
    default_queue: string;
    display_name: string;
    redacted_paths: string[];
    added_paths: string[];
    search_paths: { path: string; added: boolean; index: string }[] | null;
    rerun_safe: boolean;
    first_seen_at: PgTimestamp;
    last_seen_at: PgTimestamp;
  }>(
    executor,
    sql`SELECT k.kind, k.version, k.default_queue, k.display_name, k.redacted_paths, k.rerun_safe, k.first_seen_at,
               k.last_seen_at,
               ARRAY(SELECT r.path FROM leasehold.kind_redactions r WHERE r.kind = k.kind ORDER BY r.path COLLATE "C") AS added_paths,
               (SELECT json_agg(json_build_object('path', p.path, 'added', p.added, 'index', ${INDEX_STATE(sql`k.kind`, sql`p.path`)})
                       ORDER BY p.path COLLATE "C")
                FROM (SELECT d.path, false AS added FROM unnest(k.searchable_paths) AS d(path)
                      UNION SELECT s.path, true FROM leasehold.kind_search_paths s
                      WHERE s.kind = k.kind AND NOT s.path = ANY (k.searchable_paths)) p) AS search_paths
        FROM leasehold.kinds k ORDER BY k.kind COLLATE "C", k.version LIMIT ${MAX_LISTED_KINDS}`,
  );
  return rows.map((r) => ({
    kind: r.kind,
    version: r.version,
    defaultQueue: r.default_queue,
    displayName: r.display_name,
    redactedPaths: r.redacted_paths,
    addedPaths: r.added_paths,
    searchPaths: (r.search_paths ?? []).map((p) => ({ path: p.path, added: p.added, index: toIndexState(p.index) })),
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

/**
 * The kinds `path` is searchable in (declared by some version, or added by an admin), each with
 * its index's state; `kind` given: that kind alone (none when the path is not searchable there).
 */
export async function searchableKinds(
  executor: Executor,
  path: string,
  kind?: string,
): Promise<{ kind: string; index: SearchIndexState }[]> {
  const rows = await run<{ kind: string; index: string }>(
    executor,
    sql`SELECT p.kind, ${INDEX_STATE(sql`p.kind`, sql`p.path`)} AS index
        FROM (SELECT k.kind, ${path}::text AS path FROM leasehold.kinds k WHERE ${path}::text = ANY (k.searchable_paths)
              UNION SELECT s.kind, s.path FROM leasehold.kind_search_paths s WHERE s.path = ${path}) p
        WHERE ${kind ?? null}::text IS NULL OR p.kind = ${kind ?? null}::text
        ORDER BY p.kind COLLATE "C" LIMIT ${MAX_LISTED_KINDS}`,
  );
  return rows.map((r) => ({ kind: r.kind, index: toIndexState(r.index) }));
}

/**
 * The redacted paths of every registered version of each of `kinds` (declared and admin-added,
 * as redactedPathsOf): what a search checks its path against for a role that sees masked.
 */
export async function redactedPathsByVersion(
  executor: Executor,
  kinds: readonly string[],
): Promise<{ kind: string; version: number; paths: string[] }[]> {
  if (kinds.length === 0) return [];
  const rows = await run<{ kind: string; version: number; redacted_paths: string[] }>(
    executor,
    sql`SELECT k.kind, k.version,
               k.redacted_paths || ARRAY(SELECT r.path FROM leasehold.kind_redactions r WHERE r.kind = k.kind) AS redacted_paths
        FROM leasehold.kinds k WHERE k.kind = ANY (${sql.param([...kinds])}::text[])`,
  );
  return rows.map((r) => ({ kind: r.kind, version: r.version, paths: r.redacted_paths }));
}
