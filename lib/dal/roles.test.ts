/**
 * The data-access layer on a leasehold_dashboard login (db/roles.sql): every function lib/dal
 * exports, called by an admin, does its real work with only the dashboard role's rights. The
 * cases are keyed by the policy's names, so a new DAL function without one does not compile:
 * whatever it reads or writes must be granted to the dashboard first.
 */
import { randomBytes } from 'node:crypto';
import { getServerSession } from 'next-auth';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createDb, type DbHandle } from '../../db/client.ts';
import {
  claim,
  createSchedule,
  declareLimits,
  enqueueMany,
  failIfLeaseHeld,
  registerKinds,
} from '../../db/queue/index.ts';
import { writeProgress } from '../../db/queue/results.ts';
import { registerWorker } from '../../db/queue/worker-registry.ts';
import { upsertUser } from '../../db/users.ts';
import { addJob, claimOne, getJob, mixedFixture, uniqueQueue } from '../../test/factories.ts';
import { recordQueueHistory } from '../../db/queue/queue-history.ts';
import { useRoleDatabase } from '../../test/roles.ts';
import { supportCases, type SupportFunction } from '../../test/support-cases.ts';
import { closeDatabase } from '../db.ts';
import * as dal from './index.ts';
import type { DalFunction } from './policy.ts';

vi.mock('next-auth', () => ({ getServerSession: vi.fn<() => Promise<unknown>>() }));

const r = useRoleDatabase();
const METRICS_TOKEN = `metrics-${randomBytes(12).toString('hex')}`;
const ADMIN = 'admin@roles.example.com';
let admin: DbHandle;

beforeAll(async () => {
  // lib/env.ts reads these once, at the first DAL call: the web process's database is the
  // dashboard's login; fixtures are written as the superuser.
  process.env.DATABASE_URL = r.urls.dashboard;
  process.env.NEXTAUTH_SECRET = randomBytes(24).toString('hex');
  process.env.LEASEHOLD_DEMO = 'false';
  process.env.NEXTAUTH_URL = 'http://127.0.0.1:3000';
  process.env.LEASEHOLD_METRICS_TOKEN = METRICS_TOKEN;
  admin = createDb(r.adminUrl, { max: 2 });
  await upsertUser(admin.db, { email: ADMIN, password: 'roles-test-password', role: 'admin' });
  vi.mocked(getServerSession).mockResolvedValue({
    user: { email: ADMIN },
    expires: new Date(Date.now() + 3_600_000).toISOString(),
  });
});
afterAll(async () => {
  await closeDatabase();
  await admin?.close();
});

/** A dead job on a queue of its own. */
async function deadJob() {
  const queue = uniqueQueue('roles-dead');
  const job = await addJob(admin.db, { queue, payload: { orderId: 'o1' } });
  const lease = await claimOne(admin.db, queue);
  await failIfLeaseHeld(admin.db, lease, { error: 'provider refused order 7: 422', failureClass: 'permanent' });
  return job;
}

/** A yearly schedule of a kind of its own on a queue of its own, made as the superuser. */
async function schedule() {
  const kind = uniqueQueue('roles-scheduled');
  await registerKinds(admin.db, [
    { kind, version: 1, defaultQueue: 'default', displayName: kind, redactedPaths: ['email'], rerunSafe: false },
  ]);
  const name = uniqueQueue('roles-schedule');
  const made = await createSchedule(
    admin.db,
    name,
    { kind, cron: '0 0 1 1 *', payload: { email: 'a@example.com' } },
    { actor: ADMIN },
  );
  expect(made.verdict).toBe('applied');
  return name;
}

const CASES: Record<DalFunction, () => Promise<void>> = {
  getViewer: async () => {
    expect(await dal.getViewer()).toEqual({ email: ADMIN, role: 'admin' });
  },
  getOverview: async () => {
    expect(await dal.getOverview()).toMatchObject({ queues: expect.any(Array), attempts: expect.any(Array) });
  },
  getHistory: async () => {
    // A round as the worker's maintenance would run it, then the dashboard's role reads it.
    const queue = uniqueQueue('roles-history');
    await mixedFixture(admin.db, queue);
    await recordQueueHistory(admin.db);
    const history = await dal.getHistory({ range: '7d', queue });
    expect(history.points).toHaveLength(168);
    expect(history.points.reduce((n, p) => n + p.done, 0)).toBe(1);
  },
  getMetrics: async () => {
    // A queue with a group: its series read ready_groups, group_limits, grouped_ready_jobs and leases.
    const queue = uniqueQueue('roles-metrics');
    await enqueueMany(admin.db, [{ queue, kind: 'k', group: 'acme' }]);
    const metrics = await dal.getMetrics(`Bearer ${METRICS_TOKEN}`);
    expect(metrics).toMatchObject({ queues: expect.any(Array) });
    expect(metrics.groups).toContainEqual(expect.objectContaining({ queue, group: 'acme', waiting: 1, running: 0 }));
  },
  getJobs: async () => {
    const job = await addJob(admin.db, { queue: uniqueQueue('roles-list') });
    expect((await dal.getJobs({ queue: job.queue, state: 'ready' })).jobs.map((j) => j.id)).toEqual([job.id]);
  },
  getJobDetail: async () => {
    const job = await deadJob();
    expect(await dal.getJobDetail(job.id)).toMatchObject({ job: { id: job.id, state: 'dead' } });
  },
  getJobProgress: async () => {
    // Read through job_progress, which the dashboard's role must be granted.
    const queue = uniqueQueue('roles-progress');
    const job = await addJob(admin.db, { queue });
    const lease = await claimOne(admin.db, queue);
    await writeProgress(admin.db, lease, 0.25, 'a quarter');
    expect(await dal.getJobProgress(job.id)).toMatchObject({
      state: 'running',
      progress: { percent: 25, message: 'a quarter' },
    });
  },
  getNewJobCount: async () => {
    const first = await addJob(admin.db, { queue: uniqueQueue('roles-new') });
    await addJob(admin.db, { queue: first.queue });
    expect(await dal.getNewJobCount({ queue: first.queue, newerThan: first.id })).toEqual({ count: 1, more: false });
  },
  getFailureGroups: async () => {
    await deadJob();
    expect((await dal.getFailureGroups()).groups.length).toBeGreaterThan(0);
  },
  getAudit: async () => {
    expect(await dal.getAudit({})).toMatchObject({ entries: expect.any(Array) });
  },
  revealPayload: async () => {
    const job = await deadJob();
    expect(await dal.revealPayload(job.id)).toEqual({ payload: { orderId: 'o1' } });
  },
  retryJob: async () => {
    const job = await deadJob();
    expect(await dal.retryJob({ id: job.id })).toMatchObject({ ok: true });
    expect((await getJob(admin.db, job.id)).state).toBe('ready');
  },
  cancelJob: async () => {
    const job = await addJob(admin.db, { queue: uniqueQueue('roles-cancel') });
    expect(await dal.cancelJob({ id: job.id })).toMatchObject({ ok: true });
    expect((await getJob(admin.db, job.id)).state).toBe('cancelled');
  },
  previewBulk: async () => {
    const job = await deadJob();
    expect((await dal.previewBulk({ action: 'retry', filter: { queue: job.queue } })).jobs.map((j) => j.id)).toEqual([
      job.id,
    ]);
  },
  previewFailureGroup: async () => {
    const job = await deadJob();
    expect(
      (
        await dal.previewFailureGroup({ failureClass: 'permanent', fingerprint: 'provider refused order <n>: <n>' })
      ).jobs.map((j) => j.id),
    ).toContain(job.id);
  },
  applyBulk: async () => {
    const job = await deadJob();
    expect(await dal.applyBulk({ action: 'retry', jobs: [{ id: job.id }], confirm: true })).toEqual({
      ok: true,
      message: 'Retried 1 of 1 job.',
    });
    expect((await getJob(admin.db, job.id)).state).toBe('ready');
  },
  getKinds: async () => {
    const kind = uniqueQueue('roles-kind');
    await registerKinds(admin.db, [
      { kind, version: 1, defaultQueue: 'default', displayName: kind, redactedPaths: ['email'], rerunSafe: false },
    ]);
    expect((await dal.getKinds()).kinds.map((k) => k.kind)).toContain(kind);
  },
  getLimits: async () => {
    // A limit with an attempt running under it and jobs waiting: the counts read limit_claims,
    // limit_starts and ready_jobs.
    const kind = uniqueQueue('roles-limit');
    const queue = uniqueQueue('roles-limited');
    await declareLimits(admin.db, [
      { scope: 'kind', name: kind, max: 1, rate: { max: 10, perMs: 1000 }, kinds: [kind] },
    ]);
    await enqueueMany(admin.db, [
      { queue, kind },
      { queue, kind },
    ]);
    await claim(admin.db, { queues: [queue], workerId: 'roles-w', limit: 2, limits: [`kind:${kind}`] });
    expect((await dal.getLimits()).limits.find((l) => l.name === kind)).toMatchObject({
      enforced: { max: 1, rate: '10/1s' },
      running: 1,
      started: 1,
      waiting: 1,
    });
  },
  setLimitValues: async () => {
    const kind = uniqueQueue('roles-set-limit');
    await declareLimits(admin.db, [{ scope: 'kind', name: kind, max: 1 }]);
    expect(await dal.setLimitValues({ scope: 'kind', name: kind, max: 4, rate: '2/1s' })).toMatchObject({ ok: true });
    expect((await dal.getLimits()).limits.find((l) => l.name === kind)).toMatchObject({
      enforced: { max: 4, rate: '2/1s' },
      setBy: ADMIN,
    });
  },
  getQueueGroups: async () => {
    // A group at its maximum with a job waiting: the page reads group_limits, group_claims,
    // grouped_ready_jobs, leases and jobs.
    const queue = uniqueQueue('roles-groups');
    await enqueueMany(admin.db, [
      { queue, kind: 'k', group: 'acme' },
      { queue, kind: 'k', group: 'acme' },
    ]);
    expect(await dal.setGroupMax({ queue, max: 1 })).toMatchObject({ ok: true });
    await claim(admin.db, { queues: [queue], workerId: 'roles-w', limit: 2, grouped: true });
    expect((await dal.getQueueGroups({ queue })).groups).toEqual([
      expect.objectContaining({ group: 'acme', waiting: 1, running: 1, max: 1 }),
    ]);
  },
  setGroupMax: async () => {
    const queue = uniqueQueue('roles-group-max');
    expect(await dal.setGroupMax({ queue, group: 'acme', max: '3' })).toMatchObject({ ok: true });
    expect(await dal.getQueueGroups({ queue })).toMatchObject({ groups: [{ group: 'acme', ownMax: 3 }] });
  },
  setGroupPaused: async () => {
    const queue = uniqueQueue('roles-group-pause');
    expect(await dal.setGroupPaused({ queue, group: 'acme' }, true)).toMatchObject({ ok: true });
    expect(await dal.setGroupPaused({ queue, group: 'acme' }, false)).toMatchObject({ ok: true });
  },
  addKindRedaction: async () => {
    const kind = uniqueQueue('roles-redact');
    await registerKinds(admin.db, [
      { kind, version: 1, defaultQueue: 'default', displayName: kind, redactedPaths: ['email'], rerunSafe: false },
    ]);
    expect(await dal.addKindRedaction({ kind, path: 'phone' })).toMatchObject({ ok: true });
  },
  removeKindRedaction: async () => {
    const kind = uniqueQueue('roles-unredact');
    await registerKinds(admin.db, [
      { kind, version: 1, defaultQueue: 'default', displayName: kind, redactedPaths: ['email'], rerunSafe: false },
    ]);
    expect(await dal.addKindRedaction({ kind, path: 'phone' })).toMatchObject({ ok: true });
    expect(await dal.removeKindRedaction({ kind, path: 'phone' })).toMatchObject({ ok: true });
  },
  addKindSearchPath: async () => {
    const kind = uniqueQueue('roles-search');
    await registerKinds(admin.db, [
      { kind, version: 1, defaultQueue: 'default', displayName: kind, redactedPaths: [], rerunSafe: false },
    ]);
    expect(await dal.addKindSearchPath({ kind, path: 'orderId' })).toMatchObject({ ok: true });
  },
  removeKindSearchPath: async () => {
    const kind = uniqueQueue('roles-unsearch');
    await registerKinds(admin.db, [
      { kind, version: 1, defaultQueue: 'default', displayName: kind, redactedPaths: [], rerunSafe: false },
    ]);
    expect(await dal.addKindSearchPath({ kind, path: 'orderId' })).toMatchObject({ ok: true });
    expect(await dal.removeKindSearchPath({ kind, path: 'orderId' })).toMatchObject({ ok: true });
  },
  exportJobs: async () => {
    const queue = uniqueQueue('roles-export');
    await enqueueMany(admin.db, [{ queue, kind: 'k', payload: { n: 1 } }]);
    expect(await dal.exportJobs({ filter: { queue } })).toMatchObject({ rows: 1 });
  },
  getSchedules: async () => {
    const name = await schedule();
    expect((await dal.getSchedules()).schedules.map((s) => s.name)).toContain(name);
  },
  getScheduleDetail: async () => {
    // Its ticks and their jobs: schedule_ticks and jobs; its redaction: kinds.
    const name = await schedule();
    expect(await dal.getScheduleDetail({ name })).toMatchObject({
      schedule: { name },
      payload: { email: '••••••' },
      ticks: [],
    });
  },
  setSchedulePaused: async () => {
    const name = await schedule();
    expect(await dal.setSchedulePaused({ name }, true)).toMatchObject({ ok: true });
    expect(await dal.setSchedulePaused({ name }, false)).toMatchObject({ ok: true });
  },
  setScheduleCron: async () => {
    // set_schedule, and the kinds registry the change checks the kind against.
    const name = await schedule();
    expect(await dal.setScheduleCron({ name, cron: '0 0 2 1 *' })).toMatchObject({ ok: true });
    expect((await dal.getScheduleDetail({ name }))?.schedule).toMatchObject({ cron: '0 0 2 1 *', overridden: true });
  },
  getHealth: async () => {
    // Every check read, none refused: the role reads other sessions' transactions (pg_read_all_stats).
    const health = await dal.getHealth();
    expect(health.checks.map((c) => c.check)).toEqual(
      expect.arrayContaining(['autovacuum', 'horizon', 'dead_tuples', 'notify_queue', 'connections']),
    );
    expect(health.tables.map((t) => t.table)).toContain('jobs');
    expect(health.activityReadable).toBe(true);
  },
  getWorkers: async () => {
    const id = uniqueQueue('roles-worker');
    await registerKinds(admin.db, [
      { kind: id, version: 2, defaultQueue: 'default', displayName: id, redactedPaths: [], rerunSafe: false },
    ]);
    await registerWorker(admin.db, {
      id,
      host: 'roles-host',
      pid: 1,
      queues: ['roles-q'],
      concurrency: 1,
      version: '9.9.9-roles',
      codeVersion: 20,
      schemaFrom: 20,
      kinds: [{ kind: id, version: 2 }],
    });
    expect((await dal.getWorkers()).workers.find((w) => w.id === id)).toMatchObject({
      version: '9.9.9-roles',
      kinds: [{ kind: id, version: 2 }],
    });
  },
  getQueueAlerts: async () => {
    expect(await dal.getQueueAlerts()).toMatchObject({ alerts: expect.any(Array), can: { set: true } });
  },
  setQueueAlertValue: async () => {
    // set_queue_alert, and queue_alerts read back.
    const queue = uniqueQueue('roles-alert');
    await addJob(admin.db, { queue });
    expect(await dal.setQueueAlertValue({ queue, alert: 'dead', threshold: '3' })).toMatchObject({ ok: true });
    expect((await dal.getQueueAlerts()).alerts).toContainEqual(
      expect.objectContaining({ queue, alert: 'dead', threshold: 3, source: 'run time', setBy: ADMIN }),
    );
  },
  setQueuePaused: async () => {
    const queue = uniqueQueue('roles-pause');
    expect(await dal.setQueuePaused({ queue, reason: 'maintenance' }, true)).toMatchObject({ ok: true });
    expect(await dal.setQueuePaused({ queue }, false)).toMatchObject({ ok: true });
  },
  // The support actions, each through its function of drizzle/0029 (test/support-cases.ts).
  ...(Object.fromEntries(
    Object.entries(supportCases(() => admin.db, dal)).map(([fn, prepare]) => [
      fn,
      async () => {
        const { call, allowed } = await prepare();
        await allowed(await call());
      },
    ]),
  ) as Record<SupportFunction, () => Promise<void>>),
};

describe('the data-access layer as leasehold_dashboard', () => {
  it("runs its statements on the dashboard's login", async () => {
    await dal.getOverview();
    const { rows } = await admin.pool.query(
      `SELECT DISTINCT usename AS login FROM pg_stat_activity
       WHERE datname = current_database() AND application_name = 'leasehold-dashboard'`,
    );
    expect(rows).toEqual([{ login: r.logins.dashboard }]);
  });

  it.each(Object.keys(CASES) as DalFunction[])('%s works with the dashboard role alone', async (fn) => {
    await expect(CASES[fn]()).resolves.toBeUndefined();
  });
});
