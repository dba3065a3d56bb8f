/**
 * `npm run db:check` (CI, beside `drizzle-kit check`): the migration folders are usable by the
 * runner. Fails when a folder's meta/_journal.json and its .sql files disagree, when the names
 * do not sort in journal order, when a header is wrong (db/migrate/files.ts), or when the
 * schema version the migrations reach is not db/schema-version.ts's SCHEMA_VERSION.
 *
 *   npm run db:check              drizzle/ and demo/drizzle/
 *   npm run db:check -- <folder>  those folders only
 */
import path from 'node:path';
import { checkMigrationsFolder, MIGRATIONS_FOLDER, readMigrations } from '../db/migrate/index.ts';
import { SCHEMA_VERSION } from '../db/schema-version.ts';
import { DEMO_MIGRATIONS } from '../demo/migrations.ts';

const folders =
  process.argv.length > 2 ? process.argv.slice(2).map((f) => path.resolve(f)) : [MIGRATIONS_FOLDER, DEMO_MIGRATIONS];

let failed = false;
for (const folder of folders) {
  const problems = checkMigrationsFolder(folder);
  if (problems.length === 0 && folder === MIGRATIONS_FOLDER) {
    const reached = readMigrations(folder).at(-1)?.schemaVersion ?? 1;
    if (reached !== SCHEMA_VERSION) {
      problems.push(
        `the migrations reach schema version ${reached}, but db/schema-version.ts says SCHEMA_VERSION = ${SCHEMA_VERSION}`,
      );
    }
  }
  const name = path.relative(process.cwd(), folder) || '.';
  if (problems.length === 0) {
    console.error(`[db:check] ${name}: ok`);
    continue;
  }
  failed = true;
  for (const problem of problems) console.error(`[db:check] ${name}: ${problem}`);
}
process.exitCode = failed ? 1 : 0;
