/**
 * `npm run db:migrate`: `leasehold migrate` (cli/migrate.ts) from this checkout. DATABASE_URL
 * names the database; with it unset, `--embedded` uses the embedded development server, and
 * without that the command stops (exit code 2) naming DATABASE_URL.
 *
 *   --print              print the pending migrations as SQL instead (`--print-sql` of the CLI)
 *   --check              exit 0 when nothing is pending, 1 when something is
 *   --allow-proxy        skip the direct-connection check (a tunnel or port mapping, never a pooler)
 *   --lock-timeout-ms N  lock_timeout of every migration statement (default 5000)
 *   --embedded           with DATABASE_URL unset, the embedded server
 */
import { runCli } from '../cli/run.ts';

const args = process.argv.slice(2).map((a) => (a === '--print' ? '--print-sql' : a));
process.exitCode = await runCli(['migrate', ...args]);
