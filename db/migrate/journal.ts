/**
 * Leasehold's migration journal: one row per applied migration, in schema `leasehold`, never
 * shared with an application's Drizzle journal (`drizzle.__drizzle_migrations`). Drizzle's
 * migrator applies what is newer than its latest row's timestamp, so one application row
 * dated later than ours made it skip every Leasehold migration and report success; this
 * journal is matched by name, in the list's order.
 *
 * Before anything is applied the journal is compared with the list, and the runner refuses
 * with a sentence when they disagree (an unknown migration, a changed file, a gap, a moved
 * entry): applying anything then could only make it worse.
 */
import { LeaseholdError } from '../errors.ts';
import type { Migration } from './files.ts';
import type { PgTimestamp } from '../queue/executor.ts';

/** The schema Leasehold owns: its tables, its journal. */
export const LEASEHOLD_SCHEMA = 'leasehold';
/** Leasehold's own journal table (in LEASEHOLD_SCHEMA). */
export const JOURNAL_TABLE = 'migrations';

/** How long a migration's statement waits for a lock before the migration fails (ms). */
export const DEFAULT_LOCK_TIMEOUT_MS = 5000;

/** The lock timeout asked for, checked (it goes into SQL text). */
export function checkedLockTimeout(ms: number | undefined): number {
  const value = ms ?? DEFAULT_LOCK_TIMEOUT_MS;
  if (!Number.isInteger(value) || value < 1) {
    throw new Error(`Leasehold migrate: lockTimeoutMs must be a whole number of milliseconds, at least 1, not ${ms}`);
  }
  return value;
}

/** `SET LOCAL lock_timeout` inside a migration's transaction; plain `SET` for a step outside one. */
export function setLockTimeout(ms: number, local: boolean): string {
  return `SET ${local ? 'LOCAL ' : ''}lock_timeout = '${ms}ms'`;
}

export interface JournalRow {
  name: string;
  position: number;
  checksum: string;
  schema_version: number;
  compatible_from: number;
  applied_at: PgTimestamp;
}

/** A migration the runner will not apply, or will not go on from. */
export class MigrationRefused extends LeaseholdError {
  readonly code = 'migration_refused';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MigrationRefused';
  }

  /** The message is the sentence; the CLI exits 1 (the database is not as the runner needs). */
  override get sentence(): boolean {
    return true;
  }
}

/** `leasehold.<table>`, for a table name checked to need no quoting. */
export function journalName(table: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(table)) {
    throw new Error(`Leasehold migrate: the journal table name "${table}" must be lower-case letters, digits and _`);
  }
  return `${LEASEHOLD_SCHEMA}.${table}`;
}

/** What creates the schema and the journal when they are missing (each statement on its own). */
export function bootstrapStatements(table: string): string[] {
  return [
    `CREATE SCHEMA IF NOT EXISTS ${LEASEHOLD_SCHEMA}`,
    `CREATE TABLE IF NOT EXISTS ${journalName(table)} (
  name text PRIMARY KEY,
  position integer NOT NULL UNIQUE,
  checksum text NOT NULL,
  schema_version integer NOT NULL,
  compatible_from integer NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
)`,
  ];
}

/** The journal row's insert; its parameters come from `journalValues`. */
export function insertStatement(table: string): string {
  return `INSERT INTO ${journalName(table)} (name, position, checksum, schema_version, compatible_from) VALUES ($1, $2, $3, $4, $5)`;
}

export function journalValues(m: Migration): [string, number, string, number, number] {
  return [m.name, m.position, m.checksum, m.schemaVersion, m.compatibleFrom];
}

export function selectJournal(table: string): string {
  return `SELECT name, position, checksum, schema_version, compatible_from, applied_at FROM ${journalName(table)} ORDER BY position`;
}

/**
 * The migrations still to apply, after checking the journal against the list. Throws
 * MigrationRefused, naming the migration, when the database has one this list does not, a
 * file changed after it was applied, an applied one sits elsewhere in the list now, or an
 * earlier one is unapplied while a later one is applied.
 */
export function pendingAfter(migrations: readonly Migration[], applied: readonly JournalRow[]): Migration[] {
  const byName = new Map(migrations.map((m) => [m.name, m]));
  for (const row of applied) {
    const known = byName.get(row.name);
    if (!known) {
      throw new MigrationRefused(
        `Leasehold will not migrate: the database has migration "${row.name}" (applied ${iso(row.applied_at)}) ` +
          'that this version of Leasehold does not know: it was migrated by a newer version of Leasehold, or by ' +
          'a branch with migrations of its own. Run the version that applied it, or restore the database from ' +
          'before it; do not delete its journal row.',
      );
    }
    if (known.checksum !== row.checksum) {
      throw new MigrationRefused(
        `Leasehold will not migrate: migration "${row.name}" was applied (${iso(row.applied_at)}) from a file with ` +
          `checksum ${row.checksum.slice(0, 12)}…, and ${known.file} now has ` +
          `${known.checksum.slice(0, 12)}…: someone edited a migration that had already landed. Restore the file as ` +
          'it was applied and put the change in a new migration (drizzle-kit generate).',
      );
    }
  }
  const appliedNames = new Set(applied.map((r) => r.name));
  const lastApplied = migrations.findLast((m) => appliedNames.has(m.name));
  const gap = lastApplied
    ? migrations.find((m) => m.position < lastApplied.position && !appliedNames.has(m.name))
    : undefined;
  if (gap && lastApplied) {
    throw new MigrationRefused(
      `Leasehold will not migrate: migration "${gap.name}" is not applied, but the later "${lastApplied.name}" ` +
        `is: "${gap.name}" joined the list after "${lastApplied.name}" had run (a merge of two branches?). Move ` +
        `it after "${lastApplied.name}" (delete it and generate it again), so it applies last.`,
    );
  }
  for (const row of applied) {
    const known = byName.get(row.name)!;
    if (known.position !== row.position) {
      throw new MigrationRefused(
        `Leasehold will not migrate: migration "${row.name}" was applied as number ${row.position + 1}, and ` +
          `meta/_journal.json now lists it as number ${known.position + 1}: the list was reordered after it ` +
          'landed. Put the applied migrations back in the order they were applied.',
      );
    }
  }
  return migrations.filter((m) => !appliedNames.has(m.name));
}

function iso(at: PgTimestamp): string {
  return at instanceof Date ? at.toISOString() : String(at);
}
