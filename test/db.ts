/**
 * Per-file test databases: `const t = await testDatabase()` in `beforeAll`, `t.close()` in
 * `afterAll`. The database is a clone of the migrated template, on the run's server.
 */
import type pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';
import { createDb, type DbHandle } from '../db/client';
import { createScratchDatabase } from '../db/database';

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
