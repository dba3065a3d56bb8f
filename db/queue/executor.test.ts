import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../../test/db';
import { runText, toDate } from './executor';

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
