import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { createDb } from '../client.ts';
import { preparedStatementNames, useTestDatabase } from '../../test/db.ts';
import { claim } from './claim.ts';
import { runText, toDate } from './executor.ts';

describe('toDate', () => {
  it('reads PostgreSQL timestamptz text exactly as the Date parser does, with or without a fraction and in any offset', () => {
    for (const text of [
      '2026-11-29 14:10:22.498759+00',
      '2026-11-29 14:10:22+00',
      '2026-11-29 14:10:22.4+00',
      '2026-11-29 14:10:22.45+00',
      '1999-12-31 23:59:59.999999+00',
      '2026-11-29 14:10:22.498759+05:30',
      '2026-11-29 14:10:22.498759-08',
    ]) {
      const iso = text.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00');
      expect(toDate(text).getTime(), text).toBe(new Date(iso).getTime());
    }
  });

  it('refuses text that is not a timestamp', () => {
    expect(() => toDate('2026-11-29 xx:10:22+00')).toThrow(/expected a timestamp/);
    expect(() => toDate('yesterday')).toThrow(/expected a timestamp/);
  });
});

describe('runText', () => {
  const t = useTestDatabase();
  const text = 'SELECT $1::int + $2::int AS n, $1::text AS again, array_length($3::uuid[], 1) AS ids';
  const values = [2, 3, ['01a228f1-07e1-75b2-8676-82522e4a7944', '01a228f1-07e1-75b2-8676-82522e4a7945']];

  it('runs one fixed statement the same on a Drizzle database, prepared or not, and on a pg pool', async () => {
    const expected = [{ n: 5, again: '2', ids: 2 }];
    expect(await runText(t.db, text, values)).toEqual(expected);
    expect(await runText(t.db, text, values, 'leasehold_test_run_text')).toEqual(expected);
    expect(await runText(t.db, text, values, 'leasehold_test_run_text')).toEqual(expected);
    const pool = new pg.Pool({ connectionString: t.url, max: 1 });
    try {
      expect(await runText(pool, text, values, 'leasehold_test_run_text')).toEqual(expected);
    } finally {
      await pool.end();
    }
  });
});

describe('runText when the server forgot a prepared statement', () => {
  const t = useTestDatabase();
  const text = 'SELECT $1::int * 2 AS n';

  it('prepares it again on a pool after DEALLOCATE ALL (a pooler reset), and the call succeeds', async () => {
    const pool = new pg.Pool({ connectionString: t.url, max: 1 });
    try {
      expect(await runText(pool, text, [21], 'leasehold_test_forgot')).toEqual([{ n: 42 }]);
      await pool.query('DEALLOCATE ALL');
      expect(await runText(pool, text, [4], 'leasehold_test_forgot')).toEqual([{ n: 8 }]);
      expect(await runText(pool, text, [5], 'leasehold_test_forgot')).toEqual([{ n: 10 }]);
      // Prepared again under the next generation's name, not left unprepared.
      expect(await preparedStatementNames(pool)).toEqual([expect.stringMatching(/^leasehold_test_forgot_g\d+$/)]);
    } finally {
      await pool.end();
    }
  });

  it("keeps a worker's claims working on a Drizzle database after DEALLOCATE ALL", async () => {
    const one = createDb(t.url, { max: 1 });
    try {
      await one.db.execute(
        sql`INSERT INTO leasehold.jobs (id, queue, kind, payload) VALUES (gen_random_uuid(), 'forgot', 'k', '{}'), (gen_random_uuid(), 'forgot', 'k', '{}')`,
      );
      expect(await claim(one.db, { queues: ['forgot'], workerId: 'w', limit: 1 })).toHaveLength(1);
      await one.db.execute(sql`DEALLOCATE ALL`);
      expect(await claim(one.db, { queues: ['forgot'], workerId: 'w', limit: 1 })).toHaveLength(1);
      // The next claim is prepared again, under the next generation's name.
      expect(await claim(one.db, { queues: ['forgot'], workerId: 'w', limit: 1 })).toEqual([]);
      expect(await preparedStatementNames(one.pool)).toEqual([
        expect.stringMatching(/^leasehold_claim_one_queue_g\d+$/),
      ]);
    } finally {
      await one.close();
    }
  });

  it("fails the call inside the caller's transaction (it is aborted), and the next transaction runs it", async () => {
    const client = new pg.Client({ connectionString: t.url });
    await client.connect();
    try {
      await client.query('BEGIN');
      expect(await runText(client, text, [1], 'leasehold_test_in_tx')).toEqual([{ n: 2 }]);
      await client.query('DEALLOCATE ALL');
      await expect(runText(client, text, [2], 'leasehold_test_in_tx')).rejects.toMatchObject({ code: '26000' });
      await client.query('ROLLBACK');
      await client.query('BEGIN');
      expect(await runText(client, text, [3], 'leasehold_test_in_tx')).toEqual([{ n: 6 }]);
      await client.query('COMMIT');
    } finally {
      await client.end();
    }
  });
});
