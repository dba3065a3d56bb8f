import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { createScratchDatabase, selectDatabase, withDatabase } from './database.ts';

async function query<T extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

describe('selectDatabase', () => {
  it('uses the named server as it is and starts no embedded one', async () => {
    const url = 'postgres://someone:secret@db.example:5433/app';
    const database = await selectDatabase({ databaseUrl: url, dataDir: '/nonexistent/leasehold' });
    expect(database).toMatchObject({ url, embedded: false });
    await expect(database.stop()).resolves.toBeUndefined();
  });
});

describe('withDatabase', () => {
  it('names another database on the same server, keeping user, password and options', () => {
    expect(withDatabase('postgres://u:p%40ss@127.0.0.1:5432/postgres?sslmode=disable', 'leasehold_t_1')).toBe(
      'postgres://u:p%40ss@127.0.0.1:5432/leasehold_t_1?sslmode=disable',
    );
  });
});

describe('createScratchDatabase', () => {
  it('creates a database of its own on the server, and drop() removes it', async () => {
    const serverUrl = inject('serverUrl');
    const scratch = await createScratchDatabase(serverUrl, 'leasehold_scratch');
    expect(scratch.name).toMatch(/^leasehold_scratch_[0-9a-f]{8}$/);
    expect(await query(scratch.url, 'SELECT current_database() AS name')).toEqual([{ name: scratch.name }]);
    await scratch.drop();
    expect(await query(serverUrl, 'SELECT datname FROM pg_database WHERE datname = $1', [scratch.name])).toEqual([]);
  });

  it('clones the template it is given', async () => {
    const scratch = await createScratchDatabase(inject('serverUrl'), 'leasehold_scratch', inject('templateDatabase'));
    try {
      const tables = await query<{ n: number }>(
        scratch.url,
        `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'leasehold' AND table_name = 'jobs'`,
      );
      expect(tables).toEqual([{ n: 1 }]);
    } finally {
      await scratch.drop();
    }
  });
});
