/**
 * Per-file test databases: `const t = await testDatabase()` in `beforeAll`, `t.close()` in
 * `afterAll`. The database is a clone of the migrated template, on the run's server.
 */
import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';
import { createDb, type Db, type DbHandle } from '../db/client.ts';
import { createScratchDatabase, type ScratchDatabase } from './scratch-database.ts';

export type { ScratchDatabase };

export interface TestDatabase extends DbHandle {
  url: string;
  name: string;
}

export async function testDatabase(options: { max?: number } = {}): Promise<TestDatabase> {
  const serverUrl = inject('serverUrl');
  const template = inject('templateDatabase');
  const scratch = await createScratchDatabase(serverUrl, template.replace('_tpl_', '_t_'), template);
  const { url, name } = scratch;
  const handle = createDb(url, { max: options.max ?? 20, applicationName: 'leasehold-test' });
  return {
    ...handle,
    url,
    name,
    close: async () => {
      await handle.close();
      await scratch.drop().catch(() => {});
    },
  };
}

/** An empty database (not migrated) on the run's server, for tests of migrating; `drop()` it. */
export function emptyDatabase(prefix: string): Promise<ScratchDatabase> {
  return createScratchDatabase(inject('serverUrl'), prefix);
}

/** Whether the database at `url` has a schema `leasehold` (a command that must not migrate left none). */
export async function hasLeaseholdSchema(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ present: boolean }>(
      "SELECT to_regnamespace('leasehold') IS NOT NULL AS present",
    );
    return rows[0]!.present;
  } finally {
    await client.end();
  }
}

/**
 * `const t = useTestDatabase()` at the top of a test file: creates the file's database before
 * its tests and drops it after. Properties read before `beforeAll` ran throw.
 */
export function useTestDatabase(options: { max?: number } = {}): TestDatabase {
  let handle: TestDatabase | undefined;
  beforeAll(async () => {
    handle = await testDatabase(options);
  });
  afterAll(async () => {
    await handle?.close();
  });
  return new Proxy({} as TestDatabase, {
    get(_target, key) {
      if (!handle) throw new Error('the test database is not ready yet (use it inside tests or hooks)');
      return handle[key as keyof TestDatabase];
    },
  });
}

/** The statements prepared on the pool's connection (give it a pool of one), by name. */
export async function preparedStatementNames(pool: pg.Pool): Promise<string[]> {
  return (await pool.query<{ name: string }>('SELECT name FROM pg_prepared_statements ORDER BY name')).rows.map(
    (r) => r.name,
  );
}

/** A statement as a watched executor shows it: the prepared name, if any, and the text. */
export interface WatchedStatement {
  name: string | undefined;
  text: string;
}

/**
 * A `pg` executor over `pool` that hands every statement to `around(statement, run)` first, so
 * a test can count, delay or fail the statements a service sends (`run` executes it).
 */
export function watchedExecutor(
  pool: pg.Pool,
  around: (statement: WatchedStatement, run: () => Promise<pg.QueryResult>) => Promise<pg.QueryResult>,
): Pick<pg.Pool, 'query'> {
  const query = (config: string | pg.QueryConfig, values?: unknown[]) => {
    const statement =
      typeof config === 'string' ? { name: undefined, text: config } : { name: config.name, text: config.text };
    return around(statement, () => (typeof config === 'string' ? pool.query(config, values) : pool.query(config)));
  };
  return { query } as unknown as Pick<pg.Pool, 'query'>;
}

/**
 * `db` with every statement it sends through `execute` handed to `around(run)` first, to delay
 * or fail it (`run` sends it). With `unprepared`, named statements (claims, acknowledgements)
 * lose their session and go through `execute` too, unprepared.
 */
export function aroundExecute(
  db: Db,
  around: (run: () => Promise<unknown>) => Promise<unknown>,
  options: { unprepared?: boolean } = {},
): Db {
  const execute = db.execute.bind(db) as (...args: unknown[]) => Promise<unknown>;
  return Object.create(db, {
    execute: { value: (...args: unknown[]) => around(() => execute(...args)) },
    ...(options.unprepared ? { session: { value: undefined } } : {}),
  }) as Db;
}
