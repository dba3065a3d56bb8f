/**
 * Leasehold's migration runner: applies the migrations in `drizzle/` (drizzle-kit's list, see
 * files.ts) by name, in the list's order, recording each in its own journal
 * `leasehold.migrations` (journal.ts), never in an application's Drizzle journal.
 *
 * Invariants:
 * - one runner at a time per database: a session advisory lock (db/advisory-locks.ts) is held
 *   from before the journal is read until the last migration is recorded, on a connection
 *   checked to reach PostgreSQL directly (connection.ts);
 * - nothing is applied while the journal and the list disagree (unknown, edited, moved or
 *   skipped migrations): the runner refuses with a sentence naming the migration;
 * - a migration runs in a transaction of its own with `SET LOCAL lock_timeout` and its journal
 *   row is written in that transaction: it is applied and recorded, or neither;
 * - a migration headed `-- leasehold:no-transaction` runs statement by statement in autocommit
 *   (for CONCURRENTLY), still under the lock, and is recorded after its last statement; a
 *   failure leaves it unrecorded, so the next run repeats it (its statements must be safe to
 *   run twice), after dropping or rebuilding what a failed concurrent build left invalid
 *   (indexes.ts).
 *
 * Statements with parameters or rows go through runText, typed as everywhere in db/; the
 * migrations' own statements and the transaction control go to the session as they are.
 */
import pg from 'pg';
import { LEASEHOLD_LOCK_CLASS, MIGRATION_LOCK_KEY } from '../advisory-locks.ts';
import { LeaseholdError, LeaseholdRefusal } from '../errors.ts';
import { field, runText } from '../queue/executor.ts';
import { refuseIndirectConnection } from './connection.ts';
import { MIGRATIONS_FOLDER, readMigrations, type Migration } from './files.ts';
import { INVALID_INDEXES_SQL, planRepairs, quoteIdent, type InvalidIndex } from './indexes.ts';
import { syncSearchIndexes, type SearchIndexResult } from './search-indexes.ts';
import {
  bootstrapStatements,
  checkedLockTimeout,
  insertStatement,
  JOURNAL_TABLE,
  journalName,
  journalValues,
  LEASEHOLD_SCHEMA,
  MigrationRefused,
  pendingAfter,
  selectJournal,
  setLockTimeout,
  type JournalRow,
} from './journal.ts';

export { DEFAULT_LOCK_TIMEOUT_MS, JOURNAL_TABLE, LEASEHOLD_SCHEMA, MigrationRefused } from './journal.ts';
export {
  MIGRATIONS_FOLDER,
  MigrationFolderError,
  checkMigrationsFolder,
  readMigrations,
  type Migration,
} from './files.ts';
export { pendingMigrationsSql } from './print.ts';
export type { SearchIndexResult } from './search-indexes.ts';

export interface MigrateOptions {
  /** Folder of drizzle-kit migrations (default: the queue's own `drizzle/`). */
  migrationsFolder?: string;
  /** Journal table in schema `leasehold` (default `migrations`), for a separate list such as the demo's. */
  migrationsTable?: string;
  /** `lock_timeout` of every migration statement (default 5,000 ms). */
  lockTimeoutMs?: number;
  /**
   * Skip the direct-connection check: for a tunnel or port mapping that keeps one server
   * session per connection, never for a transaction pooler.
   */
  allowProxy?: boolean;
  /** Where progress lines go (default: nowhere). */
  log?: (line: string) => void;
  /**
   * How long to wait for the migration lock another session holds (default 30,000 ms); then
   * the run stops with MigrationLockBusy naming the holder, instead of waiting for ever.
   */
  lockWaitMs?: number;
}

/** The default of MigrateOptions.lockWaitMs. */
export const DEFAULT_LOCK_WAIT_MS = 30_000;

/** Another session held the migration lock for longer than the run would wait (exit code 2 in the CLI). */
export class MigrationLockBusy extends LeaseholdRefusal {
  readonly code = 'migration_lock_busy';

  constructor(message: string) {
    super(message);
    this.name = 'MigrationLockBusy';
  }
}

/** Who holds the migration lock, as a sentence fragment (`pid 123, user bob, application "psql"`). */
async function lockHolder(client: pg.Client): Promise<string> {
  const rows = await runText<{ pid: number; usename: string | null; application_name: string | null }>(
    client,
    `SELECT l.pid, a.usename, a.application_name
     FROM pg_catalog.pg_locks l LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
     WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
       AND l.classid = $1 AND l.objid = $2 AND l.objsubid = 2 AND l.pid <> pg_catalog.pg_backend_pid()
     ORDER BY l.pid`,
    [LEASEHOLD_LOCK_CLASS, MIGRATION_LOCK_KEY],
  );
  if (rows.length === 0) return 'a session that has since let it go';
  return rows
    .map(
      (r) => `pid ${r.pid}, user ${r.usename ?? '(unknown)'}, application ${JSON.stringify(r.application_name ?? '')}`,
    )
    .join('; ');
}

export interface MigrateResult {
  /** The migrations this run applied, in order. */
  applied: string[];
  /** What it did about invalid indexes, as sentences. */
  repairs: string[];
  /** What it did to the search indexes (the queue's own migrations only; else null). */
  searchIndexes: SearchIndexResult | null;
}

/** A migration whose statement failed; what of it stays applied depends on `transaction`. */
export class MigrationFailed extends LeaseholdError {
  readonly code = 'migration_failed';

  constructor(message: string, options: { cause: unknown }) {
    super(message, options);
    this.name = 'MigrationFailed';
  }

  /** The message names the migration and the statement's error; the CLI exits 1. */
  override get sentence(): boolean {
    return true;
  }
}

/** Applies what is pending in `options.migrationsFolder` to the database at `url`. */
export async function migrateDatabase(url: string, options: MigrateOptions = {}): Promise<MigrateResult> {
  const folder = options.migrationsFolder ?? MIGRATIONS_FOLDER;
  const table = options.migrationsTable ?? JOURNAL_TABLE;
  journalName(table); // checks the name before anything connects
  const lockTimeoutMs = checkedLockTimeout(options.lockTimeoutMs);
  const lockWaitMs = options.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS;
  if (!Number.isInteger(lockWaitMs) || lockWaitMs < 0 || lockWaitMs > 86_400_000) {
    throw new RangeError(
      `Leasehold migrate: lockWaitMs must be a whole number of milliseconds from 0 to 86400000, not ${lockWaitMs}`,
    );
  }
  const log = options.log ?? (() => {});
  // A broken folder refuses before anything connects.
  const migrations = readMigrations(folder);
  const client = new pg.Client({ connectionString: url, application_name: 'leasehold-migrate' });
  // A connection that dies mid-run fails the statement in flight; without a listener its
  // 'error' event would also crash the process.
  client.on('error', () => {});
  // Notices such as "schema leasehold already exists, skipping" are expected.
  client.on('notice', () => {});
  await client.connect();
  try {
    if (!options.allowProxy) await refuseIndirectConnection(client);
    await takeMigrationLock(client, lockWaitMs);
    try {
      await createJournal(client, table);
      const journal = await runText<JournalRow>(client, selectJournal(table), []);
      const pending = pendingAfter(migrations, journal);
      const result: MigrateResult = { applied: [], repairs: [], searchIndexes: null };
      result.repairs.push(...(await repairInvalidIndexes(client, pending, lockTimeoutMs, log)));
      for (const [index, migration] of pending.entries()) {
        if (migration.transaction) await applyInTransaction(client, migration, table, lockTimeoutMs);
        else {
          // An index that a concurrent build left invalid since the start (or a step before).
          result.repairs.push(...(await repairInvalidIndexes(client, pending.slice(index), lockTimeoutMs, log)));
          await applyOutsideTransaction(client, migration, table, lockTimeoutMs);
        }
        log(`applied migration ${migration.name}`);
        result.applied.push(migration.name);
      }
      // The queue's own schema: its search indexes follow the searchable paths (search-indexes.ts).
      if (folder === MIGRATIONS_FOLDER && table === JOURNAL_TABLE) {
        try {
          result.searchIndexes = await syncSearchIndexes(client, { lockTimeoutMs, log });
        } catch (error) {
          throw new MigrationFailed(
            `Leasehold migrations are applied, but building the search indexes failed: ${describe(error)}. ` +
              'Run `leasehold search-index` (or migrate again) to go on; an index left invalid is built again.' +
              hint(error, lockTimeoutMs),
            { cause: error },
          );
        }
      }
      return result;
    } finally {
      await runText(client, 'SELECT pg_advisory_unlock($1, $2)', [LEASEHOLD_LOCK_CLASS, MIGRATION_LOCK_KEY]).catch(
        () => {},
      );
    }
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Takes the migration lock on `client`, polled, not waited for: a runner waiting inside
 * pg_advisory_lock is a running statement, which the other runner's CREATE INDEX CONCURRENTLY
 * waits for in turn (a deadlock). Not for ever: any login may take this lock, so after
 * `lockWaitMs` the run names the holder.
 */
async function takeMigrationLock(client: pg.Client, lockWaitMs: number): Promise<void> {
  const waitUntil = Date.now() + lockWaitMs;
  while (
    !(
      await runText<{ locked: boolean }>(client, 'SELECT pg_try_advisory_lock($1, $2) AS locked', [
        LEASEHOLD_LOCK_CLASS,
        MIGRATION_LOCK_KEY,
      ])
    )[0]?.locked
  ) {
    if (Date.now() >= waitUntil) {
      throw new MigrationLockBusy(
        `Leasehold will not migrate: another session has held the migration lock ` +
          `(pg_advisory_lock(${LEASEHOLD_LOCK_CLASS}, ${MIGRATION_LOCK_KEY})) for the ${lockWaitMs} ms this run waited: ` +
          `${await lockHolder(client)}. Let that migration finish, or end that session ` +
          `(SELECT pg_terminate_backend(pid)) if it is not one, then run again; nothing was applied.`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * `leasehold search-index`: builds, rebuilds and drops the search indexes (search-indexes.ts)
 * on the database at `url`, as the migrator, under the migration lock (the last step of
 * `migrateDatabase` too). Refuses (MigrationFailed) while migrations are pending up to the
 * schema that has the searchable paths: run `leasehold migrate`, which does this step as well.
 */
export async function buildSearchIndexes(
  url: string,
  options: Pick<MigrateOptions, 'lockTimeoutMs' | 'lockWaitMs' | 'allowProxy' | 'log'> = {},
): Promise<SearchIndexResult> {
  const lockTimeoutMs = checkedLockTimeout(options.lockTimeoutMs);
  const client = new pg.Client({ connectionString: url, application_name: 'leasehold-search-index' });
  client.on('error', () => {});
  client.on('notice', () => {});
  await client.connect();
  try {
    if (!options.allowProxy) await refuseIndirectConnection(client);
    await takeMigrationLock(client, options.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS);
    try {
      const [ready] = await runText<{ ready: boolean }>(
        client,
        `SELECT to_regclass('leasehold.kind_search_paths') IS NOT NULL AS ready`,
        [],
      );
      if (!ready?.ready) {
        throw new MigrationRefused(
          'Leasehold will not build search indexes: this database has no searchable paths yet (schema version 22); run `leasehold migrate`, which builds them too.',
        );
      }
      return await syncSearchIndexes(client, { lockTimeoutMs, ...(options.log ? { log: options.log } : {}) });
    } catch (error) {
      if (error instanceof LeaseholdError) throw error;
      throw new MigrationFailed(
        `Leasehold search-index failed: ${describe(error)}. What it built before stays; run it again to go on (an index left invalid is built again).${hint(error, lockTimeoutMs)}`,
        { cause: error },
      );
    } finally {
      await runText(client, 'SELECT pg_advisory_unlock($1, $2)', [LEASEHOLD_LOCK_CLASS, MIGRATION_LOCK_KEY]).catch(
        () => {},
      );
    }
  } finally {
    await client.end().catch(() => {});
  }
}

// Two sessions creating one schema or table at once: the second waits for the first's commit
// and then fails on the catalog's unique index (23505) despite IF NOT EXISTS, or with the
// "already exists" errors. By then the object exists; looking again finds it.
const CREATE_RACE = new Set(['23505', '42P06', '42P07']);

/**
 * Creates schema `leasehold` and the journal when missing. It looks before it creates: CREATE
 * SCHEMA IF NOT EXISTS needs the CREATE privilege on the database even when the schema exists,
 * which a role that only migrates may lack.
 */
async function createJournal(client: pg.Client, table: string): Promise<void> {
  const [createSchema, createTable] = bootstrapStatements(table);
  for (let attempt = 1; ; attempt++) {
    try {
      const [present] = await runText<{ schema: boolean; journal: boolean }>(
        client,
        `SELECT to_regnamespace($1) IS NOT NULL AS schema, to_regclass($2) IS NOT NULL AS journal`,
        [LEASEHOLD_SCHEMA, journalName(table)],
      );
      if (!present?.schema) await client.query(createSchema!);
      if (!present?.journal) await client.query(createTable!);
      return;
    } catch (error) {
      if (attempt < 3 && CREATE_RACE.has(codeOf(error) ?? '')) continue;
      throw error;
    }
  }
}

async function applyInTransaction(client: pg.Client, m: Migration, table: string, lockTimeoutMs: number) {
  await client.query('BEGIN');
  let at = 0;
  try {
    await client.query(setLockTimeout(lockTimeoutMs, true));
    for (const statement of m.statements) {
      at += 1;
      await client.query(statement);
    }
    await runText(client, insertStatement(table), journalValues(m));
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw new MigrationFailed(
      `Leasehold migration "${m.name}" failed at statement ${at} of ${m.statements.length} and was rolled back ` +
        `with its journal row (the migrations before it stay applied): ${describe(error)}${hint(error, lockTimeoutMs)}`,
      { cause: error },
    );
  }
}

async function applyOutsideTransaction(client: pg.Client, m: Migration, table: string, lockTimeoutMs: number) {
  let at = 0;
  try {
    await client.query(setLockTimeout(lockTimeoutMs, false));
    for (const statement of m.statements) {
      at += 1;
      await client.query(statement);
    }
    await runText(client, insertStatement(table), journalValues(m));
  } catch (error) {
    throw new MigrationFailed(
      `Leasehold migration "${m.name}" (outside a transaction) failed at statement ${at} of ` +
        `${m.statements.length}: ${describe(error)}. The statements before it stay applied and the migration ` +
        'is not recorded, so the next run repeats it from its first statement (each must be safe to run ' +
        'twice: IF NOT EXISTS); an index it left invalid is dropped and built again then.' +
        hint(error, lockTimeoutMs),
      { cause: error },
    );
  } finally {
    await client.query('RESET lock_timeout').catch(() => {});
  }
}

/** Drops or rebuilds the invalid indexes of schema `leasehold`; returns what it did, in words. */
async function repairInvalidIndexes(
  client: pg.Client,
  pending: readonly Migration[],
  lockTimeoutMs: number,
  log: (line: string) => void,
): Promise<string[]> {
  const invalid = await runText<InvalidIndex>(client, INVALID_INDEXES_SQL, []);
  if (invalid.length === 0) return [];
  const done: string[] = [];
  await client.query(setLockTimeout(lockTimeoutMs, false));
  try {
    for (const repair of planRepairs(invalid, pending)) {
      log(repair.why);
      try {
        await client.query(repair.statement);
      } catch (error) {
        // A failed REINDEX CONCURRENTLY leaves an invalid `<name>_ccnew` beside the index.
        const left = (await runText<InvalidIndex>(client, INVALID_INDEXES_SQL, [])).filter((i) =>
          i.name.startsWith(`${repair.index}_ccnew`),
        );
        for (const leftover of left) {
          await client
            .query(`DROP INDEX CONCURRENTLY IF EXISTS ${LEASEHOLD_SCHEMA}.${quoteIdent(leftover.name)}`)
            .catch(() => {});
        }
        throw new MigrationFailed(
          `Leasehold will not migrate: ${repair.why}, and \`${repair.statement}\` failed: ${describe(error)}. ` +
            'Fix what stops the build (for a unique index: the duplicate rows), then run the migrations again.',
          { cause: error },
        );
      }
      done.push(repair.why);
    }
  } finally {
    await client.query('RESET lock_timeout').catch(() => {});
  }
  return done;
}

/** A text field of a thrown value (pg's DatabaseError: message, code, detail), if it has one. */
function textOf(error: unknown, key: 'message' | 'code' | 'detail'): string | undefined {
  const value = field(error, key);
  return typeof value === 'string' ? value : undefined;
}

function codeOf(error: unknown): string | undefined {
  return textOf(error, 'code');
}

function describe(error: unknown): string {
  const detail = textOf(error, 'detail');
  const code = codeOf(error);
  return `${textOf(error, 'message') ?? String(error)}${detail ? ` (${detail})` : ''}${code ? ` [SQLSTATE ${code}]` : ''}`;
}

function hint(error: unknown, lockTimeoutMs: number): string {
  switch (codeOf(error)) {
    case '55P03':
      return (
        ` It waited more than the lock timeout (${lockTimeoutMs} ms) for a lock another session holds on what ` +
        'it changes (a long transaction?): run it again when that is over, or raise lockTimeoutMs.'
      );
    case '42P06':
      if (!String(textOf(error, 'message')).includes(`"${LEASEHOLD_SCHEMA}"`)) return '';
      return (
        ` The runner creates schema ${LEASEHOLD_SCHEMA} for its journal before the first migration: a ` +
        'migration must create it with CREATE SCHEMA IF NOT EXISTS.'
      );
    default:
      return '';
  }
}
