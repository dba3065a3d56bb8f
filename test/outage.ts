/**
 * Database outages for tests of what a worker reports while its database is gone: the test
 * database refuses new connections and loses the ones it has, until it is let in again.
 */
import pg from 'pg';
import { inject } from 'vitest';
import { withDatabase } from '../cli/database-url.ts';

export { freePort } from '../cli/database-select.ts';

/**
 * Makes `database` refuse connections and ends the ones it has (as an outage would) until the
 * returned function lets it in again. Runs on the server's `postgres` database.
 */
export async function takeDatabaseDown(database: string): Promise<() => Promise<void>> {
  const admin = new pg.Client({ connectionString: withDatabase(inject('serverUrl'), 'postgres') });
  await admin.connect();
  const name = admin.escapeIdentifier(database);
  await admin.query(`ALTER DATABASE ${name} WITH ALLOW_CONNECTIONS false`);
  await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [database]);
  return async () => {
    await admin.query(`ALTER DATABASE ${name} WITH ALLOW_CONNECTIONS true`);
    await admin.end();
  };
}
