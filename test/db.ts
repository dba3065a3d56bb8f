/**
 * Per-file test databases: `const t = await testDatabase()` in `beforeAll`, `t.close()` in
 * `afterAll`. The database is a clone of the migrated template, on the run's server.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';
import { createDb, type DbHandle } from '../db/client';
import { withDatabase } from '../db/database';

export interface TestDatabase extends DbHandle {
  url: string;
  name: string;
}

export async function testDatabase(options: { max?: number } = {}): Promise<TestDatabase> {
  const serverUrl = inject('serverUrl');
  const template = inject('templateDatabase');
  const name = `${template.replace('_tpl_', '_t_')}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    // Two files cloning the template at the same moment can collide; try again briefly.
    for (let tries = 0; ; tries++) {
      try {
        await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
        break;
      } catch (error) {
        if (tries >= 20 || (error as { code?: string }).code !== '55006') throw error;
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
      }
    }
  } finally {
    await admin.end();
  }
  const url = withDatabase(serverUrl, name);
  const handle = createDb(url, { max: options.max ?? 20, applicationName: 'leasehold-test' });
  return {
    ...handle,
    url,
    name,
    close: async () => {
      await handle.close();
      const drop = new pg.Client({ connectionString: serverUrl });
      await drop.connect();
      await drop.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await drop.end();
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
