/**
 * The pending migrations as one SQL text, for teams that apply SQL with their own tools
 * (`npm run db:migrate -- --print`). It does what the runner would do at the moment it is
 * printed: take the runner's lock, create the journal, repair invalid indexes, then each
 * pending migration in a transaction with its lock timeout and journal row (steps headed
 * `-- leasehold:no-transaction` outside one), and release the lock.
 *
 * Each migration first checks that the journal holds exactly the migrations before it, so the
 * text applied to a database that moved on since (or after an earlier part failed, when the
 * tool goes on past errors) fails instead of leaving a gap.
 */
import pg from 'pg';
import { sql } from 'drizzle-orm';
import { LEASEHOLD_LOCK_CLASS, MIGRATION_LOCK_KEY } from '../advisory-locks.ts';
import { MIGRATIONS_FOLDER, readMigrations, type Migration } from './files.ts';
import { INVALID_INDEXES_SQL, planRepairs, type InvalidIndex } from './indexes.ts';
import {
  bootstrapStatements,
  checkedLockTimeout,
  JOURNAL_TABLE,
  journalName,
  journalValues,
  pendingAfter,
  selectJournal,
  setLockTimeout,
  type JournalRow,
} from './journal.ts';
import { run, type Executor } from '../queue/executor.ts';

export interface PendingSqlOptions {
  migrationsFolder?: string;
  migrationsTable?: string;
  lockTimeoutMs?: number;
}

/** What the printed script says, and stops with, while another runner holds the migration lock. */
export const BUSY_MESSAGE =
  'Leasehold: another migration runner holds the migration lock; nothing was applied: run this file again when it is done';

/** The SQL that brings the database at `target` (a URL, or an executor on it) up to date. */
export async function pendingMigrationsSql(
  target: string | Executor,
  options: PendingSqlOptions = {},
): Promise<string> {
  if (typeof target !== 'string') return printFor(target, options);
  const client = new pg.Client({ connectionString: target, application_name: 'leasehold-migrate-print' });
  client.on('error', () => {});
  await client.connect();
  try {
    return await printFor(client, options);
  } finally {
    await client.end().catch(() => {});
  }
}

async function printFor(executor: Executor, options: PendingSqlOptions): Promise<string> {
  const folder = options.migrationsFolder ?? MIGRATIONS_FOLDER;
  const table = options.migrationsTable ?? JOURNAL_TABLE;
  const journal = journalName(table);
  const lockTimeoutMs = checkedLockTimeout(options.lockTimeoutMs);
  const migrations = readMigrations(folder);
  const [present] = await run<{ journal: boolean }>(
    executor,
    sql`SELECT to_regclass(${journal}) IS NOT NULL AS journal`,
  );
  const applied = present?.journal ? await run<JournalRow>(executor, sql.raw(selectJournal(table))) : [];
  const pending = pendingAfter(migrations, applied);
  const repairs = planRepairs(await run<InvalidIndex>(executor, sql.raw(INVALID_INDEXES_SQL)), pending);
  if (pending.length === 0 && repairs.length === 0) {
    return `-- Leasehold: nothing to apply (${applied.length} migrations of ${folder} are applied).\n`;
  }

  const out: string[] = [
    `-- Leasehold: ${pending.length} pending migration${pending.length === 1 ? '' : 's'} of ${folder},`,
    `-- printed ${new Date().toISOString()} for a database with ${applied.length} applied.`,
    '-- Apply with `psql -v ON_ERROR_STOP=1 -f <this file>` (psql: the lock uses \\gset and \\if; not',
    '-- --single-transaction: steps outside a transaction cannot run inside one), on a direct',
    '-- connection, not through a pooler.',
    '',
    // Tried, not waited for (as the runner polls): psql waiting inside pg_advisory_lock is a
    // running statement, which another runner's CREATE INDEX CONCURRENTLY waits for in turn,
    // while that runner holds the lock this one waits on (a deadlock). So the script stops
    // with a sentence when another runner holds it, and is run again after.
    `SELECT pg_try_advisory_lock(${LEASEHOLD_LOCK_CLASS}, ${MIGRATION_LOCK_KEY}) AS leasehold_locked \\gset`,
    '\\if :leasehold_locked',
    '\\else',
    `DO $busy$ BEGIN RAISE EXCEPTION '${BUSY_MESSAGE}'; END $busy$;`,
    '\\endif',
    ...bootstrapStatements(table).map(terminated),
  ];
  if (repairs.length > 0) {
    out.push('', `${setLockTimeout(lockTimeoutMs, false)};`);
    for (const repair of repairs) out.push(`-- ${repair.why}`, `${repair.statement};`);
    out.push('RESET lock_timeout;');
  }
  for (const m of pending) {
    out.push('');
    if (m.transaction) {
      out.push(`-- ${m.name}`, 'BEGIN;', `${setLockTimeout(lockTimeoutMs, true)};`, guard(m, journal));
      out.push(...m.statements.map(terminated), `${insertLiteral(m, journal)};`, 'COMMIT;');
    } else {
      out.push(`-- ${m.name} (outside a transaction: each statement commits on its own)`, guard(m, journal));
      out.push(`${setLockTimeout(lockTimeoutMs, false)};`, ...m.statements.map(terminated), 'RESET lock_timeout;');
      out.push(`${insertLiteral(m, journal)};`);
    }
  }
  out.push('', `SELECT pg_advisory_unlock(${LEASEHOLD_LOCK_CLASS}, ${MIGRATION_LOCK_KEY});`, '');
  return out.join('\n');
}

/** A statement as a script line: trimmed and ending in `;` (on a line of its own after a comment). */
function terminated(statement: string): string {
  const text = statement.trim();
  if (text.endsWith(';')) return text;
  return text.split('\n').at(-1)!.trim().startsWith('--') ? `${text}\n;` : `${text};`;
}

function literal(value: string | number): string {
  return typeof value === 'number' ? String(value) : `'${value.replaceAll("'", "''")}'`;
}

function insertLiteral(m: Migration, journal: string): string {
  return (
    `INSERT INTO ${journal} (name, position, checksum, schema_version, compatible_from) ` +
    `VALUES (${journalValues(m).map(literal).join(', ')})`
  );
}

function guard(m: Migration, journal: string): string {
  const message = `Leasehold: migration ${m.name} must follow exactly ${m.position} applied migrations; this SQL was printed for another state of the database: print it again`;
  return `DO $leasehold$ BEGIN
  IF (SELECT count(*) FROM ${journal}) <> ${m.position} THEN
    RAISE EXCEPTION ${literal(message)};
  END IF;
END $leasehold$;`;
}
