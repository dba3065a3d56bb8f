/**
 * What holds the horizon besides a session (db/queries/health.ts): a logical replication slot
 * and a prepared transaction, each named as the holder. Both need server settings the run's
 * shared server does not have (wal_level = logical, max_prepared_transactions > 0), and a
 * forgotten slot or prepared transaction would hold that server's horizon for every other test
 * file, so this file starts a server of its own (the embedded PostgreSQL 18), with autovacuum
 * off, as this machine's PostgreSQL 15 runs: the autovacuum check must say so as critical.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type DbHandle } from '../db/client.ts';
import { migrateDatabase } from '../db/migrate/index.ts';
import { enqueueMany } from '../db/queue/index.ts';
import { startOwnServer, type OwnServer } from './own-server.ts';
import { healthExitCode, readHealth, type HorizonHolder } from '../db/queries/health.ts';

let server: OwnServer | undefined;
let url = '';
let handle: DbHandle | undefined;
let skipReason: string | undefined;

beforeAll(async () => {
  const started = await startOwnServer('leasehold-holders-', {
    wal_level: 'logical',
    max_prepared_transactions: 4,
    autovacuum: 'off',
  });
  if (typeof started === 'string') {
    skipReason = started;
    return;
  }
  server = started;
  url = server.url;
  await migrateDatabase(url);
  handle = createDb(url, { max: 2, applicationName: 'leasehold-health-test' });
}, 120_000);

afterAll(async () => {
  await handle?.close();
  await server?.stop();
}, 60_000);

async function withClient<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

describe('what holds the horizon, on a server of its own', () => {
  it('names a logical replication slot nobody reads as the holder, until it is dropped', async (ctx) => {
    if (skipReason) return ctx.skip(skipReason);
    await withClient((c) => c.query("SELECT pg_create_logical_replication_slot('leasehold_forgotten', 'pgoutput')"));
    try {
      // Transactions after the slot's: the slot's catalog_xmin falls behind them.
      for (let i = 0; i < 5; i++) {
        await enqueueMany(handle!.db, [{ queue: 'slots', kind: 'health.slot' }]);
      }
      const health = await readHealth(handle!.db, { admin: true });
      const slot = health.holders.find(
        (h): h is Extract<HorizonHolder, { holder: 'replication slot' }> => h.holder === 'replication slot',
      );
      expect(slot).toMatchObject({
        slot: 'leasehold_forgotten',
        slotType: 'logical',
        active: false,
        holds: 'catalog_xmin',
      });
      expect(slot!.xidAge).toBeGreaterThanOrEqual(5);
      // Nothing else holds this server's horizon: the slot is the holder, and an inactive one warns.
      expect(health.holders[0]).toBe(slot);
      const horizon = health.checks.find((c) => c.check === 'horizon')!;
      expect(horizon.state).toBe('warning');
      expect(horizon.sentence).toContain(
        'the inactive logical replication slot `leasehold_forgotten` holds its catalog_xmin',
      );
      expect(horizon.sentence).toContain('pg_drop_replication_slot');
    } finally {
      await withClient((c) => c.query("SELECT pg_drop_replication_slot('leasehold_forgotten')"));
    }
    const after = await readHealth(handle!.db, { admin: true });
    expect(after.holders.some((h) => h.holder === 'replication slot')).toBe(false);
  });

  it('names a prepared transaction as the holder, with its gid and owner, until it is rolled back', async (ctx) => {
    if (skipReason) return ctx.skip(skipReason);
    await withClient(async (c) => {
      await c.query('BEGIN');
      await c.query("INSERT INTO leasehold.queues (name) VALUES ('prepared-holder')");
      await c.query("PREPARE TRANSACTION 'leasehold-test-prepared'");
    });
    try {
      await enqueueMany(handle!.db, [{ queue: 'prepared', kind: 'health.prepared' }]);
      const health = await readHealth(handle!.db, { admin: true, thresholds: { horizonSeconds: [0, 3600] } });
      const holder = health.holders[0];
      expect(holder).toMatchObject({ holder: 'prepared transaction', gid: 'leasehold-test-prepared' });
      expect(holder?.xidAge).toBeGreaterThanOrEqual(1);
      const horizon = health.checks.find((c) => c.check === 'horizon')!;
      expect(horizon.state).toBe('warning');
      expect(horizon.sentence).toMatch(
        /the prepared transaction `leasehold-test-prepared` \(owner \w+\) has waited for COMMIT PREPARED or ROLLBACK PREPARED for \d+ s\.$/,
      );
    } finally {
      await withClient((c) => c.query("ROLLBACK PREPARED 'leasehold-test-prepared'"));
    }
    const after = await readHealth(handle!.db, { admin: true });
    expect(after.holders.some((h) => h.holder === 'prepared transaction')).toBe(false);
  });

  it('says autovacuum is off as critical, and the read as a whole is critical (exit 2)', async (ctx) => {
    if (skipReason) return ctx.skip(skipReason);
    const health = await readHealth(handle!.db, { admin: false });
    const check = health.checks.find((c) => c.check === 'autovacuum')!;
    expect(health.autovacuum).toBe(false);
    expect(check.state).toBe('critical');
    expect(check.sentence).toMatch(
      /^autovacuum is off on this server: nothing removes the dead rows the queue leaves \(/,
    );
    expect(health.state).toBe('critical');
    expect(healthExitCode(health)).toBe(2);
  });
});
