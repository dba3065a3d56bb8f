/**
 * Scratch databases for tests, benchmarks and the failure harness: a fresh database on a
 * server (empty, or cloned from a migrated template), dropped afterwards. Tooling, not the
 * product: test/, bench/, chaos/ and e2e/ import it.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { withDatabase } from '../cli/database-url.ts';

export interface ScratchDatabase {
  name: string;
  url: string;
  /** Drops the database, closing whatever is still connected to it. */
  drop(): Promise<void>;
}

/**
 * A new database named `<prefix>_<random>` on the server of `serverUrl` (tests, benchmarks, the
 * failure harness), empty or cloned from `template`. Clones of one template started at the
 * same moment can collide (55006); those are tried again briefly.
 */
export async function createScratchDatabase(
  serverUrl: string,
  prefix: string,
  template?: string,
): Promise<ScratchDatabase> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    for (let tries = 0; ; tries++) {
      try {
        await admin.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
        break;
      } catch (error) {
        if (tries >= 20 || (error as { code?: string }).code !== '55006') throw error;
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
      }
    }
  } finally {
    await admin.end();
  }
  return {
    name,
    url: withDatabase(serverUrl, name),
    drop: async () => {
      const client = new pg.Client({ connectionString: serverUrl });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}
