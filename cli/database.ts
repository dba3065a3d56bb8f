/**
 * The database a command opens, under the policy of cli/database-select.ts: DATABASE_URL, or with
 * `--embedded` the embedded development server under the working directory.
 */
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { createDb, type DbHandle } from '../db/client.ts';
import { run } from '../db/queue/executor.ts';
import { migrateDatabase } from '../db/migrate/index.ts';
import { schemaCompatibility } from '../db/schema-version.ts';
import { databaseFromEnv, type DatabaseHandle } from './database-select.ts';
import { type CommandContext, UsageError } from './command.ts';

/**
 * The database DATABASE_URL names; with `embedded` and DATABASE_URL unset, the embedded server
 * under `<cwd>/.leasehold/postgres` (LEASEHOLD_DATA_DIR overrides). Throws DatabaseSettingError
 * naming DATABASE_URL when it is unset (without --embedded) or not a postgres:// URL.
 */
export function commandDatabase(context: CommandContext, embedded: boolean): Promise<DatabaseHandle> {
  return databaseFromEnv(context.env, {
    embedded,
    dataDir: path.join(context.cwd, '.leasehold', 'postgres'),
    embeddedHint: 'pass --embedded',
  });
}

/** A UsageError when the database has no Leasehold schema, or one this code may not run on. */
export async function refuseUnsuitableSchema(db: DbHandle['db']): Promise<void> {
  const [row] = await run<{ present: boolean }>(
    db,
    sql`SELECT to_regclass('leasehold.migrations') IS NOT NULL AS present`,
  );
  if (!row?.present)
    throw new UsageError('the database DATABASE_URL names has no Leasehold schema yet: run leasehold migrate first');
  const verdict = await schemaCompatibility(db);
  if (!verdict.ok) throw new UsageError(`${verdict.reason} (from this CLI: leasehold migrate)`);
}

/**
 * Runs `work` on a small pool over the command's database, then closes both. The schema must
 * suit this code (else a UsageError that says to run `leasehold migrate`); the embedded
 * development server is migrated first.
 */
export async function withDb<T>(
  context: CommandContext,
  embedded: boolean,
  work: (handle: DbHandle, database: DatabaseHandle) => Promise<T>,
): Promise<T> {
  const database = await commandDatabase(context, embedded);
  try {
    if (database.embedded) await migrateDatabase(database.url);
    const handle = createDb(database.url, { max: 2, applicationName: 'leasehold-cli' });
    try {
      await refuseUnsuitableSchema(handle.db);
      return await work(handle, database);
    } finally {
      await handle.close();
    }
  } finally {
    await database.stop();
  }
}
