/**
 * In a file of its own: the fallback's warning is for the whole process, and a test that
 * counts it must not see another file's (vitest runs each test file in its own module graph).
 */
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { preparedStatementNames, useTestDatabase } from '../../test/db.ts';
import { LOST_LIMIT, MAX_GENERATIONS, runText, StatementNames } from './executor.ts';

describe('runText when prepared statements keep vanishing', () => {
  const t = useTestDatabase();
  const text = 'SELECT $1::int * 2 AS n';

  it('runs statements unprepared, with one warning, once they keep vanishing (a pooler without prepared statements)', async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    const pool = new pg.Pool({ connectionString: t.url, max: 1 });
    try {
      // A loss is seen when a name the driver holds as prepared is used again: every other call here.
      for (let i = 0; i < 2 * LOST_LIMIT + 1; i++) {
        expect(await runText(pool, text, [i], 'leasehold_test_vanishing')).toEqual([{ n: 2 * i }]);
        await pool.query('DEALLOCATE ALL');
      }
      await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
      expect(warnings.filter((w) => (w as { code?: string }).code === 'LEASEHOLD_UNPREPARED')).toHaveLength(1);
      expect(await runText(pool, text, [7], 'leasehold_test_vanishing')).toEqual([{ n: 14 }]);
      expect(await runText(pool, text, [8], 'leasehold_test_vanishing')).toEqual([{ n: 16 }]);
      expect(await preparedStatementNames(pool)).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      await pool.end();
    }
  });
});

describe('statement names', () => {
  afterEach(() => vi.useRealTimers());

  it('move on once for a loss that several statements in flight saw', () => {
    const names = new StatementNames();
    const seenBy = names.generation;
    names.lost(seenBy);
    names.lost(seenBy);
    names.lost(seenBy);
    expect(names.current('leasehold_claim')).toBe('leasehold_claim_g1');
  });

  it(`stop naming statements after ${MAX_GENERATIONS} generations, however far apart the losses`, () => {
    vi.useFakeTimers();
    const names = new StatementNames();
    for (let i = 1; i < MAX_GENERATIONS; i++) {
      names.lost(names.generation);
      vi.advanceTimersByTime(61_000); // never LOST_LIMIT within a minute
    }
    expect(names.current('leasehold_claim')).toBe(`leasehold_claim_g${MAX_GENERATIONS - 1}`);
    names.lost(names.generation);
    expect(names.current('leasehold_claim')).toBeUndefined();
  });
});
