/**
 * `npm run db:roles`: creates Leasehold's four roles and grants each what it needs in schema
 * leasehold, on DATABASE_URL (or, with --embedded and DATABASE_URL unset, the embedded server), as that URL's user: a DBA's (db/roles.sql
 * says which rights it needs). Idempotent; run it before the first migration, after it, and
 * after a migration that adds a table or a column a role writes.
 *
 *   --print      print the SQL instead (db/roles.sql, for psql -v ON_ERROR_STOP=1 -f)
 *   --embedded   with DATABASE_URL unset, the embedded development server (else exit code 2)
 */
import { parseArgs } from 'node:util';
import { applyRoles, rolesSql } from '../db/roles.ts';
import { databaseFromEnv } from '../cli/database-select.ts';
import { DatabaseSettingError } from '../cli/database-url.ts';

const { values } = parseArgs({
  options: { print: { type: 'boolean', default: false }, embedded: { type: 'boolean', default: false } },
});

if (values.print) {
  process.stdout.write(rolesSql());
} else {
  let database;
  try {
    database = await databaseFromEnv(process.env, { embedded: values.embedded });
  } catch (error) {
    if (!(error instanceof DatabaseSettingError)) throw error;
    console.error(`[leasehold] ${error.message}`);
    process.exit(2);
  }
  try {
    await applyRoles(database.url, { log: (line) => console.error(`[leasehold] ${line}`) });
    console.error(
      '[leasehold] roles: leasehold_migrator, leasehold_worker, leasehold_producer, leasehold_dashboard granted',
    );
  } catch (error) {
    console.error('[leasehold] roles failed:', error instanceof Error ? error.message : error);
    process.exitCode = 1;
  } finally {
    await database.stop();
  }
}
