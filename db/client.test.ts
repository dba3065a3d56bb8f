/**
 * createDb's pool on a direct connection: the prepared-statement names that belong to each
 * pool (db/ keeps no process-wide statement state).
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createDb, type CreateDbOptions, type DbHandle } from './client';
import { claim, completeManyIfLeaseHeld, enqueue } from './queue';
import { run } from './queue/executor';
import { preparedStatementNames, useTestDatabase } from '../test/db';
import { uniqueQueue } from '../test/factories';

const t = useTestDatabase();

/** One job enqueued, claimed and completed on `handle`: the three kinds of hot statement. */
async function hotStatements(handle: DbHandle): Promise<void> {
  const queue = uniqueQueue('names');
  await enqueue(handle.db, { queue, kind: 'test.noop' });
  const jobs = await claim(handle.db, { queues: [queue], workerId: 'names', limit: 1 });
  expect(jobs).toHaveLength(1);
  expect(await completeManyIfLeaseHeld(handle.db, jobs)).toEqual([{ applied: true }]);
}

describe('createDb', () => {
  const named = expect.arrayContaining([expect.stringMatching(/^leasehold_/)]);
  it.each<[string, CreateDbOptions, unknown]>([
    ['by default prepares', {}, named],
    ['with preparedStatements: true prepares', { preparedStatements: true }, named],
    ['with preparedStatements: false never prepares', { preparedStatements: false }, []],
  ])('%s its hot statements (enqueue, claim, acknowledgement)', async (_, options, expected) => {
    const handle = createDb(t.url, { max: 1, ...options });
    try {
      await hotStatements(handle);
      await hotStatements(handle); // the second round uses the names the first prepared
      expect(await preparedStatementNames(handle.pool)).toEqual(expected);
    } finally {
      await handle.close();
    }
  });

  it("keeps statement names per pool: one pool's lost statements do not rename another's", async () => {
    const losing = createDb(t.url, { max: 1 });
    const other = createDb(t.url, { max: 1 });
    try {
      await hotStatements(losing);
      await hotStatements(other);
      await run(losing.db, sql`DEALLOCATE ALL`);
      await hotStatements(losing); // loses its names, moves to the next generation
      await hotStatements(losing);
      await hotStatements(other);
      expect(await preparedStatementNames(losing.pool)).toEqual(
        expect.arrayContaining([expect.stringMatching(/^leasehold_\w+_g1$/)]),
      );
      const otherNames = await preparedStatementNames(other.pool);
      expect(otherNames.length).toBeGreaterThan(0);
      expect(otherNames.filter((n) => /_g\d+$/.test(n))).toEqual([]);
    } finally {
      await losing.close();
      await other.close();
    }
  });
});
