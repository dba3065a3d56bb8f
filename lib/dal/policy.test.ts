/**
 * The role checks, below e2e: every exported DAL function, called as nobody, a viewer, an
 * operator and an admin, is allowed or refused as its POLICY row says. Allowed calls do real
 * work on this file's PostgreSQL database (the users, jobs and audit rows are real; only
 * next-auth's session read is stubbed); refused ones must throw AuthError before writing.
 */
import { randomBytes } from 'node:crypto';
import { getServerSession } from 'next-auth';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { addJob, claimOne, uniqueQueue } from '../../test/factories.ts';
import { useTestDatabase } from '../../test/db.ts';
import { supportCases } from '../../test/support-cases.ts';
import { createSchedule, declareLimits, enqueueMany, failIfLeaseHeld, registerKinds } from '../../db/queue/index.ts';
import { setQueueAlert } from '../../db/queue/alerts.ts';
import { registerWorker } from '../../db/queue/worker-registry.ts';
import { writeProgress } from '../../db/queue/results.ts';
import { ROLES, type Role } from '../../db/schema.ts';
import { upsertUser } from '../../db/users.ts';
import { closeDatabase } from '../db.ts';
import { AuthError } from '../errors.ts';
import { MASK } from '../redaction.ts';
import * as dal from './index.ts';
import { POLICY, type DalFunction } from './policy.ts';

vi.mock('next-auth', () => ({ getServerSession: vi.fn<() => Promise<unknown>>() }));

const t = useTestDatabase();
const METRICS_TOKEN = `metrics-${randomBytes(12).toString('hex')}`;
const email = (role: Role) => `${role}@policy.example.com`;

type Session = Role | null;
const SESSIONS: Session[] = [null, ...ROLES];

function signIn(session: Session) {
  vi.mocked(getServerSession).mockResolvedValue(
    session ? { user: { email: email(session) }, expires: new Date(Date.now() + 3_600_000).toISOString() } : null,
  );
}

beforeAll(async () => {
  // lib/env.ts reads these once, at the first DAL call; no import makes one.
  process.env.DATABASE_URL = t.url;
  process.env.NEXTAUTH_SECRET = randomBytes(24).toString('hex');
  process.env.LEASEHOLD_DEMO = 'false';
  process.env.NEXTAUTH_URL = 'http://127.0.0.1:3000';
  process.env.LEASEHOLD_METRICS_TOKEN = METRICS_TOKEN;
  for (const role of ROLES) await upsertUser(t.db, { email: email(role), password: 'policy-test-password', role });
  // The factories' kind, registered with no paths of its own: only the well-known keys are masked.
  await registerKinds(t.db, [registration('test.noop')]);
});
afterAll(async () => {
  await closeDatabase();
});

function registration(kind: string, redactedPaths: string[] = []) {
  return { kind, version: 1, defaultQueue: 'default', displayName: kind, redactedPaths, rerunSafe: false };
}

/** A dead job on a queue of its own (so the claim takes this one), with a redacted field. */
async function deadJob() {
  const own = uniqueQueue('policy-dead');
  const job = await addJob(t.db, { queue: own, payload: { orderId: 'o1', apiKey: 'k-secret' } });
  const lease = await claimOne(t.db, own);
  await failIfLeaseHeld(t.db, lease, { error: 'provider refused order 7: 422', failureClass: 'permanent' });
  return job;
}

/** A yearly schedule (it ticks in no test) of the factories' kind, with a redacted field. */
async function schedule() {
  const name = uniqueQueue('policy-schedule');
  const made = await createSchedule(
    t.db,
    name,
    { kind: 'test.noop', cron: '0 0 1 1 *', payload: { orderId: 'o1', apiKey: 'k-secret' } },
    { actor: 'seed@policy.example.com' },
  );
  expect(made.verdict).toBe('applied');
  return name;
}

async function stateOf(id: string) {
  const { rows } = await t.pool.query<{ state: string }>('SELECT state FROM leasehold.jobs WHERE id = $1', [id]);
  return rows[0]?.state;
}

/** Everything a DAL function could write: jobs, queues, kinds, redaction rules, limits, schedules, backlog alerts and the audit log, as one fingerprint. */
async function snapshot() {
  const { rows } = await t.pool.query(`
    SELECT (SELECT count(*) FROM leasehold.audit_log) AS audit,
           (SELECT md5(coalesce(string_agg(id || state || updated_at, ',' ORDER BY id), '')) FROM leasehold.jobs) AS jobs,
           (SELECT md5(coalesce(string_agg(name || paused, ',' ORDER BY name), '')) FROM leasehold.queues) AS queues,
           (SELECT md5(coalesce(string_agg(kind || version || redacted_paths::text, ',' ORDER BY kind, version), '')) FROM leasehold.kinds) AS kinds,
           (SELECT md5(coalesce(string_agg(kind || ':' || path, ',' ORDER BY kind, path), '')) FROM leasehold.kind_redactions) AS rules,
           (SELECT md5(coalesce(string_agg(row(key, set_max, set_rate, set_per_ms, set_by)::text, ',' ORDER BY key), '')) FROM leasehold.limits) AS limits,
           (SELECT md5(coalesce(string_agg(row(name, cron, timezone, paused, paused_reason, overridden, updated_at)::text, ',' ORDER BY name), '')) FROM leasehold.schedules) AS schedules,
           (SELECT md5(coalesce(string_agg(row(queue, alert, threshold, set_by)::text, ',' ORDER BY queue, alert), '')) FROM leasehold.queue_alerts) AS alerts`);
  return rows[0];
}

/**
 * Per function: seed what one call needs, and return the call (and, for an allowed call, what
 * its work must have been). Keyed by the policy's names, so a new row without a case, or a case
 * for a function that is gone, does not compile.
 */
type Call = (authorization: string | null) => Promise<unknown>;
type Prepared = { call: Call; allowed?: (result: unknown, session: Session) => Promise<void> | void };
const CASES: Record<DalFunction, () => Promise<Prepared>> = {
  getViewer: async () => ({
    call: () => dal.getViewer(),
    allowed: (result, session) => expect(result).toEqual(session ? { email: email(session), role: session } : null),
  }),
  getOverview: async () => ({
    call: () => dal.getOverview(),
    allowed: (result) => expect(result).toMatchObject({ queues: expect.any(Array), attempts: expect.any(Array) }),
  }),
  getHistory: async () => ({
    call: () => dal.getHistory({ range: '24h' }),
    allowed: (result) => expect(result).toMatchObject({ range: '24h', bucketSeconds: 900, points: expect.any(Array) }),
  }),
  getMetrics: async () => ({
    call: (authorization) => dal.getMetrics(authorization),
    allowed: (result) => expect(result).toMatchObject({ queues: expect.any(Array), dead: expect.any(Array) }),
  }),
  getJobs: async () => {
    const job = await addJob(t.db, { queue: uniqueQueue('policy-list') });
    return {
      call: () => dal.getJobs({ queue: job.queue }),
      allowed: (result) => expect((result as { jobs: { id: string }[] }).jobs.map((j) => j.id)).toContain(job.id),
    };
  },
  getJobDetail: async () => {
    const job = await deadJob();
    return {
      call: () => dal.getJobDetail(job.id),
      allowed: (result) =>
        expect(result).toMatchObject({
          job: { id: job.id, state: 'dead' },
          payload: { orderId: 'o1', apiKey: MASK },
          redactedPaths: ['apiKey'],
        }),
    };
  },
  getJobProgress: async () => {
    // A running job whose handler reported progress quoting a masked payload value.
    const own = uniqueQueue('policy-progress');
    const job = await addJob(t.db, { queue: own, payload: { orderId: 'o1', apiKey: 'k-secret' } });
    const lease = await claimOne(t.db, own);
    await writeProgress(t.db, lease, 0.5, 'halfway, as k-secret');
    return {
      call: () => dal.getJobProgress(job.id),
      allowed: (result) =>
        expect(result).toMatchObject({
          state: 'running',
          attempts: 1,
          progress: { attempt: 1, fraction: 0.5, percent: 50, message: `halfway, as ${MASK}` },
        }),
    };
  },
  getNewJobCount: async () => {
    const first = await addJob(t.db, { queue: uniqueQueue('policy-new') });
    await addJob(t.db, { queue: first.queue });
    return {
      call: () => dal.getNewJobCount({ queue: first.queue, newerThan: first.id }),
      allowed: (result) => expect(result).toEqual({ count: 1, more: false }),
    };
  },
  getFailureGroups: async () => {
    await deadJob();
    return {
      call: () => dal.getFailureGroups(),
      allowed: (result) => expect((result as { groups: unknown[] }).groups.length).toBeGreaterThan(0),
    };
  },
  getAudit: async () => ({
    call: () => dal.getAudit({}),
    allowed: (result) => expect(result).toMatchObject({ entries: expect.any(Array) }),
  }),
  getKinds: async () => ({
    call: () => dal.getKinds(),
    allowed: (result) =>
      expect((result as { kinds: { kind: string }[] }).kinds.map((k) => k.kind)).toContain('test.noop'),
  }),
  getLimits: async () => {
    const name = uniqueQueue('policy-limit');
    await declareLimits(t.db, [{ scope: 'kind', name, max: 2 }]);
    return {
      call: () => dal.getLimits(),
      allowed: (result) =>
        expect((result as { limits: { key: string }[] }).limits.map((l) => l.key)).toContain(`kind:${name}`),
    };
  },
  revealPayload: async () => {
    const job = await deadJob();
    return {
      call: () => dal.revealPayload(job.id),
      allowed: (result) => expect(result).toEqual({ payload: { orderId: 'o1', apiKey: 'k-secret' } }),
    };
  },
  retryJob: async () => {
    const job = await deadJob();
    return {
      call: () => dal.retryJob({ id: job.id }),
      allowed: async (result) => {
        expect(result).toMatchObject({ ok: true });
        expect(await stateOf(job.id)).toBe('ready');
      },
    };
  },
  cancelJob: async () => {
    const job = await addJob(t.db, { queue: uniqueQueue('policy-cancel') });
    return {
      call: () => dal.cancelJob({ id: job.id }),
      allowed: async (result) => {
        expect(result).toMatchObject({ ok: true });
        expect(await stateOf(job.id)).toBe('cancelled');
      },
    };
  },
  previewBulk: async () => {
    const job = await deadJob();
    return {
      call: () => dal.previewBulk({ action: 'retry', filter: { queue: job.queue } }),
      allowed: (result) => expect((result as { jobs: { id: string }[] }).jobs.map((j) => j.id)).toContain(job.id),
    };
  },
  previewFailureGroup: async () => {
    const job = await deadJob();
    return {
      call: () =>
        dal.previewFailureGroup({ failureClass: 'permanent', fingerprint: 'provider refused order <n>: <n>' }),
      allowed: (result) => expect((result as { jobs: { id: string }[] }).jobs.map((j) => j.id)).toContain(job.id),
    };
  },
  applyBulk: async () => {
    const job = await deadJob();
    return {
      call: () => dal.applyBulk({ action: 'retry', jobs: [{ id: job.id }], confirm: true }),
      allowed: async (result) => {
        expect(result).toEqual({ ok: true, message: 'Retried 1 of 1 job.' });
        expect(await stateOf(job.id)).toBe('ready');
      },
    };
  },
  setQueuePaused: async () => {
    const paused = uniqueQueue('policy-pause');
    return {
      call: () => dal.setQueuePaused({ queue: paused }, true),
      allowed: async (result) => {
        expect(result).toMatchObject({ ok: true });
        const { rows } = await t.pool.query('SELECT paused FROM leasehold.queues WHERE name = $1', [paused]);
        expect(rows[0]?.paused).toBe(true);
      },
    };
  },
  addKindRedaction: async () => {
    const kind = uniqueQueue('policy-kind');
    await registerKinds(t.db, [registration(kind, ['email'])]);
    return {
      call: () => dal.addKindRedaction({ kind, path: 'phone' }),
      allowed: async (result) => {
        expect(result).toMatchObject({ ok: true });
        const { rows } = await t.pool.query('SELECT path FROM leasehold.kind_redactions WHERE kind = $1', [kind]);
        expect(rows).toEqual([{ path: 'phone' }]);
      },
    };
  },
  removeKindRedaction: async () => {
    const kind = uniqueQueue('policy-unkind');
    await registerKinds(t.db, [registration(kind, ['email'])]);
    await t.pool.query(`INSERT INTO leasehold.kind_redactions (kind, path, added_by) VALUES ($1, 'phone', 'seed')`, [
      kind,
    ]);
    return {
      call: () => dal.removeKindRedaction({ kind, path: 'phone' }),
      allowed: async (result) => {
        expect(result).toMatchObject({ ok: true });
        const { rows } = await t.pool.query('SELECT path FROM leasehold.kind_redactions WHERE kind = $1', [kind]);
        expect(rows).toEqual([]);
      },
    };
  },
  addKindSearchPath: async () => {
    const kind = uniqueQueue('policy-search');
    await registerKinds(t.db, [registration(kind)]);
    return {
      call: () => dal.addKindSearchPath({ kind, path: 'orderId' }),
      allowed: async (result) => {
        expect(result).toMatchObject({ ok: true });
        const { rows } = await t.pool.query('SELECT path FROM leasehold.kind_search_paths WHERE kind = $1', [kind]);
        expect(rows).toEqual([{ path: 'orderId' }]);
      },
    };
  },
  removeKindSearchPath: async () => {
    const kind = uniqueQueue('policy-unsearch');
    await registerKinds(t.db, [registration(kind)]);
    await t.pool.query(
      `INSERT INTO leasehold.kind_search_paths (kind, path, added_by) VALUES ($1, 'orderId', 'seed')`,
      [kind],
    );
    return {
      call: () => dal.removeKindSearchPath({ kind, path: 'orderId' }),
      allowed: async (result) => {
        expect(result).toMatchObject({ ok: true });
        const { rows } = await t.pool.query('SELECT path FROM leasehold.kind_search_paths WHERE kind = $1', [kind]);
        expect(rows).toEqual([]);
      },
    };
  },
  exportJobs: async () => {
    const queue = uniqueQueue('policy-export');
    await enqueueMany(t.db, [{ queue, kind: 'k', payload: { n: 1 } }]);
    return {
      call: () => dal.exportJobs({ filter: { queue } }),
      allowed: async (result) => {
        expect(result).toMatchObject({ rows: 1, csv: expect.stringMatching(/^id,state,queue,/) });
        const { rows } = await t.pool.query(
          `SELECT count(*)::int AS n FROM leasehold.audit_log WHERE action = 'export_jobs' AND detail->'filter'->>'queue' = $1`,
          [queue],
        );
        expect(rows).toEqual([{ n: 1 }]);
      },
    };
  },
  getQueueGroups: async () => {
    const queue = uniqueQueue('policy-groups');
    await enqueueMany(t.db, [{ queue, kind: 'k', group: 'acme' }]);
    return {
      call: () => dal.getQueueGroups({ queue }),
      allowed: (result) =>
        expect((result as { groups: { group: string; waiting: number }[] }).groups).toEqual([
          expect.objectContaining({ group: 'acme', waiting: 1 }),
        ]),
    };
  },
  setGroupMax: async () => {
    const queue = uniqueQueue('policy-group-max');
    return {
      call: () => dal.setGroupMax({ queue, group: 'acme', max: '2' }),
      allowed: async (result, session) => {
        expect(result).toMatchObject({ ok: true });
        const { rows } = await t.pool.query(
          'SELECT group_key, max, set_by FROM leasehold.group_limits WHERE queue = $1 ORDER BY group_key',
          [queue],
        );
        expect(rows).toEqual([
          { group_key: '', max: null, set_by: email(session!) },
          { group_key: 'acme', max: 2, set_by: email(session!) },
        ]);
      },
    };
  },
  setGroupPaused: async () => {
    const queue = uniqueQueue('policy-group-pause');
    return {
      call: () => dal.setGroupPaused({ queue, group: 'acme', reason: 'hold' }, true),
      allowed: async (result) => {
        expect(result).toMatchObject({ ok: true });
        const { rows } = await t.pool.query(
          'SELECT paused FROM leasehold.group_limits WHERE queue = $1 AND group_key = $2',
          [queue, 'acme'],
        );
        expect(rows).toEqual([{ paused: true }]);
      },
    };
  },
  getSchedules: async () => {
    const name = await schedule();
    return {
      call: () => dal.getSchedules(),
      allowed: (result) =>
        expect((result as { schedules: { name: string }[] }).schedules.map((s) => s.name)).toContain(name),
    };
  },
  getScheduleDetail: async () => {
    const name = await schedule();
    return {
      call: () => dal.getScheduleDetail({ name }),
      allowed: (result, session) =>
        expect(result).toMatchObject({
          schedule: { name, cron: '0 0 1 1 *' },
          payload: { orderId: 'o1', apiKey: MASK },
          redactedPaths: ['apiKey'],
          can: { pause: session === 'admin', change: session === 'admin' },
        }),
    };
  },
  setSchedulePaused: async () => {
    const name = await schedule();
    return {
      call: () => dal.setSchedulePaused({ name, reason: 'hold' }, true),
      allowed: async (result) => {
        expect(result).toMatchObject({ ok: true });
        const { rows } = await t.pool.query('SELECT paused, paused_reason FROM leasehold.schedules WHERE name = $1', [
          name,
        ]);
        expect(rows).toEqual([{ paused: true, paused_reason: 'hold' }]);
      },
    };
  },
  setScheduleCron: async () => {
    const name = await schedule();
    return {
      call: () => dal.setScheduleCron({ name, cron: '0 0 2 1 *', timezone: 'Europe/Berlin' }),
      allowed: async (result) => {
        expect(result).toMatchObject({ ok: true });
        const { rows } = await t.pool.query('SELECT cron, timezone FROM leasehold.schedules WHERE name = $1', [name]);
        expect(rows).toEqual([{ cron: '0 0 2 1 *', timezone: 'Europe/Berlin' }]);
      },
    };
  },
  getHealth: async () => {
    // A session of its own holding a transaction (an xid): named as a holder, its client address
    // and query only for an admin.
    const holder = await t.pool.connect();
    await holder.query(`SET application_name = 'policy-holder'`);
    await holder.query('BEGIN');
    await holder.query('SELECT pg_current_xact_id()');
    const { rows } = await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const pid = rows[0]!.pid;
    return {
      call: async () => {
        try {
          return await dal.getHealth();
        } finally {
          await holder.query('COMMIT');
          holder.release();
        }
      },
      allowed: (result, session) => {
        const health = result as {
          checks: { check: string }[];
          holders: Record<string, unknown>[];
          sessionDetail: boolean;
        };
        expect(health.checks.map((c) => c.check)).toEqual(
          expect.arrayContaining(['autovacuum', 'horizon', 'dead_tuples', 'notify_queue', 'connections']),
        );
        const held = health.holders.find((h) => h.holder === 'session' && h.pid === pid);
        expect(held).toMatchObject({ application: 'policy-holder', transactionStart: expect.any(String) });
        expect(health.sessionDetail).toBe(session === 'admin');
        if (session === 'admin') expect(held!.query).toBe('SELECT pg_backend_pid() AS pid');
        else expect(held).toMatchObject({ clientAddress: null, query: null });
      },
    };
  },
  getWorkers: async () => {
    const id = uniqueQueue('policy-worker');
    const queue = uniqueQueue('policy-unrun');
    await registerWorker(t.db, {
      id,
      host: 'policy-host',
      pid: 4711,
      queues: [queue],
      concurrency: 3,
      version: '9.9.9-policy',
      codeVersion: 20,
      schemaFrom: 19,
      kinds: [{ kind: 'test.noop', version: 1 }],
    });
    await enqueueMany(t.db, [{ queue, kind: 'policy.unrun' }]);
    return {
      call: () => dal.getWorkers(),
      allowed: (result) => {
        const workers = result as { workers: { id: string }[]; waitingForKind: { queue: string; jobs: number }[] };
        expect(workers.workers.find((w) => w.id === id)).toMatchObject({
          version: '9.9.9-policy',
          codeVersion: 20,
          schemaFrom: 19,
          kinds: [{ kind: 'test.noop', version: 1 }],
          queues: [queue],
          concurrency: 3,
          lastSeenAt: expect.any(String),
        });
        expect(workers.waitingForKind).toContainEqual({ queue, jobs: 1 });
      },
    };
  },
  getQueueAlerts: async () => {
    const queue = uniqueQueue('policy-alerts');
    await addJob(t.db, { queue });
    await setQueueAlert(t.db, { queue, alert: 'dead', threshold: 5, actor: 'seed@policy.example.com' });
    return {
      call: () => dal.getQueueAlerts(),
      allowed: (result, session) => {
        const alerts = result as { alerts: unknown[]; can: { set: boolean } };
        expect(alerts.alerts).toContainEqual(
          expect.objectContaining({
            queue,
            alert: 'dead',
            threshold: 5,
            source: 'run time',
            value: 0,
            firing: false,
            setBy: 'seed@policy.example.com',
          }),
        );
        expect(alerts.can.set).toBe(session === 'admin');
      },
    };
  },
  setQueueAlertValue: async () => {
    const queue = uniqueQueue('policy-set-alert');
    await addJob(t.db, { queue });
    return {
      call: () => dal.setQueueAlertValue({ queue, alert: 'oldest_ready_age_seconds', threshold: '5m', reason: 'slo' }),
      allowed: async (result, session) => {
        expect(result).toMatchObject({ ok: true });
        const { rows } = await t.pool.query('SELECT threshold, set_by FROM leasehold.queue_alerts WHERE queue = $1', [
          queue,
        ]);
        expect(rows).toEqual([{ threshold: 300, set_by: email(session!) }]);
      },
    };
  },
  setLimitValues: async () => {
    const name = uniqueQueue('policy-set-limit');
    await declareLimits(t.db, [{ scope: 'kind', name, max: 2 }]);
    return {
      call: () => dal.setLimitValues({ scope: 'kind', name, max: '5', rate: '10/1s' }),
      allowed: async (result, session) => {
        expect(result).toMatchObject({ ok: true });
        const { rows } = await t.pool.query(
          'SELECT set_max, set_rate, set_per_ms, set_by FROM leasehold.limits WHERE key = $1',
          [`kind:${name}`],
        );
        expect(rows).toEqual([{ set_max: 5, set_rate: 10, set_per_ms: 1000, set_by: email(session!) }]);
      },
    };
  },
  // The support actions: run now, reschedule, priority, re-run, purge of dead jobs (test/support-cases.ts).
  ...supportCases(() => t.db, dal),
};

// The expected answer is worked out here, from the row and the ranking, not with permits():
// a bug there must not make its own test pass.
const RANK: Record<Role, number> = { viewer: 1, operator: 2, admin: 3 };
const WHO: Record<Role, string> = { viewer: 'a viewer', operator: 'an operator', admin: 'an admin' };
const label = (session: Session) => (session ? WHO[session] : 'nobody signed in');

async function expectAllowed(fn: DalFunction, session: Session, authorization: string | null = null) {
  signIn(session);
  const { call, allowed } = await CASES[fn]();
  const result = await call(authorization);
  await allowed?.(result, session);
}

async function expectRefused(fn: DalFunction, session: Session, status: number, authorization: string | null = null) {
  signIn(session);
  const { call } = await CASES[fn]();
  const before = await snapshot();
  const error = await call(authorization).then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AuthError);
  expect((error as AuthError).status).toBe(status);
  expect(await snapshot()).toEqual(before);
}

describe('the policy table', () => {
  it('has a row for every function lib/dal exports, and none for anything else', () => {
    const exported = Object.keys(dal).sort();
    expect(Object.entries(dal).filter(([, value]) => typeof value !== 'function')).toEqual([]);
    expect(exported).toEqual(Object.keys(POLICY).sort());
  });
});

interface Case {
  name: string;
  run: () => Promise<void>;
}

/** What the table says of `fn` for one session: the tests it makes, with no branch left to the test body. */
function casesFor(fn: DalFunction, session: Session): Case[] {
  const rule = POLICY[fn];
  if (rule === 'anyone') return [{ name: `answers ${label(session)}`, run: () => expectAllowed(fn, session) }];
  if (rule === 'metrics-token') {
    return [
      {
        name: `refuses ${label(session)} without the metrics token, or with a wrong one`,
        run: async () => {
          await expectRefused(fn, session, 401);
          await expectRefused(fn, session, 401, `Bearer ${METRICS_TOKEN}x`);
          // The right token without the Bearer scheme, or under another scheme, is refused too.
          await expectRefused(fn, session, 401, METRICS_TOKEN);
          await expectRefused(fn, session, 401, `Basic ${METRICS_TOKEN}`);
        },
      },
      {
        name: `serves ${label(session)} with the metrics token`,
        run: () => expectAllowed(fn, session, `Bearer ${METRICS_TOKEN}`),
      },
    ];
  }
  if (session === null) {
    return [{ name: 'refuses nobody signed in (401) and writes nothing', run: () => expectRefused(fn, session, 401) }];
  }
  if (RANK[session] >= RANK[rule]) return [{ name: `allows ${label(session)}`, run: () => expectAllowed(fn, session) }];
  return [{ name: `refuses ${label(session)} (403) and writes nothing`, run: () => expectRefused(fn, session, 403) }];
}

for (const fn of Object.keys(POLICY) as DalFunction[]) {
  describe(`${fn} (${POLICY[fn]})`, () => {
    it.each(SESSIONS.flatMap((session) => casesFor(fn, session)))('$name', async ({ run }) => {
      await expect(run()).resolves.toBeUndefined();
    });
  });
}

describe('the session lookup', () => {
  it('refuses a user disabled since signing in at once, not when the session expires', async () => {
    await t.pool.query('UPDATE leasehold.users SET disabled = true WHERE email = $1', [email('admin')]);
    try {
      await expectRefused('getOverview', 'admin', 401);
    } finally {
      await t.pool.query('UPDATE leasehold.users SET disabled = false WHERE email = $1', [email('admin')]);
    }
  });

  it('looks the user up afresh on every call outside a request (React cache passes through)', async () => {
    signIn('admin');
    expect(await dal.getViewer()).toMatchObject({ role: 'admin' });
    signIn('viewer');
    expect(await dal.getViewer()).toMatchObject({ role: 'viewer' });
  });
});
