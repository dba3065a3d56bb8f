import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  cancelIfUnchanged,
  changeSchedule,
  createSchedule,
  declareSchedules,
  defineJob,
  defineSchedule,
  deleteSchedule,
  getSchedule,
  LeaseholdInputError,
  listSchedules,
  pauseSchedule,
  planTicks,
  recentTicks,
  resetSchedule,
  resumeSchedule,
  runDueSchedules,
  scheduledTick,
} from '.';
import { run } from './executor.ts';
import { registerKinds } from './kinds.ts';
import type { RuntimeScheduleInput } from './schedule-admin.ts';
import type { DueSchedule } from './schedules.ts';
import { useTestDatabase } from '../../test/db.ts';
import { uniqueQueue } from '../../test/factories.ts';

const t = useTestDatabase({ max: 20 });

const at = (iso: string) => new Date(iso);
const iso = (dates: Date[]) => dates.map((d) => d.toISOString());

function due(overrides: Partial<DueSchedule>): DueSchedule {
  return {
    name: 's',
    cron: '* * * * *',
    timezone: 'UTC',
    missed: 'once',
    missedEach: null,
    missedAfterMs: 60_000,
    horizonMs: 86_400_000,
    ticksAfter: at('2026-01-01T00:00:00Z'),
    ...overrides,
  };
}

describe('planTicks, the ticks a pass handles (croner, at the database time given)', () => {
  it('moves a daily 02:30 Berlin tick into the spring gap to 03:00 CEST, and runs it once in the autumn overlap', () => {
    const spring = planTicks(
      due({
        cron: '30 2 * * *',
        timezone: 'Europe/Berlin',
        ticksAfter: at('2026-03-28T00:00:00Z'),
        horizonMs: 7 * 86_400_000,
        missedAfterMs: 86_400_000,
      }),
      at('2026-03-30T12:00:00Z'),
    );
    // 02:30 CET on the 28th; 02:30 does not exist on the 29th (01:00 UTC is 03:00 CEST); 02:30 CEST on the 30th.
    expect(iso([...spring.late, ...spring.ticks])).toEqual(['2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z']);
    const autumn = planTicks(
      due({
        cron: '30 2 * * *',
        timezone: 'Europe/Berlin',
        ticksAfter: at('2026-10-24T12:00:00Z'),
        missedAfterMs: 86_400_000,
      }),
      at('2026-10-25T12:00:00Z'),
    );
    // 02:30 happens twice on the 25th (CEST, then CET): a fixed time runs at the first only.
    expect(iso(autumn.ticks)).toEqual(['2026-10-25T00:30:00.000Z']);
  });

  it('runs an every-30-minutes Berlin schedule at each absolute half hour across both changes', () => {
    const spring = planTicks(
      due({
        cron: '*/30 * * * *',
        timezone: 'Europe/Berlin',
        ticksAfter: at('2026-03-29T00:59:59Z'),
        missedAfterMs: 86_400_000,
      }),
      at('2026-03-29T03:00:00Z'),
    );
    expect(iso(spring.ticks)).toEqual([
      '2026-03-29T01:00:00.000Z',
      '2026-03-29T01:30:00.000Z',
      '2026-03-29T02:00:00.000Z',
      '2026-03-29T02:30:00.000Z',
      '2026-03-29T03:00:00.000Z',
    ]);
    const autumn = planTicks(
      due({
        cron: '*/30 * * * *',
        timezone: 'Europe/Berlin',
        ticksAfter: at('2026-10-24T23:59:59Z'),
        missedAfterMs: 86_400_000,
      }),
      at('2026-10-25T02:00:00Z'),
    );
    // 02:00 and 02:30 local happen twice (00:00, 00:30 CEST = UTC+2; 01:00, 01:30 CET = UTC+1): four ticks, none lost or doubled.
    expect(iso(autumn.ticks)).toEqual([
      '2026-10-25T00:00:00.000Z',
      '2026-10-25T00:30:00.000Z',
      '2026-10-25T01:00:00.000Z',
      '2026-10-25T01:30:00.000Z',
      '2026-10-25T02:00:00.000Z',
    ]);
    expect(autumn.next.toISOString()).toBe('2026-10-25T02:30:00.000Z');
  });

  it('applies the missed-tick policy to ticks later than missedAfterMs: skip, once, each N', () => {
    const now = at('2026-01-01T00:10:30Z');
    // Ticks at minutes 1..10; those at 10 (30 s ago) is on time, 1..9 missed.
    const skip = planTicks(due({ missed: 'skip' }), now);
    expect(iso(skip.ticks)).toEqual(['2026-01-01T00:10:00.000Z']);
    expect(skip.late).toEqual([]);
    expect(skip).toMatchObject({
      missedCount: 9,
      missedLast: at('2026-01-01T00:09:00Z'),
      through: at('2026-01-01T00:10:00Z'),
    });
    const once = planTicks(due({ missed: 'once' }), now);
    expect(iso(once.late)).toEqual(['2026-01-01T00:09:00.000Z']);
    expect(once).toMatchObject({ missedCount: 8, missedLast: at('2026-01-01T00:08:00Z') });
    const each = planTicks(due({ missed: 'each', missedEach: 3 }), now);
    expect(iso(each.late)).toEqual([
      '2026-01-01T00:07:00.000Z',
      '2026-01-01T00:08:00.000Z',
      '2026-01-01T00:09:00.000Z',
    ]);
    expect(each).toMatchObject({ missedCount: 6, missedLast: at('2026-01-01T00:06:00Z') });
    expect(each.next.toISOString()).toBe('2026-01-01T00:11:00.000Z');
  });

  it("plans nothing, and a next tick after it, when a change moved ticksAfter past the pass's time", () => {
    const plan = planTicks(due({ ticksAfter: at('2026-01-01T00:00:00.300Z') }), at('2026-01-01T00:00:00.100Z'));
    expect(plan.ticks).toEqual([]);
    expect(plan.through).toEqual(at('2026-01-01T00:00:00.300Z'));
    expect(plan.next.getTime()).toBeGreaterThan(plan.through.getTime());
  });

  it('looks back no further than the horizon: a month without workers costs a horizon of ticks, not 2.6 million', () => {
    const plan = planTicks(
      due({ cron: '* * * * * *', horizonMs: 1_000_000, missed: 'skip', ticksAfter: at('2026-01-01T00:00:00Z') }),
      at('2026-01-31T00:00:00Z'),
    );
    expect(plan.missedCount + plan.ticks.length).toBe(1000);
  });
});

const reportJob = defineJob({
  kind: 'report.build',
  version: 1,
  schema: z.strictObject({ scope: z.enum(['all', 'eu']) }),
});

describe('defineSchedule and run-time input: bad input is a clear error and writes nothing', () => {
  it('names a bad cron expression, an unknown time zone, a payload the schema refuses and a count of 0', () => {
    const bad = (extra: Record<string, unknown>) => {
      try {
        defineSchedule({ job: reportJob, cron: '0 3 * * *', payload: { scope: 'all' }, ...extra });
      } catch (error) {
        expect(error).toBeInstanceOf(LeaseholdInputError);
        return (error as LeaseholdInputError).problems.join('\n');
      }
      throw new Error('accepted');
    };
    expect(bad({ cron: '61 * * * *' })).toMatch(/^cron: "61 \* \* \* \*" is not a cron expression/);
    expect(bad({ timezone: 'Mars/Olympus' })).toMatch(/^timezone: "Mars\/Olympus" is not an IANA time zone/);
    expect(bad({ payload: { scope: 'mars' } })).toMatch(/^payload\.scope: /);
    expect(bad({ missed: { each: 0 } })).toMatch(/^missed/);
    expect(bad({ missedAfterMs: 5000, horizonMs: 2000 })).toMatch(/^horizonMs: must be at least missedAfterMs/);
    const fine = defineSchedule({
      job: reportJob,
      cron: '0 3 * * *',
      timezone: 'Europe/Berlin',
      payload: { scope: 'eu' },
    });
    expect(fine.name).toBe('report.build');
    expect(fine.settings).toMatchObject({ kind: 'report.build', cron: '0 3 * * *', missed: 'once', overlap: 'allow' });
  });

  it('refuses a run-time schedule of a kind no worker declared, or a bad expression, and writes nothing', async () => {
    const before = await listSchedules(t.db);
    await expect(
      createSchedule(t.db, 'nobody-runs', { kind: 'no.such.kind', cron: '* * * * *' }, { actor: 'admin@x' }),
    ).rejects.toThrow(/kind: no worker has declared kind no\.such\.kind version 1/);
    await registerKinds(t.db, [kindOf('known.kind')]);
    await expect(
      createSchedule(t.db, 'bad-cron', { kind: 'known.kind', cron: '* * *' }, { actor: 'admin@x' }),
    ).rejects.toThrow(/cron: "\* \* \*" is not a cron expression/);
    await expect(
      createSchedule(t.db, 'bad-each', { kind: 'known.kind', cron: '* * * * *', missed: { each: 0 } }, { actor: 'a' }),
    ).rejects.toThrow(/missed/);
    expect(await listSchedules(t.db)).toEqual(before);
  });

  it("refuses a run-time payload the kind's registered JSON Schema refuses, naming the place, and writes nothing", async () => {
    await registerKinds(t.db, [
      {
        ...kindOf('typed.kind'),
        payloadSchema: {
          type: 'object',
          properties: { scope: { enum: ['all', 'eu'] } },
          required: ['scope'],
          additionalProperties: false,
        },
      },
    ]);
    const input = (payload: unknown) => ({ kind: 'typed.kind', cron: '0 3 * * *', payload });
    await expect(createSchedule(t.db, 'typed-bad', input({ scope: 'mars' }), { actor: 'a' })).rejects.toThrow(
      /payload\.scope: must be equal to one of the allowed values/,
    );
    await expect(createSchedule(t.db, 'typed-bad', input({}), { actor: 'a' })).rejects.toThrow(
      /payload: must have required property 'scope'/,
    );
    expect(await getSchedule(t.db, 'typed-bad')).toBeNull();
    expect((await createSchedule(t.db, 'typed-good', input({ scope: 'eu' }), { actor: 'a' })).verdict).toBe('applied');
    await expect(changeSchedule(t.db, 'typed-good', { payload: { scope: 1 } }, { actor: 'a' })).rejects.toThrow(
      /payload\.scope/,
    );
    expect((await getSchedule(t.db, 'typed-good'))?.payload).toEqual({ scope: 'eu' });
  });
});

function kindOf(kind: string) {
  return { kind, version: 1, defaultQueue: 'default', displayName: kind, redactedPaths: [], rerunSafe: false };
}

/** A run-time schedule of its own queue, its ticks counted from `secondsAgo` before the database's now. */
async function scheduleFrom(
  name: string,
  input: Omit<RuntimeScheduleInput, 'kind'>,
  secondsAgo: number,
): Promise<{ queue: string }> {
  const queue = uniqueQueue();
  await registerKinds(t.db, [kindOf(`k-${name}`)]);
  const made = await createSchedule(t.db, name, { kind: `k-${name}`, queue, ...input }, { actor: 'admin@x' });
  expect(made.verdict).toBe('applied');
  await run(
    t.db,
    sql`UPDATE leasehold.schedules SET ticks_after = date_trunc('second', statement_timestamp()) - make_interval(secs => ${secondsAgo})
        WHERE name = ${name}`,
  );
  return { queue };
}

async function jobsOf(queue: string) {
  return run<{ idempotency_key: string; run_at: Date; state: string }>(
    t.db,
    sql`SELECT idempotency_key, run_at, state FROM leasehold.jobs WHERE queue = ${queue} ORDER BY run_at`,
  );
}

describe('the pass: every tick exactly once, whatever number of workers run it', () => {
  it('enqueues each tick of an every-second schedule once when eight passes run at the same time', async () => {
    const { queue } = await scheduleFrom('every-second', { cron: '* * * * * *', missedAfterMs: 60_000 }, 20);
    const passes = await Promise.all(Array.from({ length: 8 }, () => runDueSchedules(t.db)));
    const enqueued = passes.flatMap((p) => p.ticks).filter((x) => x.schedule === 'every-second');
    // One pass took the schedule; the others found it locked (SKIP LOCKED) or already moved.
    expect(enqueued.length).toBeGreaterThanOrEqual(20);
    const jobs = await jobsOf(queue);
    expect(jobs).toHaveLength(enqueued.length);
    const keys = jobs.map((j) => j.idempotency_key);
    expect(new Set(keys).size).toBe(keys.length);
    // Consecutive seconds, none skipped: each job's tick is one second after the one before.
    const ticks = jobs.map((j) => scheduledTick(j.idempotency_key)!.tickAt.getTime());
    for (let i = 1; i < ticks.length; i++) expect(ticks[i]! - ticks[i - 1]!).toBe(1000);
    // A second round finds nothing new until the next second; nothing is enqueued twice.
    await runDueSchedules(t.db);
    const again = await jobsOf(queue);
    expect(new Set(again.map((j) => j.idempotency_key)).size).toBe(again.length);
    expect(scheduledTick(jobs[0]!.idempotency_key)).toMatchObject({ schedule: 'every-second' });
  });

  it('passes over missed ticks as the policy says, and records the run of them', async () => {
    const { queue } = await scheduleFrom(
      'each-three',
      { cron: '* * * * *', missed: { each: 3 }, missedAfterMs: 60_000 },
      600,
    );
    const { ticks } = await runDueSchedules(t.db);
    const mine = ticks.filter((x) => x.schedule === 'each-three');
    const late = mine.filter((x) => x.outcome === 'late');
    const missed = mine.filter((x) => x.outcome === 'missed');
    expect(late).toHaveLength(3);
    expect(missed).toHaveLength(1);
    const onTime = mine.filter((x) => x.outcome === 'enqueued');
    const [row] = await run<{ missed_count: number }>(
      t.db,
      sql`SELECT missed_count FROM leasehold.schedule_ticks WHERE schedule = 'each-three' AND outcome = 'missed'`,
    );
    // 10 minutes of minute ticks: those within the last 60 s on time, 3 of the rest late, the others passed over.
    expect(onTime.length + late.length + row!.missed_count).toBeGreaterThanOrEqual(10);
    expect(onTime.length + late.length + row!.missed_count).toBeLessThanOrEqual(11);
    expect(await jobsOf(queue)).toHaveLength(onTime.length + 3);
    // The late ones are the newest missed ticks, after the ones passed over.
    expect(Math.min(...late.map((x) => x.tickAt.getTime()))).toBeGreaterThan(missed[0]!.tickAt.getTime());
  });

  it("passes a tick over while the previous tick's job has not ended (overlap skip), and not once it has", async () => {
    const { queue } = await scheduleFrom('no-overlap', { cron: '* * * * * *', overlap: 'skip' }, 5);
    const { ticks } = await runDueSchedules(t.db);
    const mine = ticks.filter((x) => x.schedule === 'no-overlap');
    expect(mine.map((x) => x.outcome)).toEqual(['enqueued', 'overlap', 'overlap', 'overlap', 'overlap']);
    expect(await jobsOf(queue)).toHaveLength(1);
    const [first] = await run<{ id: string }>(t.db, sql`SELECT id FROM leasehold.jobs WHERE queue = ${queue}`);
    expect((await cancelIfUnchanged(t.db, { id: first!.id, actor: 'admin@x' })).applied).toBe(true);
    await new Promise((r) => setTimeout(r, 1100));
    const after = (await runDueSchedules(t.db)).ticks.filter((x) => x.schedule === 'no-overlap');
    expect(after[0]?.outcome).toBe('enqueued');
  });
});

describe('overdue: how long a due tick has waited for a pass', () => {
  it('grows while no pass runs, and is 0 once a pass enqueued the tick', async () => {
    await scheduleFrom('watched', { cron: '* * * * * *' }, 2);
    await runDueSchedules(t.db);
    await run(
      t.db,
      sql`UPDATE leasehold.schedules SET next_tick_at = statement_timestamp() - interval '30 seconds' WHERE name = 'watched'`,
    );
    const waiting = await getSchedule(t.db, 'watched');
    expect(waiting!.overdueMs).toBeGreaterThanOrEqual(30_000);
    await runDueSchedules(t.db);
    const passed = await getSchedule(t.db, 'watched');
    expect(passed!.overdueMs).toBe(0);
    expect(passed!.lastTickAgeMs).not.toBeNull();
    expect(passed!.lastTickAgeMs!).toBeLessThan(5_000);
  });
});

describe('start deadlines (startWithinMs)', () => {
  it('discards ticks already past their deadline, and gives the others their deadline as expires_at', async () => {
    const { queue } = await scheduleFrom('deadline', { cron: '* * * * * *', startWithinMs: 2000 }, 6);
    const mine = (await runDueSchedules(t.db)).ticks.filter((x) => x.schedule === 'deadline');
    const discarded = mine.filter((x) => x.outcome === 'discarded');
    const enqueued = mine.filter((x) => x.outcome === 'enqueued');
    expect(discarded.length).toBeGreaterThanOrEqual(3);
    expect(enqueued.length).toBeGreaterThanOrEqual(1);
    expect(Math.max(...discarded.map((x) => x.tickAt.getTime()))).toBeLessThan(
      Math.min(...enqueued.map((x) => x.tickAt.getTime())),
    );
    const jobs = await run<{ idempotency_key: string; expires_at: Date }>(
      t.db,
      sql`SELECT idempotency_key, expires_at FROM leasehold.jobs WHERE queue = ${queue}`,
    );
    expect(jobs).toHaveLength(enqueued.length);
    for (const j of jobs) {
      expect(new Date(j.expires_at).getTime()).toBe(scheduledTick(j.idempotency_key)!.tickAt.getTime() + 2000);
    }
  });
});

describe('run-time changes', () => {
  it('takes a changed cron expression from its next tick, without a restart', async () => {
    const { queue } = await scheduleFrom('yearly', { cron: '0 0 1 1 *' }, 5);
    await runDueSchedules(t.db);
    expect(await jobsOf(queue)).toHaveLength(0);
    const changed = await changeSchedule(t.db, 'yearly', { cron: '* * * * * *' }, { actor: 'admin@x', reason: 'test' });
    expect(changed.verdict).toBe('applied');
    const [{ changed_at } = { changed_at: new Date() }] = await run<{ changed_at: Date }>(
      t.db,
      sql`SELECT ticks_after AS changed_at FROM leasehold.schedules WHERE name = 'yearly'`,
    );
    await new Promise((r) => setTimeout(r, 1100));
    await runDueSchedules(t.db);
    const jobs = await jobsOf(queue);
    expect(jobs.length).toBeGreaterThanOrEqual(1);
    expect(scheduledTick(jobs[0]!.idempotency_key)!.tickAt.getTime()).toBeGreaterThan(new Date(changed_at).getTime());
    const [audit] = await run<{ action: string; actor: string }>(
      t.db,
      sql`SELECT action, actor FROM leasehold.audit_log WHERE detail->>'schedule' = 'yearly' ORDER BY id DESC LIMIT 1`,
    );
    expect(audit).toEqual({ action: 'change_schedule', actor: 'admin@x' });
  });

  it("keeps a run-time change over the code's declaration until reset, then takes the code's", async () => {
    await registerKinds(t.db, [kindOf('report.build')]);
    const declared = (cron: string) =>
      defineSchedule({ name: 'nightly', job: reportJob, cron, payload: { scope: 'all' } });
    expect(await declareSchedules(t.db, [declared('0 3 * * *')])).toEqual({ kept: [] });
    expect((await getSchedule(t.db, 'nightly'))?.cron).toBe('0 3 * * *');
    await changeSchedule(t.db, 'nightly', { cron: '0 4 * * *' }, { actor: 'admin@x' });
    // The next deploy declares 05:00: the run-time 04:00 stays, and says so.
    expect(await declareSchedules(t.db, [declared('0 5 * * *')])).toEqual({ kept: ['nightly'] });
    expect(await getSchedule(t.db, 'nightly')).toMatchObject({ cron: '0 4 * * *', overridden: true, source: 'code' });
    expect((await resetSchedule(t.db, 'nightly', { actor: 'admin@x' })).verdict).toBe('applied');
    expect(await getSchedule(t.db, 'nightly')).toMatchObject({ cron: '0 5 * * *', overridden: false });
    // Deleted, it comes back at the next declaration (take it out of the code first).
    expect((await deleteSchedule(t.db, 'nightly', { actor: 'admin@x' })).verdict).toBe('applied');
    expect(await getSchedule(t.db, 'nightly')).toBeNull();
    await declareSchedules(t.db, [declared('0 5 * * *')]);
    expect(await getSchedule(t.db, 'nightly')).toMatchObject({ cron: '0 5 * * *', source: 'code', overridden: false });
  });

  it('enqueues nothing while paused, and resumes from its next tick without the paused ones', async () => {
    const { queue } = await scheduleFrom('pausable', { cron: '* * * * * *' }, 0);
    expect((await pauseSchedule(t.db, 'pausable', { actor: 'admin@x', reason: 'maintenance window' })).verdict).toBe(
      'applied',
    );
    await new Promise((r) => setTimeout(r, 1100));
    await runDueSchedules(t.db);
    expect(await jobsOf(queue)).toHaveLength(0);
    expect((await getSchedule(t.db, 'pausable'))?.nextTickAt).toBeNull();
    await resumeSchedule(t.db, 'pausable', { actor: 'admin@x' });
    const [{ resumed } = { resumed: new Date() }] = await run<{ resumed: Date }>(
      t.db,
      sql`SELECT ticks_after AS resumed FROM leasehold.schedules WHERE name = 'pausable'`,
    );
    await new Promise((r) => setTimeout(r, 1100));
    await runDueSchedules(t.db);
    const jobs = await jobsOf(queue);
    expect(jobs.length).toBeGreaterThanOrEqual(1);
    for (const j of jobs) {
      expect(scheduledTick(j.idempotency_key)!.tickAt.getTime()).toBeGreaterThan(new Date(resumed).getTime());
    }
    const recent = await recentTicks(t.db, 'pausable');
    expect(recent[0]).toMatchObject({ outcome: 'enqueued', jobState: 'ready' });
    expect((await deleteSchedule(t.db, 'pausable', { actor: 'admin@x' })).verdict).toBe('applied');
    expect(await getSchedule(t.db, 'pausable')).toBeNull();
  });
});
