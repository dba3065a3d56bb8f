/** `leasehold migrate`: applies Leasehold's migrations (db/migrate/index.ts), prints them as SQL, or checks for pending ones. */
import pg from 'pg';
import { migrateDatabase, MIGRATIONS_FOLDER, pendingMigrationsSql, readMigrations } from '../db/migrate/index.ts';
import { JOURNAL_TABLE, journalName, pendingAfter, selectJournal, type JournalRow } from '../db/migrate/journal.ts';
import { type Command, EMBEDDED_HELP, parseCommandArgs, wholeNumber } from './command.ts';
import { commandDatabase } from './database.ts';
import { searchIndexLine } from './search-index.ts';

const HELP = `usage: leasehold migrate [--print-sql | --check] [options]

Applies Leasehold's migrations to the database DATABASE_URL names, into its own schema
"leasehold" (journal leasehold.migrations); nothing outside that schema is touched. Then builds
the search indexes, as \`leasehold search-index\` does. Safe to run
from two processes at once (an advisory lock). Run it on a direct connection, not a pooler.

  --print-sql           print the pending migrations as SQL instead, for your own migration tools
                        (apply with psql -v ON_ERROR_STOP=1 -f; nothing is written)
  --check               say whether migrations are pending: exit 0 when none, 1 when some (nothing written)
  --allow-proxy         skip the direct-connection check (a tunnel or port mapping, never a pooler)
  --lock-timeout-ms N   lock_timeout of every migration statement (default 5000)
  --lock-wait-ms N      how long to wait for the migration lock another session holds (default
                        30000); then name that session (pid, user, application) and exit 2
${EMBEDDED_HELP}
  --help, --version

environment: DATABASE_URL (required unless --embedded)`;

const OPTIONS = {
  'print-sql': { type: 'boolean' },
  check: { type: 'boolean' },
  'allow-proxy': { type: 'boolean' },
  'lock-timeout-ms': { type: 'string' },
  'lock-wait-ms': { type: 'string' },
  embedded: { type: 'boolean' },
} as const;

/** The migrations not yet applied on `url`, by name (the journal checked against the list, read-only). */
async function pendingMigrations(url: string): Promise<{ applied: number; pending: string[] }> {
  const client = new pg.Client({ connectionString: url, application_name: 'leasehold-migrate-check' });
  client.on('error', () => {});
  await client.connect();
  try {
    const journal = journalName(JOURNAL_TABLE);
    const present = await client.query<{ journal: boolean }>('SELECT to_regclass($1) IS NOT NULL AS journal', [
      journal,
    ]);
    const applied = present.rows[0]?.journal ? (await client.query<JournalRow>(selectJournal(JOURNAL_TABLE))).rows : [];
    return {
      applied: applied.length,
      pending: pendingAfter(readMigrations(MIGRATIONS_FOLDER), applied).map((m) => m.name),
    };
  } finally {
    await client.end().catch(() => {});
  }
}

export const migrateCommand: Command = {
  name: 'migrate',
  help: HELP,
  async run(args, context) {
    const { values } = parseCommandArgs('migrate', args, OPTIONS);
    if (values['print-sql'] && values.check) {
      console.error('leasehold migrate: give --print-sql or --check, not both');
      return 2;
    }
    const lockTimeoutMs = wholeNumber('lock-timeout-ms', values['lock-timeout-ms'], 0, 3_600_000);
    const lockWaitMs = wholeNumber('lock-wait-ms', values['lock-wait-ms'], 0, 86_400_000);
    const database = await commandDatabase(context, values.embedded === true);
    try {
      if (values['print-sql']) {
        process.stdout.write(await pendingMigrationsSql(database.url, { lockTimeoutMs }));
        return 0;
      }
      if (values.check) {
        const { applied, pending } = await pendingMigrations(database.url);
        console.log(
          pending.length === 0
            ? `up to date: ${applied} migrations applied, none pending`
            : `${pending.length} pending (of ${applied + pending.length}): ${pending.join(', ')}`,
        );
        return pending.length === 0 ? 0 : 1;
      }
      const { applied, searchIndexes } = await migrateDatabase(database.url, {
        lockTimeoutMs,
        ...(lockWaitMs !== undefined ? { lockWaitMs } : {}),
        allowProxy: values['allow-proxy'] === true,
        log: (line) => console.error(`leasehold migrate: ${line}`),
      });
      console.log(
        applied.length === 0
          ? 'migrations: nothing to apply'
          : `migrations applied: ${applied.length} (${applied.join(', ')})`,
      );
      // The search indexes' line when the run built, rebuilt or dropped one.
      const changed =
        searchIndexes && searchIndexes.created.length + searchIndexes.rebuilt.length + searchIndexes.dropped.length;
      if (searchIndexes && changed) console.log(searchIndexLine(searchIndexes));
      return 0;
    } finally {
      await database.stop();
    }
  },
};
