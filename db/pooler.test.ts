/**
 * Leasehold behind a real PgBouncer 1.18 in transaction mode with stock settings
 * (test/pgbouncer.ts), started by this file in front of its own test database: createDb's
 * connections carry no startup parameter the pooler refuses, the timeouts reach every
 * transaction Leasehold opens, and what an enqueuing service and the dashboard do works
 * through it with statements unnamed. Every test checks that its statements ran on one of
 * PgBouncer's server connections, not on a connection of its own.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type DbHandle } from './client.ts';
import { backlog, overview } from './queries/overview.ts';
import { failureGroups, jobDetail, jobListSchema, listAudit, auditListSchema, listJobs } from './queries/jobs.ts';
import {
  cancelIfUnchanged,
  claim,
  completeManyIfLeaseHeld,
  enqueue,
  enqueueMany,
  failIfLeaseHeld,
  pauseQueue,
  retryIfTerminal,
  withMaintenanceLock,
  type Executor,
} from './queue/index.ts';
import { inPoolTransaction, run } from './queue/executor.ts';
import { useTestDatabase } from '../test/db.ts';
import { uniqueQueue } from '../test/factories.ts';
import { startPgBouncer, type PgBouncer } from '../test/pgbouncer.ts';

const t = useTestDatabase();
let bouncer: PgBouncer;
let pooled: DbHandle;
const TIMEOUTS = { statementTimeoutMs: 1500, lockTimeoutMs: 1234, idleInTransactionTimeoutMs: 5678 };
/** A role of Leasehold's own with a statement_timeout of its own (roles are the server's, so named uniquely). */
const role = { name: `leasehold_worker_${randomBytes(4).toString('hex')}`, password: randomBytes(12).toString('hex') };

beforeAll(async () => {
  await run(t.db, sql.raw(`CREATE ROLE ${role.name} LOGIN PASSWORD '${role.password}'`));
  await run(t.db, sql.raw(`ALTER ROLE ${role.name} SET statement_timeout = '2345ms'`));
  bouncer = await startPgBouncer(t.url, { users: [role] });
  pooled = createDb(bouncer.pooled(t.url), {
    max: 4,
    applicationName: 'leasehold-pooler-test',
    preparedStatements: false,
    ...TIMEOUTS,
  });
});
afterAll(async () => {
  await pooled?.close();
  await bouncer?.stop();
  await run(t.db, sql.raw(`DROP ROLE IF EXISTS ${role.name}`));
});

/** The server process `executor`'s statement ran in; the caller checks it is PgBouncer's. */
async function backendPid(executor: Executor): Promise<number> {
  const [row] = await run<{ pid: number }>(executor, sql`SELECT pg_backend_pid() AS pid`);
  return row!.pid;
}
async function expectThroughPooler(pid: number): Promise<void> {
  expect(await bouncer.serverPids(t.name)).toContain(pid);
}

describe('connecting through PgBouncer', () => {
  it('runs PgBouncer 1.18 in transaction mode with stock settings otherwise, as a user other than root', async () => {
    const [version] = await bouncer.admin('SHOW VERSION');
    expect(Object.values(version!)).toContainEqual(expect.stringMatching(/^PgBouncer 1\.18\./));
    const config = Object.fromEntries((await bouncer.admin('SHOW CONFIG')).map((r) => [r.key, r.value]));
    expect(config).toMatchObject({ pool_mode: 'transaction', ignore_startup_parameters: '', auth_type: 'md5' });
    const uid = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${bouncer.pid}/status`, 'utf8'))?.[1];
    expect(Number(uid)).toBeGreaterThan(0);
  });

  it('refuses a pool that sends statement_timeout at connection start (the harness is as strict as production)', async () => {
    const strict = new pg.Pool({ connectionString: bouncer.pooled(t.url), statement_timeout: 30_000, max: 1 });
    try {
      await expect(strict.query('SELECT 1')).rejects.toThrow(/unsupported startup parameter: statement_timeout/);
    } finally {
      await strict.end();
    }
  });

  it("accepts createDb's connections, which send no startup parameter but the application name", async () => {
    expect(await run(pooled.db, sql`SELECT 1 AS one`)).toEqual([{ one: 1 }]);
    const clients = await bouncer.admin('SHOW CLIENTS');
    expect(clients).toContainEqual(
      expect.objectContaining({ database: t.name, application_name: 'leasehold-pooler-test' }),
    );
    await expectThroughPooler(await backendPid(pooled.db));
  });
});

describe('timeouts through PgBouncer', () => {
  const settingsNow = async (executor: Executor) => {
    const [row] = await run<{ statement: string; lock: string; idle: string; pid: number }>(
      executor,
      sql`SELECT current_setting('statement_timeout') AS statement, current_setting('lock_timeout') AS lock,
                 current_setting('idle_in_transaction_session_timeout') AS idle, pg_backend_pid() AS pid`,
    );
    return row!;
  };

  it.each<[string, (work: (tx: Executor) => Promise<unknown>) => Promise<unknown>]>([
    [
      "a transaction of Leasehold's own on the pool (inPoolTransaction: enqueueMany in parts)",
      (work) => inPoolTransaction(pooled.pool, work),
    ],
    [
      'a maintenance round (withMaintenanceLock: the reaper, retention)',
      async (work) => {
        const round = await withMaintenanceLock(pooled.db, `pooler-test-${Math.random()}`, work);
        expect(round.ran).toBe(true);
        return (round as { result: unknown }).result;
      },
    ],
    ["the caller's db.transaction on createDb's database", (work) => pooled.db.transaction(work)],
  ])(
    'sets the configured timeouts at the start of %s, and leaves none on the server connection',
    async (_, inTransaction) => {
      const inside = (await inTransaction((tx) => settingsNow(tx))) as Awaited<ReturnType<typeof settingsNow>>;
      expect(inside).toMatchObject({ statement: '1500ms', lock: '1234ms', idle: '5678ms' });
      await expectThroughPooler(inside.pid);
      // SET LOCAL ended with the transaction: the next client of that server connection gets the
      // server's own settings (what a direct connection sees), whichever connection it is.
      const direct = await settingsNow(t.db);
      for (let i = 0; i < 4; i++) {
        expect(await settingsNow(pooled.db)).toMatchObject({
          statement: direct.statement,
          lock: direct.lock,
          idle: direct.idle,
        });
      }
    },
  );

  it.each([
    [1500, '1500ms'],
    [null, '2345ms'],
  ])(
    "gives single statements the role's statement_timeout, and transactions %s (%s)",
    async (statementTimeoutMs, inTransactions) => {
      const url = new URL(t.url);
      url.username = role.name;
      url.password = role.password;
      const asRole = createDb(bouncer.pooled(url.toString()), {
        max: 2,
        preparedStatements: false,
        statementTimeoutMs,
      });
      try {
        expect(await settingsNow(asRole.db)).toMatchObject({ statement: '2345ms' });
        const inside = await asRole.db.transaction((tx) => settingsNow(tx));
        expect(inside).toMatchObject({ statement: inTransactions });
        await expectThroughPooler(inside.pid);
        const [who] = await run<{ name: string }>(asRole.db, sql`SELECT current_user AS name`);
        expect(who?.name).toBe(role.name);
      } finally {
        await asRole.close();
      }
    },
  );

  it('fails a statement of a Leasehold transaction that runs past the configured statement_timeout', async () => {
    await expect(inPoolTransaction(pooled.pool, (tx) => run(tx, sql`SELECT pg_sleep(10)`))).rejects.toMatchObject({
      code: '57014',
    });
  });
});

describe('enqueue through PgBouncer', () => {
  it('enqueues one job, and a repeat of its idempotency key returns that job', async () => {
    const queue = uniqueQueue('pooled');
    const first = await enqueue(pooled.db, { queue, kind: 'test.noop', idempotencyKey: `one-${queue}` });
    const again = await enqueue(pooled.db, { queue, kind: 'test.noop', idempotencyKey: `one-${queue}` });
    expect(first).toMatchObject({ created: true, job: { state: 'ready', queue } });
    expect(again).toMatchObject({ created: false, id: first.id });
    expect((await jobDetail(t.db, first.id))?.job).toMatchObject({
      id: first.id,
      queue,
      idempotencyKey: `one-${queue}`,
    });
  });

  it('enqueues many jobs in one call, with and without keys, repeats of keys naming the first jobs', async () => {
    const queue = uniqueQueue('pooled-bulk');
    const plain = await enqueueMany(
      pooled.db,
      Array.from({ length: 500 }, (_, n) => ({ queue, kind: 'test.noop', payload: { n } })),
    );
    const keyed = await enqueueMany(
      pooled.db,
      Array.from({ length: 50 }, (_, n) => ({ queue, kind: 'test.noop', idempotencyKey: `bulk-${queue}-${n}` })),
    );
    const repeated = await enqueueMany(
      pooled.db,
      Array.from({ length: 50 }, (_, n) => ({ queue, kind: 'test.noop', idempotencyKey: `bulk-${queue}-${n}` })),
    );
    expect(plain.filter((r) => r.created)).toHaveLength(500);
    expect(keyed.filter((r) => r.created)).toHaveLength(50);
    expect(repeated.map((r) => [r.id, r.created])).toEqual(keyed.map((r) => [r.id, false]));
    expect(await backlog(t.db)).toContainEqual(expect.objectContaining({ queue, ready: 550 }));
  });

  it("commits a job with the caller's transaction and leaves nothing when it rolls back", async () => {
    const queue = uniqueQueue('pooled-tx');
    const committed = await pooled.db.transaction(async (tx) => {
      const result = await enqueue(tx, { queue, kind: 'test.noop', idempotencyKey: `kept-${queue}` });
      await expectThroughPooler(await backendPid(tx));
      return result;
    });
    await expect(
      pooled.db.transaction(async (tx) => {
        await enqueue(tx, { queue, kind: 'test.noop', idempotencyKey: `dropped-${queue}` });
        await enqueueMany(tx, [
          { queue, kind: 'test.noop' },
          { queue, kind: 'test.noop' },
        ]);
        throw new Error('the business write failed');
      }),
    ).rejects.toThrow('the business write failed');
    const listed = await listJobs(t.db, jobListSchema.parse({ queue }));
    expect(listed.jobs.map((j) => j.id)).toEqual([committed.id]);
    // The rolled-back key is free again.
    expect((await enqueue(pooled.db, { queue, kind: 'test.noop', idempotencyKey: `dropped-${queue}` })).created).toBe(
      true,
    );
  });
});

describe('claims, settlements and the dashboard through PgBouncer', () => {
  it('claims and settles jobs over and over with unnamed statements, on whichever server connection', async () => {
    const queue = uniqueQueue('pooled-claims');
    await enqueueMany(
      pooled.db,
      Array.from({ length: 60 }, () => ({ queue, kind: 'test.noop' })),
    );
    const pids = new Set<number>();
    let done = 0;
    // Claims on two connections at once, so server connections move between clients.
    await Promise.all(
      [0, 1].map(async (w) => {
        for (;;) {
          const jobs = await claim(pooled.db, { queues: [queue], workerId: `pooled-${w}`, limit: 3 });
          if (jobs.length === 0) return;
          const outcomes = await completeManyIfLeaseHeld(pooled.db, jobs);
          done += outcomes.filter((o) => o.applied).length;
          pids.add(await backendPid(pooled.db));
        }
      }),
    );
    expect(done).toBe(60);
    expect(await backlog(t.db)).toContainEqual(expect.objectContaining({ queue, ready: 0, running: 0 }));
    const servers = await bouncer.serverPids(t.name);
    for (const pid of pids) expect(servers).toContain(pid);
  });

  it("answers the dashboard's reads and applies its actions", async () => {
    const queue = uniqueQueue('pooled-dash');
    const jobs = await enqueueMany(
      pooled.db,
      Array.from({ length: 3 }, (_, n) => ({ queue, kind: 'test.dash', payload: { n }, maxAttempts: 1 })),
    );
    const [failing, cancelled] = await claim(pooled.db, { queues: [queue], workerId: 'dash', limit: 2 });
    await failIfLeaseHeld(pooled.db, failing!, { error: 'provider said no', failureClass: 'permanent' });
    expect(await failureGroups(pooled.db)).toContainEqual(
      expect.objectContaining({ failureClass: 'permanent', queue, count: 1 }),
    );
    expect(
      await cancelIfUnchanged(pooled.db, { id: cancelled!.id, leaseToken: cancelled!.leaseToken, actor: 'ops@x' }),
    ).toMatchObject({ applied: true });
    expect(await retryIfTerminal(pooled.db, { id: failing!.id, actor: 'ops@x' })).toMatchObject({ applied: true });
    expect(await pauseQueue(pooled.db, { queue, actor: 'ops@x' })).toMatchObject({ applied: true });

    const o = await overview(pooled.db);
    expect(o.queues).toContainEqual(
      expect.objectContaining({ queue, paused: true, ready: 1, retrying: 1, cancelled: 1 }),
    );
    const list = await listJobs(pooled.db, jobListSchema.parse({ queue, sort: 'oldest' }));
    expect(list.jobs.map((j) => j.id).sort()).toEqual(jobs.map((j) => j.id).sort());
    const detail = await jobDetail(pooled.db, failing!.id);
    expect(detail?.attempts).toContainEqual(expect.objectContaining({ outcome: 'failed', failureClass: 'permanent' }));
    expect(detail?.audit.map((a) => a.action)).toContain('retry');
    const audit = await listAudit(pooled.db, auditListSchema.parse({ actor: 'ops@x' }));
    expect(audit.entries.map((e) => e.action).sort()).toEqual(['cancel', 'pause', 'retry']);
    await expectThroughPooler(await backendPid(pooled.db));
  });
});
