/**
 * Databases for a user's tests, on their own PostgreSQL: `createTestDatabase` makes a fresh
 * database with Leasehold's migrations applied (or a clone of a migrated template), with a pool
 * and a Drizzle database over it, and `drop()` removes it. `createTemplateDatabase` migrates a
 * template once per run (a test runner's global setup), so each test file only pays for a copy.
 *
 * Names are `<prefix>_<random hex>`, made here and checked, so nothing the caller gives reaches
 * SQL unquoted. `connectionString` names a server and a database to connect to for CREATE and
 * DROP DATABASE (usually `postgres`); its role needs CREATEDB. The embedded server and this
 * repository's test/ folder are not used: the kit runs wherever `pg` reaches a server.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createDb } from '../db/client.ts';
import { migrateDatabase } from '../db/migrate/index.ts';
import { LeaseholdInputError } from '../db/queue/errors.ts';
import type { DrizzleDatabase } from '../db/queue/executor.ts';

export interface TestDatabase {
  /** The database's name (`leasehold_test_…`). */
  name: string;
  /** Its connection URL: hand it to the code under test. */
  url: string;
  /** A pool over it (closed by `drop()`). */
  pool: pg.Pool;
  /**
   * A Drizzle database over the pool, typed by what the tests do with it: pass it, or a
   * transaction of it (`db.transaction(async (tx) => …)`), wherever an Executor goes. For
   * Drizzle's query builder over your own tables, make a database over `pool` yourself.
   */
  db: DrizzleDatabase;
  /** Closes the pool and drops the database (forcing out other sessions). Safe to call twice. */
  drop: () => Promise<void>;
}

export interface TestDatabaseOptions {
  /**
   * A PostgreSQL URL whose role may CREATE DATABASE, e.g. `process.env.DATABASE_URL`
   * (`postgres://postgres@127.0.0.1:5432/postgres`). The new database is made on that server.
   */
  connectionString: string;
  /**
   * A migrated template's name (from `createTemplateDatabase`): the database is a copy of it,
   * and no migration runs. Without it, Leasehold's migrations are applied to the new database.
   */
  template?: string | undefined;
  /** The name's prefix: lower-case letters, digits and `_` (default `leasehold_test`). */
  prefix?: string | undefined;
  /** Connections in the pool (default 5). */
  max?: number | undefined;
  /**
   * Runs after Leasehold's migrations on the new database (not on a copy of a template: the
   * template had it): the application's own tables or migrations. Its failure drops the database.
   */
  prepare?: ((url: string) => Promise<void>) | undefined;
}

export interface TemplateDatabase {
  name: string;
  url: string;
  /** Drops the template (forcing out other sessions). */
  drop: () => Promise<void>;
}

export interface TemplateOptions {
  /** As for createTestDatabase: a URL whose role may CREATE DATABASE. */
  connectionString: string;
  /** The name's prefix (default `leasehold_template`). */
  prefix?: string | undefined;
  /** Runs after Leasehold's migrations on the template: the application's own tables. */
  prepare?: ((url: string) => Promise<void>) | undefined;
}

const PREFIX_PATTERN = /^[a-z_][a-z0-9_]{0,39}$/;
/** What createTemplateDatabase names make: only such a name is accepted as `template`. */
const DATABASE_NAME_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

/** A fresh database with Leasehold's schema, for one test file (or one test). */
export async function createTestDatabase(options: TestDatabaseOptions): Promise<TestDatabase> {
  const { serverUrl, prefix, max, template } = checkOptions('createTestDatabase', options, 'leasehold_test');
  const name = await createDatabase(serverUrl, prefix, template);
  const url = withDatabase(serverUrl, name);
  const dropDatabase = () => dropByName(serverUrl, name);
  if (!template) {
    try {
      await migrateDatabase(url);
      await options.prepare?.(url);
    } catch (error) {
      await dropDatabase().catch(() => {});
      throw error;
    }
  }
  const handle = createDb(url, { max, applicationName: 'leasehold-testing' });
  let dropping: Promise<void> | null = null;
  return {
    name,
    url,
    pool: handle.pool,
    db: handle.db,
    drop: () =>
      (dropping ??= (async () => {
        await handle.close().catch(() => {});
        await dropDatabase();
      })()),
  };
}

/**
 * A database with Leasehold's migrations (and `prepare`'s tables) for createTestDatabase to
 * copy: make it once in the test runner's global setup, pass its name to the test files
 * (Vitest's `provide`/`inject`, or an environment variable for Jest), drop it in the teardown.
 */
export async function createTemplateDatabase(options: TemplateOptions): Promise<TemplateDatabase> {
  const { serverUrl, prefix } = checkOptions('createTemplateDatabase', options, 'leasehold_template');
  const name = await createDatabase(serverUrl, prefix, undefined);
  const url = withDatabase(serverUrl, name);
  try {
    await migrateDatabase(url);
    await options.prepare?.(url);
  } catch (error) {
    await dropByName(serverUrl, name).catch(() => {});
    throw error;
  }
  return { name, url, drop: () => dropByName(serverUrl, name) };
}

function checkOptions(
  operation: string,
  options: TestDatabaseOptions | TemplateOptions,
  defaultPrefix: string,
): { serverUrl: string; prefix: string; max: number; template: string | undefined } {
  const problems: string[] = [];
  if (typeof options !== 'object' || options === null) {
    throw new LeaseholdInputError(operation, ['options: expected an object with connectionString']);
  }
  const { connectionString } = options;
  let serverUrl = '';
  if (typeof connectionString !== 'string' || connectionString.trim() === '') {
    problems.push('connectionString: required, a PostgreSQL URL whose role may CREATE DATABASE (is DATABASE_URL set?)');
  } else {
    try {
      const parsed = new URL(connectionString);
      if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
        problems.push(`connectionString: expected a postgres:// URL, got one starting ${parsed.protocol}//`);
      }
      serverUrl = connectionString;
    } catch {
      problems.push('connectionString: not a URL (expected postgres://user@host:port/database)');
    }
  }
  const prefix = options.prefix ?? defaultPrefix;
  if (typeof prefix !== 'string' || !PREFIX_PATTERN.test(prefix)) {
    problems.push(`prefix: 1 to 40 of a-z 0-9 _, starting with a letter or _, got ${JSON.stringify(prefix)}`);
  }
  const max = 'max' in options && options.max !== undefined ? options.max : 5;
  if (!Number.isInteger(max) || max < 1 || max > 100) problems.push(`max: a whole number from 1 to 100, got ${max}`);
  const template = 'template' in options ? options.template : undefined;
  if (template !== undefined && (typeof template !== 'string' || !DATABASE_NAME_PATTERN.test(template))) {
    problems.push(
      `template: a database name made by createTemplateDatabase (a-z 0-9 _), got ${JSON.stringify(template)}`,
    );
  }
  if (options.prepare !== undefined && typeof options.prepare !== 'function') {
    problems.push('prepare: expected a function (url) => Promise<void>');
  }
  if (problems.length > 0) throw new LeaseholdInputError(operation, problems);
  return { serverUrl, prefix, max, template };
}

/** The URL of `database` on the same server as `url`. */
function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${encodeURIComponent(database)}`;
  return parsed.toString();
}

async function withAdmin<T>(serverUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: serverUrl, application_name: 'leasehold-testing' });
  client.on('error', () => {});
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => {});
  }
}

async function createDatabase(serverUrl: string, prefix: string, template: string | undefined): Promise<string> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  await withAdmin(serverUrl, async (client) => {
    for (let tries = 0; ; tries++) {
      try {
        await client.query(`CREATE DATABASE "${name}"${template ? ` TEMPLATE "${template}"` : ''}`);
        return;
      } catch (error) {
        // 55006: another session is connected to the template (a copy starting at the same
        // moment, or a tool left open on it); it passes, so wait a little and try again.
        if (tries >= 30 || (error as { code?: string }).code !== '55006') {
          throw new Error(
            `Leasehold testing: could not create database ${name}${template ? ` from template ${template}` : ''}: ${(error as Error).message}`,
            { cause: error },
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 150));
      }
    }
  });
  return name;
}

async function dropByName(serverUrl: string, name: string): Promise<void> {
  await withAdmin(serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
}
