/**
 * `npm run web`: this checkout's dashboard alone (its own `.next`, built by npm start or npm run
 * build), in production mode. Needs NEXTAUTH_SECRET (32+ characters); no demo users, demo
 * passwords refused. DATABASE_URL names the database; with it unset, `--embedded` uses the
 * embedded development server, and without that it stops naming DATABASE_URL (exit code 2).
 * Settings the dashboard refuses (a partial single sign-on configuration, NEXTAUTH_URL unset or
 * plain http to another host, say) stop it the same way, with the dashboard's own sentence.
 * It migrates only the embedded server: a DATABASE_URL is checked, read-only, as
 * `leasehold dashboard` checks it (the schema is there and at a version this code runs on, the
 * login has the dashboard role's grants), since the dashboard's login should not be one that may
 * change the schema (docs/dashboard.md); `npm run db:migrate` migrates.
 * A project that installed the package runs `leasehold dashboard` instead (cli/dashboard.ts).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { checkDashboardDatabase } from '../cli/dashboard-database.ts';
import { createDb } from '../db/client.ts';
import { migrateDatabase } from '../db/migrate/index.ts';
import { parseWebEnv } from '../lib/settings.ts';
import { databaseFromEnv, PROJECT_DIR } from '../cli/database-select.ts';
import { DatabaseSettingError } from '../cli/database-url.ts';

const secret = process.env.NEXTAUTH_SECRET ?? '';
if (secret.length < 32) {
  console.error(
    '[leasehold] refusing to start: set NEXTAUTH_SECRET to a random string of at least 32 characters (for example: openssl rand -base64 32)',
  );
  process.exit(2);
}
let database;
try {
  database = await databaseFromEnv(process.env, { embedded: process.argv.includes('--embedded') });
} catch (error) {
  if (!(error instanceof DatabaseSettingError)) throw error;
  console.error(`[leasehold] ${error.message}`);
  process.exit(2);
}
// The dashboard's own settings (single sign-on, built-in users, redaction defaults), checked
// here with the server's own parser: a half-configured sign-in stops the start with its
// sentence, instead of failing the first request.
try {
  parseWebEnv({ ...process.env, DATABASE_URL: database.url, LEASEHOLD_DEMO: 'false' });
} catch (error) {
  console.error(`[leasehold] refusing to start: ${(error as Error).message.replace(/^Leasehold dashboard: /, '')}`);
  await database.stop();
  process.exit(2);
}
try {
  if (database.embedded) await migrateDatabase(database.url);
  else await checkDatabase(database.url);
} catch (error) {
  console.error(`[leasehold] refusing to start: ${(error as Error).message}`);
  await database.stop();
  process.exit(2);
}
const next = path.join(PROJECT_DIR, 'node_modules', 'next', 'dist', 'bin', 'next');
const port = process.env.PORT ?? '3000';
// This machine only unless told otherwise, as `leasehold dashboard` and `npm start`.
const hostname = process.env.LEASEHOLD_DASHBOARD_HOSTNAME?.trim() || '127.0.0.1';
const child = spawn(process.execPath, [next, 'start', '--port', port, '--hostname', hostname], {
  cwd: PROJECT_DIR,
  env: { ...process.env, DATABASE_URL: database.url, LEASEHOLD_DEMO: 'false' },
  stdio: 'inherit',
});
const stop = () => child.kill('SIGTERM');
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
child.on('exit', (code) => void exitWith(code ?? 0));

/** The same read-only check as `leasehold dashboard`: warnings are said, gaps refuse the start. */
async function checkDatabase(url: string) {
  const { db, close } = createDb(url, { max: 1, applicationName: 'leasehold-web' });
  try {
    const verdict = await checkDashboardDatabase(db);
    for (const warning of verdict.warnings) console.error(`[leasehold] warning: ${warning}`);
  } finally {
    await close();
  }
}

async function exitWith(code: number) {
  await database!.stop();
  process.exit(code);
}
