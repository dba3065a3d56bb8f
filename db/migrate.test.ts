import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { emptyDatabase } from '../test/db';
import { migrateDatabase } from './migrate';

describe('migrations', () => {
  it('apply once when run twice and from two runners at the same time', async () => {
    const scratch = await emptyDatabase('leasehold_mig');
    try {
      const { url } = scratch;
      await Promise.all([migrateDatabase(url), migrateDatabase(url)]);
      await migrateDatabase(url);
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      const applied = await client.query('SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations');
      const tables = await client.query(
        `SELECT table_name FROM information_schema.tables WHERE table_schema = 'leasehold' ORDER BY table_name`,
      );
      await client.end();
      expect(applied.rows[0].n).toBeGreaterThanOrEqual(1);
      expect(tables.rows.map((r) => r.table_name)).toEqual([
        'audit_log',
        'dedupe_keys',
        'finished_rollup',
        'job_attempts',
        'jobs',
        'kinds',
        'leases',
        'queues',
        'ready_jobs',
        'receipts',
        'users',
        'workers',
      ]);
    } finally {
      await scratch.drop();
    }
  });
});
