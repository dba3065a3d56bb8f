/**
 * Each part of Leasehold under its own database role (db/roles.sql), on real logins: the
 * migrator migrates an empty database, the producer enqueues, the worker claims, settles,
 * reaps and cleans up, the dashboard reads and acts; and each is refused (42501) what its part
 * does not do. The worker's runtime loop and the data-access layer have files of their own
 * (workers/roles.test.ts, lib/dal/roles.test.ts).
 */
import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type DbHandle } from './client.ts';
import { MIGRATIONS_FOLDER, readMigrations } from './migrate/index.ts';
import {
  addRedactedPath,
  cancelIfUnchanged,
  claim,
  completeIfLeaseHeld,
  deregisterWorker,
  enqueue,
  enqueueMany,
  failIfLeaseHeld,
  findReceipt,
  heartbeatIfLeaseHeld,
  listWorkers,
  pauseQueue,
  reapExpiredLeases,
  recordReceipt,
  registerKinds,
  registerWorker,
  releaseIfLeaseHeld,
  removeAddedRedactedPath,
  removeExpiredHistory,
  removeOldAudit,
  removeOldReceipts,
  removeStaleWorkers,
  resumeQueue,
  retryIfTerminal,
  touchWorker,
  withMaintenanceLock,
  claimReceiptIfLeaseHeld,
  declareLimits,
  dropReceiptClaim,
  pauseLimit,
  setLimit,
  declareSchedules,
  defineJob,
  defineSchedule,
  getSchedule,
  pauseSchedule,
  runDueSchedules,
} from './queue/index.ts';
import { run } from './queue/executor.ts';
import { backlog, deadByClass, overview } from './queries/overview.ts';
import { failureGroups, jobDetail, jobListSchema, listAudit, listJobs, previewForAction } from './queries/jobs.ts';
import { applyRoles, LEASEHOLD_ROLES, rolesSql, type LeaseholdRole } from './roles.ts';
import { schemaCompatibility } from './schema-version.ts';
import { LIST_STATES, subStateOf } from './states.ts';
import { recordSignIn, recordSignInFailure } from './sign-in.ts';
import { findUserByEmail, raiseSessionVersion, upsertUser } from './users.ts';
import { expireLease, getJob, mixedFixture, uniqueQueue, MIXED_FIXTURE_COUNTS } from '../test/factories.ts';
import { roleDatabase, sqlStateOf, useRoleDatabase, type RoleDatabase } from '../test/roles.ts';
import { until } from '../test/wait.ts';

const r = useRoleDatabase({ fresh: true });
const as = {} as Record<LeaseholdRole | 'admin', DbHandle>;
beforeAll(() => {
  for (const role of Object.keys(LEASEHOLD_ROLES) as LeaseholdRole[]) as[role] = createDb(r.urls[role], { max: 4 });
  as.admin = createDb(r.adminUrl, { max: 4 });
});
afterAll(async () => {
  await Promise.all(Object.values(as).map((h) => h.close()));
});

const refused = '42501';
const one = async (handle: DbHandle, text: string, values: unknown[] = []) =>
  (await handle.pool.query(text, values)).rows[0] as Record<string, unknown> | undefined;

/** ACLs and owners of schema leasehold and all it holds, to compare two runs of the script. */
async function grantsOf(url: string) {
  const handle = createDb(url, { max: 1 });
  try {
    const { rows } = await handle.pool.query(`
      SELECT 'schema' AS kind, nspname AS name, pg_get_userbyid(nspowner) AS owner, nspacl::text AS acl
      FROM pg_namespace WHERE nspname = 'leasehold'
      UNION ALL
      SELECT relkind::text, relname, pg_get_userbyid(relowner), relacl::text FROM pg_class
      WHERE relnamespace = 'leasehold'::regnamespace AND relkind IN ('r', 'v', 'S')
      UNION ALL
      SELECT 'column', c.relname || '.' || a.attname, NULL, a.attacl::text
      FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
      WHERE c.relnamespace = 'leasehold'::regnamespace AND a.attacl IS NOT NULL
      UNION ALL
      SELECT 'function', p.oid::regprocedure::text, pg_get_userbyid(p.proowner), p.proacl::text FROM pg_proc p
      WHERE p.pronamespace = 'leasehold'::regnamespace
      ORDER BY 1, 2`);
    return rows as { kind: string; name: string; owner: string | null; acl: string | null }[];
  } finally {
    await handle.close();
  }
}

describe('the migrator', () => {
  it('migrates an empty database as its own login, and the group owns everything made', async () => {
    expect(await one(as.migrator, 'SELECT current_user AS role')).toEqual({ role: 'leasehold_migrator' });
    const journal = await as.admin.pool.query('SELECT name FROM leasehold.migrations ORDER BY position');
    expect(journal.rows.map((row) => row.name)).toEqual(readMigrations(MIGRATIONS_FOLDER).map((m) => m.name));
    const owners = (await grantsOf(r.adminUrl)).filter((g) => g.owner !== null);
    expect(owners.filter((g) => g.owner !== 'leasehold_migrator')).toEqual([]);
    expect(owners.map((g) => g.name)).toEqual(expect.arrayContaining(['jobs', 'jobs_view', 'queue_stats']));
  });

  it('cannot make roles: the DBA runs db/roles.sql', async () => {
    expect(await sqlStateOf(as.migrator.pool.query('CREATE ROLE lh_should_not_exist'))).toBe(refused);
  });
});

describe('the producer', () => {
  it('enqueues through TypeScript: one job, with aging priority, with a key (twice), and many', async () => {
    const queue = uniqueQueue('prod-ts');
    const plain = await enqueue(as.producer.db, { queue, kind: 'k', payload: { n: 1 } });
    const urgent = await enqueue(as.producer.db, { queue, kind: 'k', priority: 7 });
    const first = await enqueue(as.producer.db, { queue, kind: 'k', idempotencyKey: `key-${queue}` });
    const again = await enqueue(as.producer.db, { queue, kind: 'k', idempotencyKey: `key-${queue}` });
    const many = await enqueueMany(as.producer.db, [
      { queue, kind: 'k' },
      { queue, kind: 'k', idempotencyKey: `key-${queue}` },
      { queue, kind: 'k', idempotencyKey: `other-${queue}` },
    ]);
    expect([plain.created, urgent.created, first.created, again.created]).toEqual([true, true, true, false]);
    expect(again).toMatchObject({ id: first.id, job: { id: first.id, state: 'ready' } });
    expect(many.map((m) => m.created)).toEqual([true, false, true]);
    expect(many[1]!.id).toBe(first.id);
    const ready = await as.admin.pool.query('SELECT id FROM leasehold.ready_jobs WHERE queue = $1 ORDER BY id', [
      queue,
    ]);
    expect(ready.rows.map((row) => row.id)).toEqual([plain.id, urgent.id, first.id, many[0]!.id, many[2]!.id].sort());
  });

  it('enqueues through leasehold.enqueue, and a worker claims the job', async () => {
    const queue = uniqueQueue('prod-sql');
    const made = await one(as.producer, `SELECT * FROM leasehold.enqueue('k', '{"n": 2}', $1, priority => 3)`, [queue]);
    expect(made).toMatchObject({ created: true });
    const [job] = await claim(as.worker.db, { queues: [queue], workerId: 'w-prod' });
    expect(job).toMatchObject({ id: made!.id, payload: { n: 2 }, priority: 3 });
  });

  it('is refused claims, settlements, writes beyond a new job and every other table (42501)', async () => {
    const queue = uniqueQueue('prod-refused');
    const { id } = await enqueue(as.producer.db, { queue, kind: 'k' });
    expect(await sqlStateOf(claim(as.producer.db, { queues: [queue], workerId: 'p' }))).toBe(refused);
    const [lease] = await claim(as.worker.db, { queues: [queue], workerId: 'w' });
    expect(await sqlStateOf(completeIfLeaseHeld(as.producer.db, lease!))).toBe(refused);
    expect(await sqlStateOf(retryIfTerminal(as.producer.db, { id, actor: 'p' }))).toBe(refused);
    const statements = [
      ...[
        'ready_jobs',
        'leases',
        'job_attempts',
        'finished_rollup',
        'audit_log',
        'users',
        'workers',
        'receipts',
        'unique_keys',
      ].map((table) => `SELECT 1 FROM leasehold.${table} LIMIT 1`),
      // Of the kinds registry, only a kind's job settings (the bounds enqueue checks a job's own against).
      'SELECT payload_schema FROM leasehold.kinds LIMIT 1',
      // A uniqueness key goes through take_unique_key alone; a job's options and tags are written once.
      `INSERT INTO leasehold.unique_keys (key, job_id, queue) VALUES ('k-${queue}', '${id}', '${queue}')`,
      `UPDATE leasehold.jobs SET options = '{}', tags = ARRAY['x'] WHERE id = '${id}'`,
      'SELECT 1 FROM leasehold.jobs_view LIMIT 1',
      'SELECT 1 FROM leasehold.queue_stats LIMIT 1',
      `INSERT INTO leasehold.ready_jobs (queue, claim_at, run_at, id, kind) VALUES ('x', now(), now(), gen_random_uuid(), 'k')`,
      `INSERT INTO leasehold.jobs (id, kind, state, attempts) VALUES (gen_random_uuid(), 'k', 'ready', 5)`,
      `UPDATE leasehold.jobs SET priority = 100 WHERE id = '${id}'`,
      `DELETE FROM leasehold.dedupe_keys`,
      `INSERT INTO leasehold.queues (name, paused) VALUES ('${queue}', true)`,
    ];
    const states = await Promise.all(statements.map((s) => sqlStateOf(as.producer.pool.query(s))));
    expect(Object.fromEntries(statements.map((s, i) => [s, states[i]]))).toEqual(
      Object.fromEntries(statements.map((s) => [s, refused])),
    );
  });
});

describe('the producer, writing its own rows', () => {
  const insertJob = (columns: string, values: string) =>
    sqlStateOf(
      as.producer.pool.query(`INSERT INTO leasehold.jobs (id, ${columns}) VALUES (gen_random_uuid(), ${values})`),
    );

  it('is refused by the table what leasehold.enqueue refuses: names, a sort key jumping every priority, 3.8 MB', async () => {
    const queue = uniqueQueue('prod-direct');
    const checked = '23514';
    expect(await insertJob('queue, kind', `'${queue}', E'red\\nteam'`)).toBe(checked);
    expect(await insertJob('queue, kind', `'${queue}', '<b>kind</b>'`)).toBe(checked);
    expect(await insertJob('queue, kind', `E'q\\n${queue}', 'k'`)).toBe(checked);
    expect(await insertJob('queue, kind, run_at, claim_at', `'${queue}', 'k', now(), '0001-01-01'`)).toBe(checked);
    expect(
      await insertJob('queue, kind, payload', `'${queue}', 'k', jsonb_build_object('blob', repeat('x', 3800000))`),
    ).toBe(checked);
    // What the enqueues write still goes in: the highest priority, as the TypeScript enqueue sets it.
    expect(
      await insertJob(
        'queue, kind, priority, run_at, claim_at',
        `'${queue}', 'k', 100, now(), now() - interval '100 minutes'`,
      ),
    ).toBeNull();
    expect(await one(as.admin, 'SELECT count(*)::int AS n FROM leasehold.jobs WHERE queue = $1', [queue])).toEqual({
      n: 1,
    });
  });

  it('cannot leave an idempotency key pointing at no job, so a later enqueue with it makes the job', async () => {
    const queue = uniqueQueue('prod-key');
    const key = `orphan-${queue}`;
    const client = await as.producer.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(
        `INSERT INTO leasehold.dedupe_keys (key, job_id, queue, expires_at) VALUES ($1, gen_random_uuid(), $2, now() + interval '1 day')`,
        [key, queue],
      );
      expect(await sqlStateOf(client.query('COMMIT'))).toBe('23503');
    } finally {
      client.release();
    }
    expect(await one(as.admin, 'SELECT count(*)::int AS n FROM leasehold.dedupe_keys WHERE key = $1', [key])).toEqual({
      n: 0,
    });
    const first = await enqueue(as.producer.db, { queue, kind: 'k', idempotencyKey: key });
    expect(first.created).toBe(true);
    expect(await getJob(as.admin.db, first.id)).toMatchObject({ state: 'ready', idempotencyKey: key });
    // Through leasehold.enqueue too, and a repeat finds the job.
    const [viaSql] = (
      await as.producer.pool.query(
        'SELECT id, created FROM leasehold.enqueue($1, queue => $2, idempotency_key => $3)',
        ['k', queue, `sql-${key}`],
      )
    ).rows as { id: string; created: boolean }[];
    expect(viaSql!.created).toBe(true);
    // A running job found by its key comes back without its lease token.
    const [lease] = await claim(as.worker.db, { queues: [queue], workerId: 'w-key', limit: 10 });
    expect(lease).toBeDefined();
    const again = await enqueue(as.producer.db, { queue, kind: 'k', idempotencyKey: key });
    expect(again).toMatchObject({ created: false, id: first.id });
    expect(again.job).toMatchObject({ state: 'running', leaseToken: null });
  });
});

describe('the worker', () => {
  it('claims, heartbeats, completes, fails, releases and reaps', async () => {
    const queue = uniqueQueue('work');
    await enqueueMany(
      as.producer.db,
      Array.from({ length: 5 }, (_, n) => ({ queue, kind: 'k', payload: { n } })),
    );
    const leased = await claim(as.worker.db, { queues: [queue], workerId: 'w-work', limit: 5, leaseSeconds: 30 });
    const [done, retried, dead, released, crashed] = leased.sort(
      (a, b) => (a.payload as { n: number }).n - (b.payload as { n: number }).n,
    );
    expect(await heartbeatIfLeaseHeld(as.worker.db, done!, { leaseSeconds: 60 })).toMatchObject({ applied: true });
    expect(await completeIfLeaseHeld(as.worker.db, done!)).toEqual({ applied: true });
    expect(
      await failIfLeaseHeld(as.worker.db, retried!, { error: 'provider 503', failureClass: 'transient' }),
    ).toMatchObject({
      applied: true,
      state: 'ready',
    });
    expect(
      await failIfLeaseHeld(as.worker.db, dead!, { error: 'bad payload', failureClass: 'permanent' }),
    ).toMatchObject({
      applied: true,
      state: 'dead',
    });
    expect(await releaseIfLeaseHeld(as.worker.db, released!, { reason: 'shutdown' })).toEqual({ applied: true });
    await expireLease(as.admin.db, crashed!.id); // as if the lease had run out
    expect(await reapExpiredLeases(as.worker.db, { limit: 100 })).toMatchObject({ retried: [crashed!.id] });
    const states = await Promise.all(leased.map((j) => getJob(as.admin.db, j.id)));
    expect(Object.fromEntries(states.map((j) => [j.id, j.state]))).toEqual({
      [done!.id]: 'done',
      [retried!.id]: 'ready',
      [dead!.id]: 'dead',
      [released!.id]: 'ready',
      [crashed!.id]: 'ready',
    });
  });

  it('keeps the registry and the receipts, and removes expired history under the maintenance lock', async () => {
    const queue = uniqueQueue('work-keep');
    const workerId = `w-${queue}`;
    await registerWorker(as.worker.db, { id: workerId, host: 'h', pid: 1, queues: [queue], concurrency: 1 });
    expect(await touchWorker(as.worker.db, workerId)).toBe(true);
    expect((await listWorkers(as.worker.db, 60)).map((w) => w.id)).toContain(workerId);
    const { id } = await enqueue(as.producer.db, { queue, kind: 'k', idempotencyKey: `old-${queue}` });
    const [lease] = await claim(as.worker.db, { queues: [queue], workerId });
    // The receipt's claim, its takeover guard and its removal run as the worker too.
    expect(await claimReceiptIfLeaseHeld(as.worker.db, `receipt-${queue}`, lease!)).toEqual({ kind: 'claimed' });
    expect(await claimReceiptIfLeaseHeld(as.worker.db, `dropped-${queue}`, lease!)).toEqual({ kind: 'claimed' });
    await dropReceiptClaim(as.worker.db, `dropped-${queue}`, lease!);
    await recordReceipt(as.worker.db, {
      key: `receipt-${queue}`,
      jobId: id,
      attempt: 1,
      result: { sent: true },
      leaseToken: lease!.leaseToken,
    });
    expect(await findReceipt(as.worker.db, `receipt-${queue}`)).toMatchObject({ result: { sent: true } });
    await failIfLeaseHeld(as.worker.db, lease!, { error: 'gone', failureClass: 'permanent' });
    // As if weeks had passed.
    await run(
      as.admin.db,
      sql`UPDATE leasehold.jobs SET created_at = now() - interval '40 days', finished_at = now() - interval '30 days' WHERE id = ${id}::uuid`,
    );
    await run(
      as.admin.db,
      sql`UPDATE leasehold.job_attempts SET ended_at = now() - interval '30 days' WHERE job_id = ${id}::uuid`,
    );
    await run(
      as.admin.db,
      sql`UPDATE leasehold.dedupe_keys SET expires_at = now() - interval '1 day' WHERE job_id = ${id}::uuid`,
    );
    await run(
      as.admin.db,
      sql`UPDATE leasehold.receipts SET created_at = now() - interval '40 days' WHERE job_id = ${id}::uuid`,
    );
    await run(
      as.admin.db,
      sql`UPDATE leasehold.workers SET last_seen_at = now() - interval '1 hour' WHERE id = ${workerId}`,
    );
    const round = await withMaintenanceLock(as.worker.db, `retention-${queue}`, async (tx) => ({
      history: await removeExpiredHistory(tx, { limit: 1000 }),
      // A key goes once its job is gone: in the round after the job's.
      keys: await removeExpiredHistory(tx, { limit: 1000 }),
      receipts: await removeOldReceipts(tx, { olderThanSeconds: 30 * 86400 }),
      stale: await removeStaleWorkers(tx, 60),
    }));
    expect(round).toMatchObject({ ran: true, result: { keys: { dedupeKeys: 1 }, receipts: 1, stale: 1 } });
    const left = await one(
      as.admin,
      `SELECT (SELECT count(*) FROM leasehold.jobs WHERE id = $1)::int AS jobs,
              (SELECT count(*) FROM leasehold.job_attempts WHERE job_id = $1)::int AS attempts,
              (SELECT count(*) FROM leasehold.dedupe_keys WHERE job_id = $1)::int AS keys`,
      [id],
    );
    expect(left).toEqual({ jobs: 0, attempts: 0, keys: 0 });
    await registerWorker(as.worker.db, { id: workerId, host: 'h', pid: 1, queues: [queue], concurrency: 1 });
    await deregisterWorker(as.worker.db, workerId);
    expect((await listWorkers(as.worker.db, 3600)).map((w) => w.id)).not.toContain(workerId);
    expect(await schemaCompatibility(as.worker.db)).toMatchObject({ ok: true });
  });

  it("is refused enqueues, operator actions and the dashboard's tables (42501)", async () => {
    const queue = uniqueQueue('work-refused');
    const { id } = await enqueue(as.producer.db, { queue, kind: 'k' });
    const [lease] = await claim(as.worker.db, { queues: [queue], workerId: 'w' });
    await failIfLeaseHeld(as.worker.db, lease!, { error: 'bad', failureClass: 'permanent' });
    expect(await sqlStateOf(enqueue(as.worker.db, { queue, kind: 'k' }))).toBe(refused);
    expect(await sqlStateOf(retryIfTerminal(as.worker.db, { id, actor: 'w' }))).toBe(refused);
    expect(await sqlStateOf(pauseQueue(as.worker.db, { queue, actor: 'w' }))).toBe(refused);
    for (const statement of [
      'SELECT 1 FROM leasehold.users',
      'SELECT 1 FROM leasehold.audit_log',
      `UPDATE leasehold.jobs SET payload = '{}'`,
    ]) {
      expect({ statement, state: await sqlStateOf(as.worker.pool.query(statement)) }).toEqual({
        statement,
        state: refused,
      });
    }
    expect((await getJob(as.admin.db, id)).state).toBe('dead');
  });

  it('declares limits, claims under a maximum and a rate, pauses one, and cannot write a run-time value (42501)', async () => {
    const queue = uniqueQueue('work-limits');
    const kind = `k-${queue}`;
    await declareLimits(as.worker.db, [
      { scope: 'kind', name: kind, max: 3, rate: { max: 2, perMs: 60_000 }, kinds: [kind] },
    ]);
    await enqueueMany(
      as.producer.db,
      [1, 2, 3].map(() => ({ queue, kind })),
    );
    const taken = await claim(as.worker.db, {
      queues: [queue],
      workerId: 'w-limits',
      limit: 3,
      limits: [`kind:${kind}`],
    });
    expect(taken).toHaveLength(2); // the rate's 2 a minute
    await completeIfLeaseHeld(as.worker.db, taken[0]!);
    expect(await pauseLimit(as.worker.db, `kind:${kind}`, 1000, 'RateLimitedError: 429')).toBeInstanceOf(Date);
    for (const statement of [
      `UPDATE leasehold.limits SET set_max = 100 WHERE key = 'kind:${kind}'`,
      `UPDATE leasehold.limits SET set_rate = 100, set_per_ms = 1 WHERE key = 'kind:${kind}'`,
      `INSERT INTO leasehold.limits (key, scope, name, set_max) VALUES ('kind:y-${kind}', 'kind', 'y-${kind}', 5)`,
      `SELECT * FROM leasehold.set_limit('kind', '${kind}', true, 100, false, NULL, NULL, false, 'w', NULL)`,
    ]) {
      expect({ statement, state: await sqlStateOf(as.worker.pool.query(statement)) }).toEqual({
        statement,
        state: refused,
      });
    }
    // The dashboard sets it through set_limit, audited.
    await expect(setLimit(as.dashboard.db, { scope: 'kind', name: kind, max: 5, actor: 'ops' })).resolves.toMatchObject(
      {
        after: { max: 5 },
      },
    );
  });
});

describe('schedules', () => {
  it('the worker declares and ticks them only through their functions; the dashboard pauses one, audited (42501 else)', async () => {
    const queue = uniqueQueue('sched');
    const job = defineJob({ kind: `tick-${queue}`, version: 1, queue, schema: z.strictObject({}) });
    const name = `roles-${queue}`;
    await declareSchedules(as.worker.db, [defineSchedule({ name, job, cron: '* * * * * *', payload: {} })]);
    await until('a tick enqueued by the worker role', async () => {
      const { ticks } = await runDueSchedules(as.worker.db);
      return ticks.some((x) => x.schedule === name && x.outcome === 'enqueued');
    });
    for (const statement of [
      `UPDATE leasehold.schedules SET ticks_after = now() - interval '1 day' WHERE name = '${name}'`,
      `INSERT INTO leasehold.schedule_ticks (schedule, tick_at, outcome, at) VALUES ('${name}', now(), 'missed', now())`,
      `SELECT * FROM leasehold.set_schedule('pause_schedule', '${name}', NULL, 'w', NULL)`,
    ]) {
      expect({ statement, state: await sqlStateOf(as.worker.pool.query(statement)) }).toEqual({
        statement,
        state: refused,
      });
    }
    for (const statement of [
      `UPDATE leasehold.schedules SET paused = true WHERE name = '${name}'`,
      `SELECT * FROM leasehold.due_schedules(10)`,
      `SELECT * FROM leasehold.declare_schedules('[]'::jsonb)`,
    ]) {
      expect({ statement, state: await sqlStateOf(as.dashboard.pool.query(statement)) }).toEqual({
        statement,
        state: refused,
      });
    }
    expect((await pauseSchedule(as.dashboard.db, name, { actor: 'ops@example.com', reason: 'roles' })).verdict).toBe(
      'applied',
    );
    expect((await getSchedule(as.producer.db, name).catch((e: unknown) => e)) instanceof Error).toBe(true);
  });
});

describe('the maintenance lock', () => {
  const reaperRound = () => withMaintenanceLock(as.worker.db, 'reaper', async () => 'reaped');

  it("is not held back by a producer's or the dashboard's login holding the advisory lock", async () => {
    for (const login of ['producer', 'dashboard'] as const) {
      const holder = await as[login].pool.connect();
      try {
        expect(
          (await holder.query(`SELECT pg_advisory_lock(19528, hashtext('reaper')) IS NOT NULL AS held`)).rows,
        ).toEqual([{ held: true }]);
        expect(await reaperRound()).toEqual({ ran: true, result: 'reaped' });
      } finally {
        await holder.query(`SELECT pg_advisory_unlock(19528, hashtext('reaper'))`);
        holder.release();
      }
    }
  });

  it('lets the worker remove old audit rows only through remove_old_audit, never under 90 days', async () => {
    const actor = `old-${uniqueQueue()}`;
    await as.admin.pool.query(
      `INSERT INTO leasehold.audit_log (at, actor, action, requested, affected, outcome)
       VALUES (now() - interval '401 days', $1, 'pause', 1, 1, 'applied'), (now() - interval '30 days', $1, 'pause', 1, 1, 'applied')`,
      [actor],
    );
    expect(await removeOldAudit(as.worker.db)).toBeGreaterThanOrEqual(1);
    expect(await sqlStateOf(as.worker.pool.query('DELETE FROM leasehold.audit_log WHERE actor = $1', [actor]))).toBe(
      refused,
    );
    expect(await sqlStateOf(as.worker.pool.query(`SELECT leasehold.remove_old_audit(interval '1 day')`))).toBe('22023');
    expect(await sqlStateOf(as.producer.pool.query(`SELECT leasehold.remove_old_audit()`))).toBe(refused);
    expect(await one(as.admin, 'SELECT count(*)::int AS n FROM leasehold.audit_log WHERE actor = $1', [actor])).toEqual(
      { n: 1 },
    );
  });

  it("cannot be taken by a producer's or the dashboard's login (42501)", async () => {
    for (const login of ['producer', 'dashboard'] as const) {
      expect(
        await sqlStateOf(
          as[login].pool.query(
            `SELECT task FROM leasehold.maintenance_locks WHERE task = 'reaper' FOR UPDATE SKIP LOCKED`,
          ),
        ),
      ).toBe(refused);
      expect(
        await sqlStateOf(as[login].pool.query(`INSERT INTO leasehold.maintenance_locks (task) VALUES ('x')`)),
      ).toBe(refused);
    }
  });

  it("makes a second worker skip the round while one runs it, and while a previous release's worker holds the advisory lock", async () => {
    // A round in progress: its transaction holds the task's row.
    const inside = await withMaintenanceLock(as.worker.db, 'reaper', async () => reaperRound());
    expect(inside).toEqual({ ran: true, result: { ran: false } });
    // A worker of the previous release takes only the transaction advisory lock.
    const old = await as.worker.pool.connect();
    try {
      await old.query(`BEGIN`);
      expect((await old.query(`SELECT pg_try_advisory_xact_lock(19528, hashtext('reaper')) AS locked`)).rows).toEqual([
        { locked: true },
      ]);
      expect(await reaperRound()).toEqual({ ran: false });
    } finally {
      await old.query('ROLLBACK');
      old.release();
    }
    expect(await reaperRound()).toEqual({ ran: true, result: 'reaped' });
  });
});

describe('the dashboard', () => {
  let queue: string;
  let fixture: Awaited<ReturnType<typeof mixedFixture>>;
  beforeAll(async () => {
    queue = uniqueQueue('dash');
    fixture = await mixedFixture(as.admin.db, queue);
  });

  it('reads the overview, every list state, a job, the failure groups, the audit log, the users and the views', async () => {
    expect((await backlog(as.dashboard.db)).find((q) => q.queue === queue)).toMatchObject({
      ...MIXED_FIXTURE_COUNTS,
      doneLastHour: 1,
    });
    expect((await overview(as.dashboard.db)).queues.find((q) => q.queue === queue)).toBeDefined();
    const listed = await Promise.all(
      LIST_STATES.map(async (state) => [
        state,
        (await listJobs(as.dashboard.db, jobListSchema.parse({ queue, state }))).jobs.map((j) => j.id),
      ]),
    );
    const now = Date.now();
    expect(Object.fromEntries(listed)).toEqual(
      Object.fromEntries(
        LIST_STATES.map((state) => [
          state,
          Object.values(fixture)
            .filter((j) => subStateOf(j, now) === state)
            .map((j) => j.id),
        ]),
      ),
    );
    expect(await jobDetail(as.dashboard.db, fixture.dead!.id)).toMatchObject({
      job: { id: fixture.dead!.id, state: 'dead' },
    });
    expect((await failureGroups(as.dashboard.db)).length).toBeGreaterThan(0);
    expect((await listAudit(as.dashboard.db, { limit: 10 })).entries.length).toBeGreaterThan(0);
    expect((await deadByClass(as.dashboard.db)).find((d) => d.queue === queue)).toMatchObject({ count: 1 });
    expect((await previewForAction(as.dashboard.db, 'retry', { queue }, 10)).jobs.map((j) => j.id).sort()).toEqual(
      [fixture.dead!.id, fixture.cancelled!.id].sort(),
    );
    // Users are the migrator's to add (`leasehold users add` runs as a migrator login).
    await upsertUser(as.migrator.db, {
      email: `admin-${queue}@example.com`,
      password: 'a long enough password',
      role: 'admin',
    });
    expect(await findUserByEmail(as.dashboard.db, `admin-${queue}@example.com`)).toMatchObject({ role: 'admin' });
    expect(await one(as.dashboard, 'SELECT ready, dead FROM leasehold.queue_stats WHERE queue = $1', [queue])).toEqual({
      ready: '1',
      dead: '1',
    });
    expect(
      await one(as.dashboard, 'SELECT sub_state FROM leasehold.jobs_view WHERE id = $1', [fixture.expired!.id]),
    ).toEqual({
      sub_state: 'lease_expired',
    });
  });

  it('retries, cancels a ready and a running job, pauses and resumes, each with its audit row', async () => {
    const actor = 'ops@example.com';
    const outcomes = [
      await retryIfTerminal(as.dashboard.db, { id: fixture.dead!.id, actor }),
      await cancelIfUnchanged(as.dashboard.db, { id: fixture.ready!.id, actor }),
      await cancelIfUnchanged(as.dashboard.db, {
        id: fixture.running!.id,
        leaseToken: fixture.running!.leaseToken,
        actor,
      }),
      await pauseQueue(as.dashboard.db, { queue, actor }),
      await resumeQueue(as.dashboard.db, { queue, actor }),
    ];
    expect(outcomes.map((o) => o.applied)).toEqual([true, true, true, true, true]);
    const states = await Promise.all(
      [fixture.dead!, fixture.ready!, fixture.running!].map((j) => getJob(as.admin.db, j.id)),
    );
    expect(states.map((j) => j.state)).toEqual(['ready', 'cancelled', 'cancelled']);
    const audit = await as.admin.pool.query(
      'SELECT action, outcome FROM leasehold.audit_log WHERE id = ANY($1::bigint[]) ORDER BY id',
      [outcomes.map((o) => o.auditId)],
    );
    expect(audit.rows).toEqual(
      ['retry', 'cancel', 'cancel', 'pause', 'resume'].map((action) => ({ action, outcome: 'applied' })),
    );
    // The retried job is claimable again: its ready row came from the trigger, not the dashboard.
    expect((await claim(as.worker.db, { queues: [queue], workerId: 'w-dash', limit: 10 })).map((j) => j.id)).toContain(
      fixture.dead!.id,
    );
  });

  it('cannot fake a job state, a ready, attempt or rollup row, a lower session version or an audit row (42501)', async () => {
    const own = uniqueQueue('dash-fake');
    const { id: ready } = await enqueue(as.producer.db, { queue: own, kind: 'k' });
    const { id: other } = await enqueue(as.producer.db, { queue: own, kind: 'k' });
    const [running] = await claim(as.worker.db, { queues: [own], workerId: 'w-fake', limit: 1 });
    expect(running).toBeDefined();
    const readyId = running!.id === ready ? other : ready;
    await raiseSessionVersion(as.dashboard.db, `signed-out-${own}@example.com`);
    await raiseSessionVersion(as.dashboard.db, `signed-out-${own}@example.com`);
    const statements: Record<string, string> = {
      'a fake claim': `UPDATE leasehold.jobs SET state = 'running', lease_token = gen_random_uuid(), lease_until = now() + interval '5 s' WHERE id = '${readyId}'`,
      'a token swap': `UPDATE leasehold.jobs SET lease_token = gen_random_uuid() WHERE id = '${running!.id}'`,
      'a fake finish': `UPDATE leasehold.jobs SET state = 'done', lease_token = NULL, lease_until = NULL WHERE id = '${running!.id}'`,
      'a ready-row delete': `DELETE FROM leasehold.ready_jobs WHERE id = '${readyId}'`,
      'an attempt row': `INSERT INTO leasehold.job_attempts (job_id, attempt, queue, kind, worker_id, lease_token, started_at, ended_at, outcome, duration_ms)
                         VALUES ('${readyId}', 1, '${own}', 'k', 'w', gen_random_uuid(), now(), now(), 'completed', 0)`,
      'a rollup row': `INSERT INTO leasehold.finished_rollup (minute, queue, kind, state, attempts, shard, jobs)
                       VALUES (date_trunc('minute', now()), '${own}', 'k', 'done', 1, 0, 1000)`,
      'a rollup count': `UPDATE leasehold.finished_rollup SET jobs = jobs + 1000`,
      'a lease count': `UPDATE leasehold.leases SET running = 0`,
      'a lower session version': `UPDATE leasehold.session_versions SET version = 0 WHERE actor = 'signed-out-${own}@example.com'`,
      'a session version row': `INSERT INTO leasehold.session_versions (actor, version) VALUES ('x-${own}', 0)`,
      'an audit row with no action': `INSERT INTO leasehold.audit_log (actor, action, requested, affected, outcome) VALUES ('ops', 'retry', 1, 1, 'applied')`,
      'a queue pause of its own': `UPDATE leasehold.queues SET paused = true`,
      'a user': `INSERT INTO leasehold.users (email, password_hash, role) VALUES ('x-${own}@example.com', 'x', 'admin')`,
      'a user change': `UPDATE leasehold.users SET role = 'admin'`,
      'a redaction rule of its own': `DELETE FROM leasehold.kind_redactions`,
      'a limit of its own': `UPDATE leasehold.limits SET set_max = 1000000`,
      'a limit row': `INSERT INTO leasehold.limits (key, scope, name, set_max) VALUES ('kind:x-${own}', 'kind', 'x-${own}', 1)`,
      'a rate log row': `DELETE FROM leasehold.limit_starts`,
    };
    const states = await Promise.all(
      Object.values(statements).map((text) => sqlStateOf(as.dashboard.pool.query(text))),
    );
    expect(Object.fromEntries(Object.keys(statements).map((name, i) => [name, states[i]]))).toEqual(
      Object.fromEntries(Object.keys(statements).map((name) => [name, refused])),
    );
    // Nothing changed: the ready job waits with its row, the running one still holds its lease.
    expect(await getJob(as.admin.db, readyId)).toMatchObject({ state: 'ready', leaseToken: null });
    expect(await getJob(as.admin.db, running!.id)).toMatchObject({ state: 'running', leaseToken: running!.leaseToken });
    expect(
      await one(as.admin, 'SELECT version FROM leasehold.session_versions WHERE actor = $1', [
        `signed-out-${own}@example.com`,
      ]),
    ).toEqual({ version: 2 });
    // A sign-in's audit row goes through record_sign_in, the throttle's counts are its own.
    expect(
      await recordSignIn(as.dashboard.db, {
        actor: `x-${own}@example.com`,
        outcome: 'failed',
        via: 'credentials',
        client: '192.0.2.9',
      }),
    ).toBe(true);
    expect((await recordSignInFailure(as.dashboard.db, `x-${own}@example.com`, '192.0.2.9')).pairFailures).toBe(1);
    // Its one way to a session version: up.
    expect(await raiseSessionVersion(as.dashboard.db, `signed-out-${own}@example.com`)).toBe(3);
    // And its functions keep their guards: a cancel with a token it did not see is refused, audited.
    const swapped = await cancelIfUnchanged(as.dashboard.db, {
      id: running!.id,
      leaseToken: '00000000-0000-4000-8000-000000000000',
      actor: 'ops@example.com',
    });
    expect(swapped).toMatchObject({ applied: false, reason: 'changed_since_viewed', state: 'running' });
    expect(
      await one(as.admin, 'SELECT action, outcome FROM leasehold.audit_log WHERE id = $1', [swapped.auditId]),
    ).toEqual({
      action: 'cancel',
      outcome: 'refused',
    });
  });

  it("adds and removes an admin's redaction rule, each with its audit row", async () => {
    const kind = uniqueQueue('dash-kind');
    await registerKinds(as.worker.db, [
      { kind, version: 1, defaultQueue: 'default', displayName: kind, redactedPaths: ['email'], rerunSafe: false },
    ]);
    const actor = 'admin@example.com';
    const added = await addRedactedPath(as.dashboard.db, { kind, path: 'phone', actor });
    const removed = await removeAddedRedactedPath(as.dashboard.db, { kind, path: 'phone', actor });
    expect([added.applied, removed.applied]).toEqual([true, true]);
    expect(
      (
        await as.admin.pool.query('SELECT count(*)::int AS n FROM leasehold.audit_log WHERE id = ANY($1::bigint[])', [
          [added.auditId, removed.auditId],
        ])
      ).rows[0],
    ).toEqual({ n: 2 });
  });

  it('is refused claims, enqueues and the writes it does not make (42501)', async () => {
    const own = uniqueQueue('dash-refused');
    await enqueue(as.producer.db, { queue: own, kind: 'k' });
    expect(await sqlStateOf(claim(as.dashboard.db, { queues: [own], workerId: 'd' }))).toBe(refused);
    expect(await sqlStateOf(enqueue(as.dashboard.db, { queue: own, kind: 'k' }))).toBe(refused);
    const statements = [
      `UPDATE leasehold.jobs SET attempts = attempts WHERE queue = '${own}'`,
      `DELETE FROM leasehold.jobs WHERE queue = '${own}'`,
      `INSERT INTO leasehold.leases (token, queue, worker_id, lease_until, running, job_ids) VALUES (gen_random_uuid(), 'x', 'd', now(), 0, '{}')`,
      'SELECT 1 FROM leasehold.receipts',
      'DELETE FROM leasehold.audit_log',
      'UPDATE leasehold.queues SET aging_seconds = 1',
      // What workers declared secret is theirs: an admin adds rules of its own (kind_redactions).
      `UPDATE leasehold.kinds SET redacted_paths = '{}'`,
    ];
    const states = await Promise.all(statements.map((s) => sqlStateOf(as.dashboard.pool.query(s))));
    expect(Object.fromEntries(statements.map((s, i) => [s, states[i]]))).toEqual(
      Object.fromEntries(statements.map((s) => [s, refused])),
    );
    expect(await one(as.admin, 'SELECT count(*)::int AS n FROM leasehold.ready_jobs WHERE queue = $1', [own])).toEqual({
      n: 1,
    });
  });
});

describe('role settings', () => {
  it("gives each login its group's timeouts; the producer's are the application's", async () => {
    const show = (handle: DbHandle) =>
      one(
        handle,
        `SELECT current_setting('statement_timeout') AS statement, current_setting('lock_timeout') AS lock,
                current_setting('idle_in_transaction_session_timeout') AS idle`,
      );
    expect(await show(as.worker)).toEqual({ statement: '30s', lock: '10s', idle: '1min' });
    expect(await show(as.dashboard)).toEqual({ statement: '5s', lock: '5s', idle: '1min' });
    expect(await show(as.producer)).toEqual(await show(as.admin));
  });
});

describe('the roles script', () => {
  let other: RoleDatabase;
  beforeAll(async () => {
    other = await roleDatabase(); // a clone of the template, which the superuser migrated
  });
  afterAll(async () => {
    await other?.close();
  });

  it('takes over a database another role migrated, and a second run changes nothing', async () => {
    const before = await grantsOf(other.adminUrl);
    expect(before.filter((g) => g.owner !== null && g.owner !== 'leasehold_migrator')).toEqual([]);
    const admin = createDb(other.adminUrl, { max: 1 });
    const worker = createDb(other.urls.worker, { max: 1 });
    try {
      // A grant this file does not make is taken back by the next run.
      await admin.pool.query('GRANT DELETE ON leasehold.users TO leasehold_worker');
      await applyRoles(other.adminUrl);
      expect(await grantsOf(other.adminUrl)).toEqual(before);
      const queue = uniqueQueue('takeover');
      await enqueue(admin.db, { queue, kind: 'k' });
      expect(await claim(worker.db, { queues: [queue], workerId: 'w' })).toHaveLength(1);
    } finally {
      await Promise.all([admin.close(), worker.close()]);
    }
  });

  it('decides for every table and view of schema leasehold', async () => {
    const { rows } = await as.admin.pool.query<{ name: string }>(
      `SELECT relname AS name FROM pg_class WHERE relnamespace = 'leasehold'::regnamespace AND relkind IN ('r', 'p', 'v') ORDER BY 1`,
    );
    const text = rolesSql();
    const named = (name: string) => new RegExp(`leasehold\\.${name}\\b`).test(text);
    expect(rows.map((row) => row.name).filter((name) => !named(name))).toEqual([]);
  });
});
