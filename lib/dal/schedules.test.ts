/**
 * The schedule pages' data: every schedule with its next and last ticks and its last job's
 * state; one schedule's settings, its payload masked as its kind's jobs' payloads are (hidden
 * whole for a kind version no worker registered), and its recent ticks; an admin's pause,
 * resume and change of the cron expression or time zone, audited under their email; bad input
 * and a schedule that is gone refused in a sentence, nothing written. The role gating of the
 * functions is policy.test.ts's. Real PostgreSQL; only next-auth's session read is stubbed.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  createSchedule,
  declareSchedules,
  defineJob,
  defineSchedule,
  registerKinds,
  runDueSchedules,
} from '../../db/queue/index.ts';
import { run } from '../../db/queue/executor.ts';
import { useTestDatabase } from '../../test/db.ts';
import { dalSession } from '../../test/dal-session.ts';
import { uniqueQueue } from '../../test/factories.ts';
import { InputError, toUserMessage } from '../errors.ts';
import { MASK } from '../redaction.ts';
import { getAudit, getScheduleDetail, getSchedules, setScheduleCron, setSchedulePaused } from './index.ts';

vi.mock('next-auth', () => ({ getServerSession: vi.fn<() => Promise<unknown>>() }));

const t = useTestDatabase();
const session = dalSession(t, 'schedules.example.com');
const { email, signIn } = session;

beforeAll(() => session.start());
afterAll(() => session.close());

const EMAIL = 'alice@example.com';
const PAYLOAD = { scope: 'all', customer: { email: EMAIL }, apiKey: 'k-secret-1234' };

/** A kind version as its workers register it: `customer.email` declared secret. */
async function registeredKind(): Promise<string> {
  const kind = uniqueQueue('dal.report');
  await registerKinds(t.db, [
    {
      kind,
      version: 1,
      defaultQueue: 'default',
      displayName: kind,
      redactedPaths: ['customer.email'],
      rerunSafe: false,
    },
  ]);
  return kind;
}

/** A schedule made at run time on a queue of its own (yearly: it ticks in no test), with PAYLOAD. */
async function runtimeSchedule(cron = '0 0 1 1 *'): Promise<{ name: string; kind: string; queue: string }> {
  const kind = await registeredKind();
  const name = uniqueQueue('dal-schedule');
  const queue = uniqueQueue('dal-scheduled');
  const made = await createSchedule(t.db, name, { kind, queue, cron, payload: PAYLOAD }, { actor: 'seed@example.com' });
  expect(made.verdict).toBe('applied');
  return { name, kind, queue };
}

/** A schedule declared in code, as a worker declares it at start. */
async function declaredSchedule(kind: string): Promise<string> {
  const job = defineJob({ kind, version: 1, schema: z.object({ scope: z.string() }).passthrough() });
  const name = uniqueQueue('dal-declared');
  await declareSchedules(t.db, [
    defineSchedule({ name, job, cron: '30 2 * * *', timezone: 'Europe/Berlin', payload: { scope: 'eu' } }),
  ]);
  return name;
}

/** What a change could write: the schedule's row and the audit log. */
async function written(name: string) {
  const { rows } = await t.pool.query(
    `SELECT (SELECT row(cron, timezone, paused, paused_reason, overridden)::text FROM leasehold.schedules WHERE name = $1) AS schedule,
            (SELECT count(*) FROM leasehold.audit_log) AS audit`,
    [name],
  );
  return rows[0];
}

async function detail(name: string) {
  signIn('viewer');
  const found = await getScheduleDetail({ name });
  if (!found) throw new Error(`no schedule ${name}`);
  return found;
}

describe('the schedules in the dashboard', () => {
  it('lists each schedule with its kind, queue, expression, next tick and state', async () => {
    const { name, kind, queue } = await runtimeSchedule();
    const declared = await declaredSchedule(kind);
    signIn('viewer');
    const { schedules } = await getSchedules();
    const year = new Date().getUTCFullYear() + 1;
    expect(schedules.find((s) => s.name === name)).toEqual({
      name,
      kind,
      kindVersion: 1,
      queue,
      cron: '0 0 1 1 *',
      timezone: 'UTC',
      nextTickAt: `${year}-01-01T00:00:00.000Z`,
      lastTickAt: null,
      lastJobId: null,
      lastJobState: null,
      paused: false,
      pausedReason: null,
      source: 'runtime',
      overridden: true,
    });
    expect(schedules.find((s) => s.name === declared)).toMatchObject({
      cron: '30 2 * * *',
      timezone: 'Europe/Berlin',
      source: 'code',
      overridden: false,
      nextTickAt: expect.any(String),
    });
    // By name, as listSchedules orders them.
    const names = schedules.map((s) => s.name);
    expect(names).toEqual([...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
  });

  it("shows one schedule's settings and its payload masked for every role, as a job of its kind is", async () => {
    const { name } = await runtimeSchedule();
    for (const role of ['viewer', 'operator', 'admin'] as const) {
      signIn(role);
      const seen = await getScheduleDetail({ name });
      expect(seen?.payload, role).toEqual({ scope: 'all', customer: { email: MASK }, apiKey: MASK });
      expect(seen?.redactedPaths.sort(), role).toEqual(['apiKey', 'customer.email']);
      expect(seen?.payloadHidden, role).toBeNull();
      expect(JSON.stringify(seen), role).not.toContain(EMAIL);
      expect(JSON.stringify(seen), role).not.toContain('k-secret-1234');
      expect(seen?.can, role).toEqual({ pause: role === 'admin', change: role === 'admin' });
    }
    expect((await detail(name)).schedule).toMatchObject({
      name,
      missed: 'once',
      missedEach: null,
      missedAfterMs: 60_000,
      overlap: 'allow',
      jitterMs: 0,
      priority: 0,
      declaredAt: null,
    });
  });

  it('hides the payload whole when no worker registered its kind version', async () => {
    const name = await declaredSchedule(uniqueQueue('dal.unregistered'));
    const seen = await detail(name);
    expect(seen.payload).toBe(MASK);
    expect(seen.payloadHidden).toMatch(/^The payload is hidden: no worker has registered dal\.unregistered-/);
    expect(seen.schedule.declaredAt).toEqual(expect.any(String));
  });

  it("lists a schedule's recent ticks with their jobs and states, newest first", async () => {
    const { name, queue } = await runtimeSchedule('* * * * *');
    // Its ticks counted from ten minutes ago: the newest missed one runs late, the others are passed over.
    await run(
      t.db,
      sql`UPDATE leasehold.schedules SET ticks_after = date_trunc('minute', statement_timestamp()) - interval '10 minutes'
          WHERE name = ${name}`,
    );
    await runDueSchedules(t.db);
    const seen = await detail(name);
    const { rows: jobs } = await t.pool.query<{ id: string }>(
      'SELECT id FROM leasehold.jobs WHERE queue = $1 ORDER BY run_at DESC',
      [queue],
    );
    expect(jobs.length).toBeGreaterThanOrEqual(1);
    const ticked = seen.ticks.filter((x) => x.jobId !== null);
    expect(ticked.map((x) => x.jobId)).toEqual(jobs.map((j) => j.id));
    expect(ticked.every((x) => x.jobState === 'ready' && ['enqueued', 'late'].includes(x.outcome))).toBe(true);
    expect(seen.ticks.find((x) => x.outcome === 'missed')).toMatchObject({ jobId: null, jobState: null });
    expect(seen.ticks.find((x) => x.outcome === 'missed')!.missedCount).toBeGreaterThanOrEqual(8);
    const ticks = seen.ticks.map((x) => x.tickAt);
    expect(ticks).toEqual([...ticks].sort().reverse());
    expect(seen.schedule).toMatchObject({ lastJobId: jobs[0]!.id, lastJobState: 'ready' });
    signIn('viewer');
    expect((await getSchedules()).schedules.find((s) => s.name === name)).toMatchObject({
      lastJobId: jobs[0]!.id,
      lastJobState: 'ready',
      lastTickAt: seen.ticks.find((x) => x.jobId === jobs[0]!.id)!.tickAt,
    });
  });

  it('answers null for a name without a schedule, and refuses one that is no name', async () => {
    signIn('viewer');
    expect(await getScheduleDetail({ name: 'no-such-schedule' })).toBeNull();
    const error = await getScheduleDetail({ name: '../etc' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect(toUserMessage(error)?.message).toMatch(/^That schedule name is not valid \(name: expected 1-128/);
  });
});

describe("an admin's changes", () => {
  it('pauses and resumes a schedule, audited under their email with the reason, the reason scrubbed', async () => {
    const { name } = await runtimeSchedule();
    signIn('admin');
    expect(await setSchedulePaused({ name, reason: `  ${EMAIL} asked to stop  ` }, true)).toEqual({
      ok: true,
      message: `Paused schedule ${name}: no tick of it is enqueued until it is resumed; jobs already enqueued still run (recorded in the audit log).`,
    });
    const paused = await detail(name);
    expect(paused.schedule).toMatchObject({ paused: true, pausedReason: '•••••• asked to stop', nextTickAt: null });
    signIn('viewer');
    expect((await getSchedules()).schedules.find((s) => s.name === name)?.pausedReason).toBe('•••••• asked to stop');

    signIn('admin');
    expect((await setSchedulePaused({ name }, true)).message).toBe(
      `Schedule ${name} was already paused (recorded in the audit log).`,
    );
    expect(await setSchedulePaused({ name }, false)).toEqual({
      ok: true,
      message: `Resumed schedule ${name}: its ticks are enqueued again from the next one; the ticks of the pause are not run (recorded in the audit log).`,
    });
    expect((await detail(name)).schedule).toMatchObject({ paused: false, pausedReason: null });

    const { rows } = await t.pool.query(
      `SELECT action, actor, detail->>'reason' AS reason FROM leasehold.audit_log WHERE detail->>'schedule' = $1 ORDER BY id`,
      [name],
    );
    expect(rows).toEqual([
      { action: 'create_schedule', actor: 'seed@example.com', reason: null },
      { action: 'pause_schedule', actor: email('admin'), reason: `${EMAIL} asked to stop` },
      { action: 'pause_schedule', actor: email('admin'), reason: null },
      { action: 'resume_schedule', actor: email('admin'), reason: null },
    ]);
  });

  it("changes the cron expression and time zone: the next tick follows, the code's declaration no longer applies", async () => {
    const kind = await registeredKind();
    const name = await declaredSchedule(kind);
    signIn('admin');
    expect(await setScheduleCron({ name, cron: ' 0 0 1 1 * ', timezone: 'UTC', reason: 'new year only' })).toEqual({
      ok: true,
      message: `Saved schedule ${name}: "0 0 1 1 *" in UTC (was "30 2 * * *" in Europe/Berlin); its ticks follow it from the next one. The code's declaration no longer applies to it until an admin resets it (leasehold schedules reset). Recorded in the audit log.`,
    });
    const seen = await detail(name);
    expect(seen.schedule).toMatchObject({
      cron: '0 0 1 1 *',
      timezone: 'UTC',
      overridden: true,
      source: 'code',
      nextTickAt: `${new Date().getUTCFullYear() + 1}-01-01T00:00:00.000Z`,
    });
    // Only the zone: the expression stays.
    signIn('admin');
    expect((await setScheduleCron({ name, timezone: 'America/New_York' })).message).toMatch(
      /: "0 0 1 1 \*" in America\/New_York \(was "0 0 1 1 \*" in UTC\);/,
    );
    signIn('viewer');
    const audit = await getAudit({ action: 'change_schedule', actor: email('admin') });
    expect(audit.entries.slice(0, 2)).toMatchObject([
      { action: 'change_schedule', reason: null },
      { action: 'change_schedule', reason: 'new year only' },
    ]);
  });

  it('refuses a bad expression or zone, and nothing to change, in a sentence, writing nothing', async () => {
    const { name } = await runtimeSchedule();
    const before = await written(name);
    const refusal = async (input: unknown) => {
      signIn('admin');
      const error = await setScheduleCron(input).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InputError);
      return toUserMessage(error)!;
    };
    const badCron = await refusal({ name, cron: 'every day' });
    expect(badCron.status).toBe(400);
    expect(badCron.message).toMatch(
      new RegExp(
        `^Schedule ${name} was not changed: cron: "every day" is not a cron expression of 5 or 6 fields: .+\\.$`,
      ),
    );
    expect((await refusal({ name, timezone: 'Mars/Olympus' })).message).toBe(
      `Schedule ${name} was not changed: timezone: "Mars/Olympus" is not an IANA time zone (Europe/Berlin, America/New_York, UTC…).`,
    );
    expect((await refusal({ name })).message).toBe(
      `Schedule ${name} was not changed: nothing to change: give a cron expression, a time zone or both.`,
    );
    expect((await refusal({ name, cron: '* * * * *', extra: 1 })).message).toMatch(
      /^That schedule change is not valid/,
    );
    expect(await written(name)).toEqual(before);
  });

  it('says a schedule that is gone is gone, writing nothing', async () => {
    const before = await written('gone-schedule');
    signIn('admin');
    const gone = `Schedule gone-schedule was not changed: no schedule has that name any more (an admin may have deleted it since you looked).`;
    expect(await setSchedulePaused({ name: 'gone-schedule' }, true)).toEqual({ ok: false, message: gone });
    expect(await setSchedulePaused({ name: 'gone-schedule' }, false)).toEqual({ ok: false, message: gone });
    expect(await setScheduleCron({ name: 'gone-schedule', cron: '* * * * *' })).toEqual({ ok: false, message: gone });
    expect(await written('gone-schedule')).toEqual(before);
  });
});
