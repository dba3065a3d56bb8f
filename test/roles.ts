/**
 * Databases whose tests run as Leasehold's roles (db/roles.sql): a scratch database with the
 * roles script applied and, for this file only, one login per role, a member of its group with
 * a password (the embedded server asks for one), dropped with the database.
 *
 * `fresh: true` starts from an empty database and migrates it as the migrator's login, the way
 * a DBA sets one up: roles, logins, roles again (the logins' settings), migrate, roles again
 * (the grants). Otherwise the database is a clone of the run's template, migrated by the
 * superuser, which the script then takes over.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';
import { migrateDatabase } from '../db/migrate/index.ts';
import { applyRoles, LEASEHOLD_ROLES, type LeaseholdRole } from '../db/roles.ts';
import { withDatabase } from '../cli/database-url.ts';
import { createScratchDatabase } from './scratch-database.ts';

export interface RoleDatabase {
  name: string;
  /** The run's superuser, on this database: for fixtures and for looking. */
  adminUrl: string;
  /** A login per role, on this database. */
  urls: Record<LeaseholdRole, string>;
  logins: Record<LeaseholdRole, string>;
  close(): Promise<void>;
}

const ROLE_KEYS = Object.keys(LEASEHOLD_ROLES) as LeaseholdRole[];

export async function roleDatabase(options: { fresh?: boolean } = {}): Promise<RoleDatabase> {
  const serverUrl = inject('serverUrl');
  const template = inject('templateDatabase');
  // The template's prefix: the run's teardown sweeps what a crashed file left.
  const scratch = await createScratchDatabase(
    serverUrl,
    template.replace('_tpl_', '_t_'),
    options.fresh ? undefined : template,
  );
  const tag = randomBytes(4).toString('hex');
  const logins = Object.fromEntries(ROLE_KEYS.map((role) => [role, `lh_${tag}_${role}`])) as Record<
    LeaseholdRole,
    string
  >;
  const password = randomBytes(12).toString('hex');
  const urls = Object.fromEntries(
    ROLE_KEYS.map((role) => {
      const url = new URL(scratch.url);
      url.username = logins[role];
      url.password = password;
      return [role, url.toString()];
    }),
  ) as Record<LeaseholdRole, string>;
  const dropLogins = async () => {
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    try {
      // Another file's run of the roles script sets every Leasehold login's timeouts, this
      // file's too (ALTER ROLE … IN DATABASE, cluster-wide): a DROP that meets one fails with
      // "tuple concurrently updated/deleted" (XX000), and is tried again.
      for (const login of Object.values(logins)) {
        for (let attempt = 1; ; attempt++) {
          try {
            await admin.query(`DROP ROLE IF EXISTS ${login}`);
            break;
          } catch (error) {
            const raced = error instanceof Error && /tuple concurrently (updated|deleted)/.test(error.message);
            if (!raced || attempt >= 10) throw error;
            await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
          }
        }
      }
    } finally {
      await admin.end();
    }
  };
  const close = async () => {
    await scratch.drop();
    await dropLogins();
  };
  try {
    await applyRoles(scratch.url);
    const admin = new pg.Client({ connectionString: scratch.url });
    await admin.connect();
    try {
      for (const role of ROLE_KEYS) {
        await admin.query(`CREATE ROLE ${logins[role]} LOGIN PASSWORD '${password}' IN ROLE ${LEASEHOLD_ROLES[role]}`);
      }
    } finally {
      await admin.end();
    }
    await applyRoles(scratch.url);
    if (options.fresh) {
      await migrateDatabase(urls.migrator);
      await applyRoles(scratch.url);
    }
  } catch (error) {
    await close().catch(() => {});
    throw error;
  }
  return { name: scratch.name, adminUrl: scratch.url, urls, logins, close };
}

/** `const r = useRoleDatabase()` at the top of a test file: made before its tests, dropped after. */
export function useRoleDatabase(options: { fresh?: boolean } = {}): RoleDatabase {
  let handle: RoleDatabase | undefined;
  beforeAll(async () => {
    handle = await roleDatabase(options);
  });
  afterAll(async () => {
    await handle?.close();
  });
  return new Proxy({} as RoleDatabase, {
    get(_target, key) {
      if (!handle) throw new Error('the role database is not ready yet (use it inside tests or hooks)');
      return handle[key as keyof RoleDatabase];
    },
  });
}

/** The SQLSTATE of a refused statement (42501: insufficient privilege), or null when it ran. */
export async function sqlStateOf(work: Promise<unknown>): Promise<string | null> {
  try {
    await work;
    return null;
  } catch (error) {
    const e = error as { code?: string; cause?: { code?: string } };
    return e.code ?? e.cause?.code ?? `no SQLSTATE: ${String(error)}`;
  }
}

export { withDatabase };
