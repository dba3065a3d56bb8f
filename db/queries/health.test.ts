/**
 * The health read on the run's server (db/queries/health.ts): it names a session that holds the
 * horizon, reads every Leasehold table's figures, turns the server's autovacuum setting into a
 * check, and, as a role without pg_read_all_stats, marks what it cannot read instead of failing.
 * The replication slot and the prepared transaction, which need a server of their own settings,
 * are in test/health-holders.test.ts.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type DbHandle } from '../client.ts';
import { enqueueMany } from '../queue/index.ts';
import { useRoleDatabase } from '../../test/roles.ts';
import { uniqueQueue } from '../../test/factories.ts';
import { healthExitCode, holderText, readHealth, type HorizonHolder } from './health.ts';

const r = useRoleDatabase();
let admin: DbHandle;
let dashboard: DbHandle;
let producer: DbHandle;

beforeAll(() => {
  admin = createDb(r.adminUrl, { max: 4 });
  dashboard = createDb(r.urls.dashboard, { max: 2 });
  producer = createDb(r.urls.producer, { max: 2 });
});
afterAll(async () => {
  await Promise.all([admin.close(), dashboard.close(), producer.close()]);
});

/** A session of the superuser's, `application_name` set, in a transaction that has an xid: it holds the horizon. */
async function holdTransaction(url: string): Promise<{ client: pg.Client; application: string; pid: number }> {
  const application = `health-test-${randomBytes(3).toString('hex')}`;
  const client = new pg.Client({ connectionString: url, application_name: application });
  await client.connect();
  await client.query('BEGIN');
  await client.query('SELECT pg_current_xact_id()');
  const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  return { client, application, pid };
}

const sessionOf = (holders: HorizonHolder[], pid: number) =>
  holders.find((h): h is Extract<HorizonHolder, { holder: 'session' }> => h.holder === 'session' && h.pid === pid);

describe('the health read', () => {
  it('names the session whose open transaction holds the horizon, with the dead rows it keeps, and stops once it commits', async () => {
    const queue = uniqueQueue('health');
    const held = await holdTransaction(r.adminUrl);
    try {
      // Work behind the held transaction: enqueued and removed rows vacuum may not clean.
      await enqueueMany(
        admin.db,
        Array.from({ length: 200 }, () => ({ queue, kind: 'health.test' })),
      );
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const health = await readHealth(dashboard.db, { admin: true, thresholds: { horizonSeconds: [1, 3600] } });
      const session = sessionOf(health.holders, held.pid);
      expect(session, JSON.stringify(health.holders)).toBeDefined();
      expect(session!.application).toBe(held.application);
      expect(session!.ageSeconds).toBeGreaterThanOrEqual(1);
      expect(session!.state).toBe('idle in transaction');
      // An admin sees the client's address and the start of its query; the horizon check names the holder.
      expect(session!.query).toContain('pg_backend_pid');
      const horizon = health.checks.find((c) => c.check === 'horizon')!;
      if (health.holders[0]?.holder === 'session' && health.holders[0].pid === held.pid) {
        expect(horizon.state).toBe('warning');
        expect(horizon.sentence).toContain(`a transaction from \`${held.application}\` (pid ${held.pid}`);
      }
      expect(holderText(session!)).toMatch(
        new RegExp(`^a transaction from \`${held.application}\` \\(pid ${held.pid}, `),
      );
      // A viewer's read leaves out the address and the query.
      const viewer = await readHealth(dashboard.db, { admin: false });
      const seen = sessionOf(viewer.holders, held.pid);
      expect(seen?.clientAddress ?? null).toBeNull();
      expect(seen?.query ?? null).toBeNull();
    } finally {
      await held.client.query('COMMIT');
      await held.client.end();
    }
    const after = await readHealth(dashboard.db, { admin: true, thresholds: { horizonSeconds: [1, 3600] } });
    expect(sessionOf(after.holders, held.pid)).toBeUndefined();
  });

  it('reads every Leasehold table, its tuples and sizes, and the connections by application name', async () => {
    const health = await readHealth(dashboard.db, { admin: false });
    const tables = new Map(health.tables.map((t) => [t.table, t]));
    for (const table of ['jobs', 'ready_jobs', 'leases', 'job_attempts', 'queue_alerts'])
      expect(tables.has(table)).toBe(true);
    expect(tables.get('jobs')!.tableBytes).toBeGreaterThan(0);
    expect(tables.get('jobs')!.indexBytes).toBeGreaterThan(0);
    expect(health.maxConnections).toBeGreaterThan(0);
    expect(health.connections.reduce((n, c) => n + c.count, 0)).toBeGreaterThan(0);
    expect(health.notifyQueueUsage).toBeGreaterThanOrEqual(0);
    expect(health.checks.map((c) => c.check)).toEqual([
      'autovacuum',
      'horizon',
      'dead_tuples',
      'notify_queue',
      'connections',
    ]);
  });

  it('turns the server’s autovacuum setting into the autovacuum check: critical when off', async () => {
    const on = (await admin.pool.query<{ v: string }>("SELECT current_setting('autovacuum') AS v")).rows[0]!.v === 'on';
    const health = await readHealth(dashboard.db, { admin: false });
    const check = health.checks.find((c) => c.check === 'autovacuum')!;
    expect(health.autovacuum).toBe(on);
    expect(check.state).toBe(on ? 'ok' : 'critical');
    if (!on) {
      expect(check.sentence).toMatch(/^autovacuum is off on this server: nothing removes the dead rows/);
      expect(health.state).toBe('critical');
      expect(healthExitCode(health)).toBe(2);
    }
  });

  it('counts a table’s dead rows, and names the table once they pass the thresholds', async () => {
    const queue = uniqueQueue('dead-rows');
    await enqueueMany(
      admin.db,
      Array.from({ length: 3000 }, () => ({ queue, kind: 'health.dead' })),
    );
    await admin.pool.query('DELETE FROM leasehold.ready_jobs WHERE queue = $1', [queue]);
    await admin.pool.query('SELECT pg_stat_force_next_flush()').catch(() => undefined);
    let health = await readHealth(dashboard.db, {
      admin: false,
      thresholds: { deadTuplesFloor: 1000, deadShare: [0.2, 0.99] },
    });
    for (let i = 0; i < 20 && (health.tables.find((t) => t.table === 'ready_jobs')?.deadTuples ?? 0) < 3000; i++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      health = await readHealth(dashboard.db, {
        admin: false,
        thresholds: { deadTuplesFloor: 1000, deadShare: [0.2, 0.99] },
      });
    }
    const ready = health.tables.find((t) => t.table === 'ready_jobs')!;
    expect(ready.deadTuples).toBeGreaterThanOrEqual(3000);
    const check = health.checks.find((c) => c.check === 'dead_tuples')!;
    expect(check.state).toBe('warning');
    expect(check.sentence).toMatch(
      /^(ready_jobs|jobs) holds \d[\d,. k]* dead rows \(\d+ % of its rows\); last vacuumed /,
    );
  });

  it('as a role without pg_read_all_stats marks the horizon not readable, naming the grant, and fails nothing', async () => {
    const held = await holdTransaction(r.adminUrl);
    try {
      const health = await readHealth(producer.db, { admin: false });
      expect(health.activityReadable).toBe(false);
      // Any role sees another user's session's pid, application name and xids, not its start or state.
      const hidden = sessionOf(health.holders, held.pid);
      expect(hidden?.application).toBe(held.application);
      expect(hidden?.ageSeconds).toBeNull();
      expect(hidden?.state).toBeNull();
      const horizon = health.checks.find((c) => c.check === 'horizon')!;
      expect(horizon.state).toBe('unreadable');
      expect(horizon.sentence).toContain("how long it has been open is not readable with this role's grants:");
      expect(horizon.sentence).toContain(`GRANT pg_monitor TO ${r.logins.producer}`);
      // The dashboard's role has the grant (db/roles.sql): it sees how long the session has been open.
      const granted = await readHealth(dashboard.db, { admin: false });
      expect(granted.activityReadable).toBe(true);
      expect(sessionOf(granted.holders, held.pid)?.ageSeconds).toBeGreaterThanOrEqual(0);
      expect(sessionOf(granted.holders, held.pid)?.state).toBe('idle in transaction');
    } finally {
      await held.client.query('ROLLBACK');
      await held.client.end();
    }
  });
});
