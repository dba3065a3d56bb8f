/**
 * `npm run db:migrate`: applies the migrations to DATABASE_URL or the embedded server.
 *
 *   --print              print the pending migrations as SQL instead (for your own tools)
 *   --allow-proxy        skip the direct-connection check (a tunnel or port mapping, never a pooler)
 *   --lock-timeout-ms N  lock_timeout of every migration statement (default 5000)
 */
import { parseArgs } from 'node:util';
import { migrateDatabase, pendingMigrationsSql } from '../db/migrate.ts';
import { databaseFromEnv } from './database.ts';

const { values } = parseArgs({
  options: {
    print: { type: 'boolean', default: false },
    'allow-proxy': { type: 'boolean', default: false },
    'lock-timeout-ms': { type: 'string' },
  },
});
const lockTimeoutMs = values['lock-timeout-ms'] === undefined ? undefined : Number(values['lock-timeout-ms']);

const database = await databaseFromEnv(process.env);
try {
  if (values.print) {
    process.stdout.write(await pendingMigrationsSql(database.url, { lockTimeoutMs }));
  } else {
    const { applied } = await migrateDatabase(database.url, {
      lockTimeoutMs,
      allowProxy: values['allow-proxy'],
      log: (line) => console.error(`[leasehold] ${line}`),
    });
    console.error(
      applied.length === 0
        ? '[leasehold] migrations: nothing to apply'
        : `[leasehold] migrations applied: ${applied.length} (${applied.join(', ')})`,
    );
  }
} catch (error) {
  console.error('[leasehold] migration failed:', error instanceof Error ? error.message : error);
  process.exitCode = 1;
} finally {
  await database.stop();
}
