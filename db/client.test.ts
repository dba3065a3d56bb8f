/**
 * createDb's pool on a direct connection: what it sends at connection start (nothing but the
 * application name), the limits its transactions set, and the prepared-statement names that
 * belong to each pool (db/ keeps no process-wide statement state). The same behaviour through
 * PgBouncer is in db/pooler.test.ts.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createDb, transactionSettingsText, type CreateDbOptions, type DbHandle } from './client.ts';
import { claim, completeManyIfLeaseHeld, enqueue } from './queue/index.ts';
import { run, type Executor } from './queue/executor.ts';
import { preparedStatementNames, useTestDatabase } from '../test/db.ts';
import { uniqueQueue } from '../test/factories.ts';

const t = useTestDatabase();

const statementTimeout = async (db: Executor) =>
  (await run<{ v: string }>(db, sql`SELECT current_setting('statement_timeout') AS v`))[0]!.v;

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

  it('sends no timeout at connection start and sets the configured ones in each transaction only', async () => {
    const handle = createDb(t.url, { max: 1, statementTimeoutMs: 1500 });
    try {
      const serverDefault = await statementTimeout(t.db);
      expect(await statementTimeout(handle.db)).toBe(serverDefault);
      expect(await handle.db.transaction((tx) => statementTimeout(tx))).toBe('1500ms');
      expect(await statementTimeout(handle.db)).toBe(serverDefault); // SET LOCAL ended with the transaction
    } finally {
      await handle.close();
    }
  });

  it.each([
    [
      {},
      'SET LOCAL statement_timeout = 30000; SET LOCAL lock_timeout = 10000; SET LOCAL idle_in_transaction_session_timeout = 60000',
    ],
    [
      { statementTimeoutMs: 0, lockTimeoutMs: null, idleInTransactionTimeoutMs: null },
      'SET LOCAL statement_timeout = 0',
    ],
    [{ statementTimeoutMs: null, lockTimeoutMs: null, idleInTransactionTimeoutMs: null }, ''],
  ])('turns the timeout options %j into the transaction settings %j', (options, text) => {
    expect(transactionSettingsText(options)).toBe(text);
  });

  it.each([[-1], [1.5], [Number.NaN]])('refuses a timeout of %s ms', (ms) => {
    expect(() => createDb(t.url, { statementTimeoutMs: ms })).toThrow(/statement_timeout must be a whole number/);
  });
});

describe('createDb with queryTimeoutMs', () => {
  it('fails a query that gets no answer in time and drops its connection from the pool', async () => {
    const handle = createDb(t.url, { max: 1, queryTimeoutMs: 300 });
    try {
      const started = performance.now();
      // pg_sleep stands in for a connection that stopped answering (half-open).
      await expect(handle.pool.query('SELECT pg_sleep(5)')).rejects.toThrow(/timeout/i);
      const took = performance.now() - started;
      expect(took).toBeGreaterThanOrEqual(290);
      expect(took).toBeLessThan(3000);
      expect(handle.pool.totalCount).toBe(0);
      // The next query gets a fresh connection and answers.
      expect((await handle.pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await handle.close();
    }
  });
});
