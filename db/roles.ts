/**
 * Leasehold's database roles: the script db/roles.sql (what each role may do, and why), and
 * `applyRoles(url)`, which runs it (`npm run db:roles`, scripts/roles.ts).
 *
 * The SQL file is the one source: a DBA can read it and run it with psql as it is, and this
 * module runs the same text. It is one transaction, idempotent and convergent (each run
 * revokes what the roles hold in schema leasehold and grants what the file says).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { field } from './queue/executor.ts';

/** The four group roles (NOLOGIN): grant one to each login that runs a part of Leasehold. */
export const LEASEHOLD_ROLES = {
  migrator: 'leasehold_migrator',
  worker: 'leasehold_worker',
  producer: 'leasehold_producer',
  dashboard: 'leasehold_dashboard',
} as const;

export type LeaseholdRole = keyof typeof LEASEHOLD_ROLES;

export const ROLES_SQL_FILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), 'roles.sql');

/** The text of db/roles.sql. */
export function rolesSql(): string {
  return readFileSync(ROLES_SQL_FILE, 'utf8');
}

export interface ApplyRolesOptions {
  /** Where the script's notices go (for example "schema leasehold does not exist yet"). */
  log?: (line: string) => void;
}

/**
 * Runs db/roles.sql on the database at `url`, as the URL's user (a superuser, or a role with
 * CREATEROLE that is a member of leasehold_migrator and of the schema's current owner).
 */
export async function applyRoles(url: string, options: ApplyRolesOptions = {}): Promise<void> {
  const log = options.log ?? (() => {});
  const client = new pg.Client({ connectionString: url, application_name: 'leasehold-roles' });
  client.on('error', () => {});
  client.on('notice', (notice) => log(notice.message ?? 'notice'));
  await client.connect();
  try {
    // One simple-query message: the file's own BEGIN … COMMIT make it one transaction. Its
    // GRANTs and REVOKEs lock catalog rows other sessions lock too (another run, a CREATE ROLE,
    // a migration): a deadlock or a lock timeout rolled it all back, and the script is
    // idempotent, so it is run again, at most twice more.
    for (let tries = 1; ; tries++) {
      try {
        await client.query(rolesSql());
        break;
      } catch (error) {
        const code = field(error, 'code');
        if (tries >= 3 || (code !== '40P01' && code !== '55P03')) throw error;
        await client.query('ROLLBACK').catch(() => {});
        log(`db/roles.sql met a ${code === '40P01' ? 'deadlock' : 'lock timeout'}; running it again`);
        await new Promise((resolve) => setTimeout(resolve, 200 * tries));
      }
    }
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw new Error(
      `Leasehold: db/roles.sql failed and changed nothing: ${error instanceof Error ? error.message : String(error)}`,
      {
        cause: error,
      },
    );
  } finally {
    await client.end().catch(() => {});
  }
}
