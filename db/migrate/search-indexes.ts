/**
 * The per-path search indexes (docs/dashboard.md, "Search"): for every searchable (kind, path),
 * declared by the kind's handlers (kinds.searchable_paths) or added by an admin
 * (kind_search_paths), one partial expression index on that kind's jobs alone:
 *
 *   CREATE INDEX CONCURRENTLY IF NOT EXISTS jobs_search_<16 hex of md5(kind:path)>
 *     ON leasehold.jobs (left((payload #>> '{customer,email}'), 512), created_at DESC, id DESC)
 *     WHERE kind = '<kind>'
 *
 * Invariants:
 * - an index exists only for a (kind, path) searchable now: `jobs_search_*` indexes no longer
 *   declared are dropped (CONCURRENTLY), so another kind's enqueue maintains none of them and
 *   writes the same WAL as without search (bench/search-wal.test.ts measures it to the byte);
 * - the search's expression and the index's are the same text, made here once
 *   (`searchExpression`): PostgreSQL matches an expression index by its expression, so a query
 *   spelling it otherwise (a path as a parameter) would walk the kind's jobs instead;
 * - a concurrent build that failed leaves an invalid index (pg_index.indisvalid), which `IF NOT
 *   EXISTS` would skip for ever: it is dropped and built again;
 * - DDL runs as the migrator (the table's owner), outside a transaction, under a lock_timeout,
 *   while the caller holds the migration lock (one build at a time per database): a SECURITY
 *   DEFINER function cannot run CREATE INDEX CONCURRENTLY.
 *
 * Splicing (CONTRIBUTING.md, "Splice allowlist"): the path and the kind are spliced into DDL
 * and into the search's expression, each checked first against its pattern (SEARCH_PATH_PATTERN:
 * letters, digits, `_` and dots; NAME_PATTERN: no quote), and quoted as a literal besides.
 */
import { createHash } from 'node:crypto';
import { sql, type SQL } from 'drizzle-orm';
import { runText, type Executor } from '../queue/executor.ts';
import { SEARCH_PATH_PATTERN } from '../queue/kinds.ts';
import { NAME_PATTERN } from '../queue/validate.ts';

/** The prefix of every search index's name (and only theirs). */
export const SEARCH_INDEX_PREFIX = 'jobs_search_';

function checkedPath(path: string): string {
  if (path.length > 200 || !SEARCH_PATH_PATTERN.test(path)) {
    throw new RangeError(`Leasehold search: ${JSON.stringify(path.slice(0, 80))} is not a searchable path`);
  }
  return path;
}

function checkedKind(kind: string): string {
  if (!NAME_PATTERN.test(kind)) throw new RangeError(`Leasehold search: ${JSON.stringify(kind)} is not a kind name`);
  return kind;
}

const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** The index of (kind, path): `jobs_search_` and the first 16 hex digits of md5(kind || ':' || path). */
export function searchIndexName(kind: string, path: string): string {
  return SEARCH_INDEX_PREFIX + createHash('md5').update(`${kind}:${path}`, 'utf8').digest('hex').slice(0, 16);
}

/** The path as a text array literal: `'{customer,email}'` (the keys need no quoting: the pattern allows none). */
const pathLiteral = (path: string) => literal(`{${checkedPath(path).split('.').join(',')}}`);

/** The most characters of a value the index keeps: a search value is at most this long. */
export const SEARCH_VALUE_MAX = 512;

/**
 * The indexed expression's text: the value's first 512 characters, `left((payload #>>
 * '{customer,email}'), 512)`. Cut, because a btree entry holds at most about 2.7 kB: a long string
 * (or an object's text) at a searchable path would otherwise fail the index's build, and then
 * every enqueue of the kind. 512 characters are at most 2 kB of UTF-8.
 */
function expressionText(path: string): string {
  return `left((payload #>> ${pathLiteral(path)}), ${SEARCH_VALUE_MAX})`;
}

/**
 * The search's expression for `path`, as the index spells it (a fragment for drizzle statements).
 * @internal
 */
export function searchExpression(path: string): SQL {
  return sql.raw(expressionText(path));
}

/**
 * The search's whole-value condition beside the indexed one: the value itself equals (the index
 * holds its first 512 characters), and it is a string, number or boolean. An object's or array's
 * text is never matched: a search of `customer` with a JSON text as value would otherwise confirm
 * a value masked beneath it (`customer.email`), which no rule above the path shows.
 * @internal
 */
export function searchScalarCondition(path: string): SQL {
  return sql.raw(
    `jsonb_typeof(payload #> ${pathLiteral(path)}) NOT IN ('object', 'array') AND (payload #>> ${pathLiteral(path)})`,
  );
}

/**
 * The search's condition on one kind, as the partial index spells its predicate.
 * @internal
 */
export function searchKindCondition(kind: string): SQL {
  return sql.raw(`kind = ${literal(checkedKind(kind))}`);
}

/** The DDL that builds (kind, path)'s index. */
export function createSearchIndexSql(kind: string, path: string): string {
  return (
    `CREATE INDEX CONCURRENTLY IF NOT EXISTS ${searchIndexName(kind, path)} ON leasehold.jobs ` +
    `(${expressionText(path)}, created_at DESC, id DESC) WHERE kind = ${literal(checkedKind(kind))}`
  );
}

function checkedIndexName(name: string): string {
  if (!/^jobs_search_[0-9a-f]{16}$/.test(name)) throw new RangeError(`Leasehold search: ${name} is not a search index`);
  return name;
}

/** What one run did, by index name (each with its kind and path where known). */
export interface SearchIndexResult {
  /** Built now (missing before). */
  created: string[];
  /** Invalid (a failed or interrupted concurrent build): dropped and built again. */
  rebuilt: string[];
  /** No longer searchable: dropped. */
  dropped: string[];
  /** Already there and valid. */
  ready: string[];
}

/** Every searchable (kind, path): declared by some version of the kind, or added by an admin. */
export async function searchablePairs(executor: Executor): Promise<{ kind: string; path: string }[]> {
  return runText<{ kind: string; path: string }>(
    executor,
    `SELECT DISTINCT kind, path FROM (
       SELECT k.kind, unnest(k.searchable_paths) AS path FROM leasehold.kinds k
       UNION SELECT s.kind, s.path FROM leasehold.kind_search_paths s
     ) p ORDER BY 1, 2`,
    [],
  );
}

/** The search indexes there are, valid or not. */
async function existingIndexes(executor: Executor): Promise<Map<string, boolean>> {
  const rows = await runText<{ name: string; valid: boolean }>(
    executor,
    `SELECT c.relname AS name, i.indisvalid AS valid
     FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
     WHERE c.relnamespace = 'leasehold'::regnamespace AND i.indrelid = 'leasehold.jobs'::regclass
       AND c.relname ~ '^jobs_search_[0-9a-f]{16}$'`,
    [],
  );
  return new Map(rows.map((r) => [r.name, r.valid]));
}

/**
 * Builds the missing search indexes, rebuilds the invalid ones and drops the ones no longer
 * searchable, on `client` (a session of the migrator, outside any transaction, holding the
 * migration lock). `lockTimeoutMs` bounds each statement's wait for a lock. A statement that
 * fails throws, after the ones before it took effect; the next run goes on from there.
 */
export async function syncSearchIndexes(
  client: Executor,
  options: { lockTimeoutMs: number; log?: (line: string) => void },
): Promise<SearchIndexResult> {
  const log = options.log ?? (() => {});
  // A stored pair that is not a kind name and a searchable path (kinds.searchable_paths has no
  // CHECK of its own) is skipped, said in the log: one bad row must not stop every build.
  const pairs = (await searchablePairs(client)).filter((p) => {
    const ok = NAME_PATTERN.test(p.kind) && p.path.length <= 200 && SEARCH_PATH_PATTERN.test(p.path);
    if (!ok)
      log(
        `search: skipping ${JSON.stringify(p.kind)}'s path ${JSON.stringify(p.path.slice(0, 80))}: not a kind name and a searchable path`,
      );
    return ok;
  });
  const wanted = new Map(pairs.map((p) => [searchIndexName(p.kind, p.path), p]));
  const existing = await existingIndexes(client);
  const result: SearchIndexResult = { created: [], rebuilt: [], dropped: [], ready: [] };
  await runText(client, `SELECT set_config('lock_timeout', $1, false)`, [`${options.lockTimeoutMs}ms`]);
  try {
    for (const [name, valid] of existing) {
      if (wanted.has(name) && valid) continue;
      log(
        wanted.has(name)
          ? `search index ${name} is invalid (a concurrent build failed or was interrupted): building it again`
          : `search index ${name} is for a path no longer searchable: dropping it`,
      );
      await runText(client, `DROP INDEX CONCURRENTLY IF EXISTS leasehold.${checkedIndexName(name)}`, []);
      if (!wanted.has(name)) result.dropped.push(name);
    }
    for (const [name, { kind, path }] of wanted) {
      if (existing.get(name) === true) {
        result.ready.push(name);
        continue;
      }
      log(`building search index ${name} on ${kind}'s ${path}`);
      await runText(client, createSearchIndexSql(kind, path), []);
      (existing.has(name) ? result.rebuilt : result.created).push(name);
    }
  } finally {
    await runText(client, 'RESET lock_timeout', []).catch(() => {});
  }
  return result;
}
