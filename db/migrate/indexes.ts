/**
 * Invalid indexes in schema `leasehold`: what a failed `CREATE INDEX CONCURRENTLY` (or `REINDEX
 * CONCURRENTLY`) leaves behind. PostgreSQL keeps such an index (pg_index.indisvalid = false):
 * every write maintains it, no query uses it, and `CREATE INDEX CONCURRENTLY IF NOT EXISTS`
 * then skips it, so a re-run of the failed step would "succeed" without the index.
 *
 * The runner looks for them when it starts and before each step outside a transaction, and:
 * - drops one that a pending step builds (the step then builds it again, from scratch);
 * - drops one whose name ends in `_ccnew`/`_ccold` (the half of a failed REINDEX CONCURRENTLY);
 * - rebuilds any other with `REINDEX INDEX CONCURRENTLY` (an applied migration's index).
 * Schemas other than `leasehold` are the application's: never touched. The search indexes
 * (`jobs_search_*`) are search-indexes.ts's: it drops and builds an invalid one itself.
 */
import type { Migration } from './files.ts';
import { concurrentIndexNames } from './files.ts';
import { LEASEHOLD_SCHEMA } from './journal.ts';

export interface InvalidIndex {
  name: string;
  table: string;
}

export interface IndexRepair {
  index: string;
  statement: string;
  /** Why this repair, in words (the runner logs it; the printed SQL has it as a comment). */
  why: string;
}

export const INVALID_INDEXES_SQL = `SELECT c.relname AS name, t.relname AS table
FROM pg_index i
JOIN pg_class c ON c.oid = i.indexrelid
JOIN pg_class t ON t.oid = i.indrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = '${LEASEHOLD_SCHEMA}' AND NOT i.indisvalid AND c.relname NOT LIKE 'jobs\\_search\\_%'
ORDER BY c.relname`;

const LEFTOVER = /_cc(?:new|old)\d*$/;

export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** The repairs for `invalid`, drops first, given the migrations still to apply. */
export function planRepairs(invalid: readonly InvalidIndex[], pending: readonly Migration[]): IndexRepair[] {
  const repairs = invalid.map(({ name, table }): IndexRepair => {
    const qualified = `${LEASEHOLD_SCHEMA}.${quoteIdent(name)}`;
    const step = pending.find(
      (m) => !m.transaction && m.statements.some((s) => concurrentIndexNames(s).includes(name)),
    );
    if (step) {
      return {
        index: name,
        statement: `DROP INDEX CONCURRENTLY IF EXISTS ${qualified}`,
        why: `index ${qualified} on ${table} is invalid (a concurrent build failed); migration "${step.name}" builds it again`,
      };
    }
    if (LEFTOVER.test(name)) {
      return {
        index: name,
        statement: `DROP INDEX CONCURRENTLY IF EXISTS ${qualified}`,
        why: `index ${qualified} on ${table} is what a failed REINDEX CONCURRENTLY left`,
      };
    }
    return {
      index: name,
      statement: `REINDEX INDEX CONCURRENTLY ${qualified}`,
      why: `index ${qualified} on ${table} is invalid (a concurrent build failed); rebuilding it`,
    };
  });
  const drops = repairs.filter((r) => r.statement.startsWith('DROP'));
  return [...drops, ...repairs.filter((r) => !drops.includes(r))];
}
