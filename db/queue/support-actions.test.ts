/**
 * The support actions (db/queue/support-actions.ts, drizzle/0029) as the dashboard's role: each
 * applied, refused when the job changed since it was viewed, refused for a job in a state it does
 * not take, bad input refused with nothing written, and one audit row per call.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type DbHandle } from '../client.ts';
import { claimOne, getJob, uniqueQueue, addJob } from '../../test/factories.ts';
import { sqlStateOf, useRoleDatabase } from '../../test/roles.ts';
import { LeaseholdInputError } from './errors.ts';
import {
  claim,
  completeIfLeaseHeld,
  failIfLeaseHeld,
  purgeDeadJobs,
  registerKinds,
  rerunCopy,
  rescheduleIfUnchanged,
  runNowIfUnchanged,
  setPriorityIfUnchanged,
  type Job,
} from './index.ts';

const r = useRoleDatabase();
let admin: DbHandle;
let dashboard: DbHandle;

beforeAll(() => {
  admin = createDb(r.adminUrl, { max: 2 });
  dashboard = createDb(r.urls.dashboard, { max: 2 });
});
afterAll(async () => {
  await Promise.all([admin.close(), dashboard.close()]);
});

const actor = 'operator@example.com';
const seenOf = (job: Job) => ({ state: job.state, attempts: job.attempts, updatedAt: job.updatedAt });

/** The job's ordering columns and its ready row's (null when it has none). */
async function order(id: string) {
  const { rows } = await admin.pool.query<{
    run_at: Date;
    claim_at: Date;
    priority: number;
    row_claim_at: Date | null;
    row_run_at: Date | null;
  }>(
    `SELECT j.run_at, j.claim_at, j.priority, r.claim_at AS row_claim_at, r.run_at AS row_run_at
     FROM leasehold.jobs j LEFT JOIN leasehold.ready_jobs r ON r.id = j.id WHERE j.id = $1`,
    [id],
  );
  return rows[0]!;
}

async function auditsOf(action: string, id: string) {
  const { rows } = await admin.pool.query<{
    actor: string;
    outcome: string;
    job_ids: string[];
    queue: string | null;
    detail: Record<string, unknown>;
  }>(
    'SELECT actor, outcome, job_ids, queue, detail FROM leasehold.audit_log WHERE action = $1 AND job_ids @> ARRAY[$2::uuid] ORDER BY id',
    [action, id],
  );
  return rows;
}

async function doneJob(queue: string, kind = 'support.copy'): Promise<Job> {
  const job = await addJob(admin.db, { queue, kind, priority: 7, maxAttempts: 4, payload: { order: 42 } });
  await completeIfLeaseHeld(admin.db, await claimOne(admin.db, queue));
  return getJob(admin.db, job.id);
}

async function deadJob(queue: string): Promise<Job> {
  const job = await addJob(admin.db, { queue });
  await failIfLeaseHeld(admin.db, await claimOne(admin.db, queue), { error: 'bad', failureClass: 'permanent' });
  return getJob(admin.db, job.id);
}

describe('run now', () => {
  it('makes a scheduled job due now, keeps its aging offset, moves its ready row and audits it', async () => {
    const queue = uniqueQueue('run-now');
    const job = await addJob(admin.db, { queue, delayMs: 3_600_000, priority: 3 });
    const before = await order(job.id);
    const outcome = await runNowIfUnchanged(dashboard.db, {
      id: job.id,
      seen: seenOf(job),
      actor,
      reason: 'customer waiting',
    });
    expect(outcome).toMatchObject({ applied: true });
    const after = await order(job.id);
    expect(after.run_at.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
    expect(after.run_at.getTime() - after.claim_at.getTime()).toBe(before.run_at.getTime() - before.claim_at.getTime());
    expect(after.row_claim_at).toEqual(after.claim_at);
    expect(await claim(admin.db, { queues: [queue], workerId: 'w', limit: 1, leaseSeconds: 30 })).toHaveLength(1);
    expect(await auditsOf('run_now', job.id)).toMatchObject([
      { actor, outcome: 'applied', queue, detail: { reason: 'customer waiting', refused: null } },
    ]);
  });

  it('refuses a job that changed since it was viewed, and changes nothing', async () => {
    const queue = uniqueQueue('run-now-changed');
    const job = await addJob(admin.db, { queue, delayMs: 3_600_000 });
    const seen = seenOf(job);
    const later = new Date(Date.now() + 7_200_000);
    expect(await rescheduleIfUnchanged(dashboard.db, { id: job.id, runAt: later, seen, actor })).toMatchObject({
      applied: true,
    });
    const moved = await order(job.id);
    const outcome = await runNowIfUnchanged(dashboard.db, { id: job.id, seen, actor });
    expect(outcome).toMatchObject({ applied: false, reason: 'changed_since_viewed', state: 'ready' });
    expect(await order(job.id)).toEqual(moved);
    expect(await auditsOf('run_now', job.id)).toMatchObject([
      { outcome: 'refused', detail: { refused: 'changed_since_viewed' } },
    ]);
  });

  it('refuses a job that is due already or not waiting, and one that is gone', async () => {
    const queue = uniqueQueue('run-now-state');
    const due = await addJob(admin.db, { queue });
    expect(await runNowIfUnchanged(dashboard.db, { id: due.id, seen: seenOf(due), actor })).toMatchObject({
      applied: false,
      reason: 'not_waiting',
    });
    const done = await doneJob(queue);
    expect(await runNowIfUnchanged(dashboard.db, { id: done.id, seen: seenOf(done), actor })).toMatchObject({
      applied: false,
      reason: 'not_waiting',
      state: 'done',
    });
    const gone = '00000000-0000-7000-8000-0000000000ff';
    expect(
      await runNowIfUnchanged(dashboard.db, {
        id: gone,
        seen: { state: 'ready', attempts: 0, updatedAt: new Date() },
        actor,
      }),
    ).toMatchObject({ applied: false, reason: 'not_found' });
  });

  it('runs a retrying job (attempted before) now', async () => {
    const queue = uniqueQueue('run-now-retry');
    const job = await addJob(admin.db, { queue });
    await failIfLeaseHeld(admin.db, await claimOne(admin.db, queue), { error: '503', failureClass: 'transient' });
    const retrying = await getJob(admin.db, job.id);
    expect(retrying).toMatchObject({ state: 'ready', attempts: 1 });
    expect(await runNowIfUnchanged(dashboard.db, { id: job.id, seen: seenOf(retrying), actor })).toMatchObject({
      applied: true,
    });
    expect((await order(job.id)).run_at.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
  });

  it('leaves a retrying job that is due already in its place, never later', async () => {
    const queue = uniqueQueue('run-now-due');
    const job = await addJob(admin.db, { queue });
    await failIfLeaseHeld(admin.db, await claimOne(admin.db, queue), { error: '503', failureClass: 'transient' });
    // Its back-off ended an hour ago: it waits in the backlog with an hour's head start.
    await admin.pool.query(
      "UPDATE leasehold.jobs SET run_at = run_at - interval '1 hour', claim_at = claim_at - interval '1 hour' WHERE id = $1",
      [job.id],
    );
    const before = await order(job.id);
    const due = await getJob(admin.db, job.id);
    expect(await runNowIfUnchanged(dashboard.db, { id: job.id, seen: seenOf(due), actor })).toMatchObject({
      applied: true,
    });
    const after = await order(job.id);
    expect(after.run_at).toEqual(before.run_at);
    expect(after.claim_at).toEqual(before.claim_at);
  });
});

describe('reschedule', () => {
  it('moves a scheduled job to a new run time, its ready row with it, audited', async () => {
    const queue = uniqueQueue('resched');
    const job = await addJob(admin.db, { queue, delayMs: 60_000 });
    const runAt = new Date(Date.now() + 86_400_000);
    expect(await rescheduleIfUnchanged(dashboard.db, { id: job.id, runAt, seen: seenOf(job), actor })).toMatchObject({
      applied: true,
    });
    const after = await order(job.id);
    expect(after.run_at).toEqual(runAt);
    expect(after.row_run_at).toEqual(runAt);
    expect(after.row_claim_at).toEqual(after.claim_at);
    expect((await auditsOf('reschedule', job.id))[0]).toMatchObject({
      outcome: 'applied',
      detail: { run_at: expect.any(String) },
    });
  });

  it('refuses a time in the past or more than 365 days ahead with a sentence, writing nothing', async () => {
    const queue = uniqueQueue('resched-bad');
    const job = await addJob(admin.db, { queue, delayMs: 60_000 });
    const before = await order(job.id);
    for (const runAt of [new Date(Date.now() - 60_000), new Date(Date.now() + 366 * 86_400_000)]) {
      const refused = rescheduleIfUnchanged(dashboard.db, { id: job.id, runAt, seen: seenOf(job), actor });
      await expect(refused).rejects.toBeInstanceOf(LeaseholdInputError);
      await expect(
        rescheduleIfUnchanged(dashboard.db, { id: job.id, runAt, seen: seenOf(job), actor }),
      ).rejects.toThrow('the new run time must be in the future and at most 365 days from now');
    }
    expect(await order(job.id)).toEqual(before);
    expect(await auditsOf('reschedule', job.id)).toEqual([]);
    // The function itself refuses a caller that skips the TypeScript (22023, nothing written).
    expect(
      await sqlStateOf(
        dashboard.pool.query(
          "SELECT * FROM leasehold.operator_reschedule('x', NULL, $1, now() - interval '1 day', 'ready', 0, now())",
          [job.id],
        ),
      ),
    ).toBe('22023');
  });
});

describe('priority', () => {
  it('sets a ready job’s priority and its claim order by the queue’s aging step, audited', async () => {
    const queue = uniqueQueue('prio');
    const job = await addJob(admin.db, { queue, priority: 0 });
    expect(
      await setPriorityIfUnchanged(dashboard.db, { id: job.id, priority: 10, seen: seenOf(job), actor }),
    ).toMatchObject({ applied: true });
    const after = await order(job.id);
    expect(after.priority).toBe(10);
    // No queue row: the 60 s aging step, as an enqueue computes claim_at.
    expect(after.run_at.getTime() - after.claim_at.getTime()).toBe(600_000);
    expect(after.row_claim_at).toEqual(after.claim_at);
    expect((await auditsOf('set_priority', job.id))[0]).toMatchObject({
      outcome: 'applied',
      detail: { priority_before: 0, priority: 10 },
    });
  });

  it('refuses a running job and a priority outside 0 to 100 (nothing written)', async () => {
    const queue = uniqueQueue('prio-bad');
    const job = await addJob(admin.db, { queue });
    await expect(
      setPriorityIfUnchanged(dashboard.db, { id: job.id, priority: 101, seen: seenOf(job), actor }),
    ).rejects.toThrow('priority must be an integer from 0 (the lowest) to 100, not 101');
    expect(await auditsOf('set_priority', job.id)).toEqual([]);
    await claimOne(admin.db, queue);
    const running = await getJob(admin.db, job.id);
    expect(
      await setPriorityIfUnchanged(dashboard.db, { id: job.id, priority: 5, seen: seenOf(running), actor }),
    ).toMatchObject({ applied: false, reason: 'not_waiting', state: 'running' });
    // Seen while it was ready: it changed since.
    expect(
      await setPriorityIfUnchanged(dashboard.db, { id: job.id, priority: 5, seen: seenOf(job), actor }),
    ).toMatchObject({ applied: false, reason: 'changed_since_viewed' });
    expect((await getJob(admin.db, job.id)).priority).toBe(0);
  });
});

describe('re-run', () => {
  it('enqueues a copy of a done job of a re-run-safe kind, rerun_of the original, which stays as it was', async () => {
    const queue = uniqueQueue('rerun');
    await registerKinds(admin.db, [
      {
        kind: 'support.copy',
        version: 1,
        defaultQueue: queue,
        displayName: 'copy',
        redactedPaths: [],
        rerunSafe: true,
      },
    ]);
    const done = await doneJob(queue);
    const outcome = await rerunCopy(dashboard.db, { id: done.id, seen: seenOf(done), actor, reason: 'resend' });
    if (!outcome.applied || !outcome.copyId) throw new Error(`not applied: ${JSON.stringify(outcome)}`);
    const copy = await getJob(admin.db, outcome.copyId);
    expect(copy).toMatchObject({
      state: 'ready',
      queue,
      kind: 'support.copy',
      kindVersion: 1,
      payload: { order: 42 },
      priority: 7,
      maxAttempts: 4,
      attempts: 0,
    });
    const { rows } = await admin.pool.query<{ rerun_of: string }>('SELECT rerun_of FROM leasehold.jobs WHERE id = $1', [
      copy.id,
    ]);
    expect(rows[0]!.rerun_of).toBe(done.id);
    expect(await getJob(admin.db, done.id)).toEqual(done);
    expect(await auditsOf('rerun', done.id)).toMatchObject([
      { outcome: 'applied', job_ids: [done.id, copy.id], detail: { copy: copy.id, reason: 'resend' } },
    ]);
  });

  it('gives the copy the job’s own settings and trace, without its snooze counters or uniqueness key', async () => {
    const queue = uniqueQueue('rerun-settings');
    await registerKinds(admin.db, [
      {
        kind: 'support.copy',
        version: 1,
        defaultQueue: queue,
        displayName: 'copy',
        redactedPaths: [],
        rerunSafe: true,
      },
    ]);
    const job = await addJob(admin.db, { queue, kind: 'support.copy', payload: { order: 7 } });
    await admin.pool.query(
      `UPDATE leasehold.jobs SET trace_id = 'trace-rerun',
         options = '{"awaitable": true, "snoozes": 2, "snoozedMs": 400, "uniqueKey": "order-7"}'::jsonb WHERE id = $1`,
      [job.id],
    );
    await completeIfLeaseHeld(admin.db, await claimOne(admin.db, queue));
    const done = await getJob(admin.db, job.id);
    const outcome = await rerunCopy(dashboard.db, { id: done.id, seen: seenOf(done), actor });
    if (!outcome.applied || !outcome.copyId) throw new Error(`not applied: ${JSON.stringify(outcome)}`);
    const { rows } = await admin.pool.query<{ options: unknown; trace_id: string | null }>(
      'SELECT options, trace_id FROM leasehold.jobs WHERE id = $1',
      [outcome.copyId],
    );
    expect(rows[0]).toEqual({ options: { awaitable: true }, trace_id: 'trace-rerun' });
  });

  it('refuses a kind not declared re-run safe, a job that is not done, and a state not as seen', async () => {
    const queue = uniqueQueue('rerun-no');
    await registerKinds(admin.db, [
      {
        kind: 'support.unsafe',
        version: 1,
        defaultQueue: queue,
        displayName: 'u',
        redactedPaths: [],
        rerunSafe: false,
      },
    ]);
    const unsafe = await doneJob(queue, 'support.unsafe');
    expect(await rerunCopy(dashboard.db, { id: unsafe.id, seen: seenOf(unsafe), actor })).toMatchObject({
      applied: false,
      reason: 'not_rerun_safe',
    });
    const unregistered = await doneJob(queue, 'support.unregistered');
    expect(await rerunCopy(dashboard.db, { id: unregistered.id, seen: seenOf(unregistered), actor })).toMatchObject({
      applied: false,
      reason: 'not_rerun_safe',
    });
    const dead = await deadJob(queue);
    expect(await rerunCopy(dashboard.db, { id: dead.id, seen: seenOf(dead), actor })).toMatchObject({
      applied: false,
      reason: 'not_done',
    });
    expect(
      await rerunCopy(dashboard.db, { id: unsafe.id, seen: { ...seenOf(unsafe), state: 'running' }, actor }),
    ).toMatchObject({ applied: false, reason: 'changed_since_viewed' });
    const { rows } = await admin.pool.query('SELECT 1 FROM leasehold.jobs WHERE rerun_of = ANY($1::uuid[])', [
      [unsafe.id, unregistered.id, dead.id],
    ]);
    expect(rows).toEqual([]);
    expect((await auditsOf('rerun', unsafe.id)).map((a) => a.outcome)).toEqual(['refused', 'refused']);
  });
});

describe('purge of dead jobs', () => {
  it('removes the previewed dead jobs finished before the date, with their attempts, audited once', async () => {
    const queue = uniqueQueue('purge');
    const old = await deadJob(queue);
    const recent = await deadJob(queue);
    const done = await doneJob(queue);
    await admin.pool.query(
      "UPDATE leasehold.jobs SET finished_at = finished_at - interval '10 days' WHERE id = ANY($1::uuid[])",
      [[old.id, done.id]],
    );
    const before = new Date(Date.now() - 86_400_000);
    const result = await purgeDeadJobs(dashboard.db, {
      queue,
      before,
      ids: [old.id, recent.id, done.id],
      actor: 'admin@example.com',
      reason: 'cleanup',
    });
    expect(result).toMatchObject({ requested: 3, purged: 1 });
    const { rows } = await admin.pool.query<{ id: string }>('SELECT id FROM leasehold.jobs WHERE queue = $1', [queue]);
    expect(rows.map((x) => x.id).sort()).toEqual([recent.id, done.id].sort());
    const attempts = await admin.pool.query('SELECT 1 FROM leasehold.job_attempts WHERE job_id = $1', [old.id]);
    expect(attempts.rows).toEqual([]);
    expect(await auditsOf('purge_dead', old.id)).toMatchObject([
      { outcome: 'partial', queue, detail: { reason: 'cleanup', attempts: 1 } },
    ]);
  });

  it('refuses a date in the future and a queue name that is not one, writing nothing', async () => {
    const queue = uniqueQueue('purge-bad');
    const dead = await deadJob(queue);
    await expect(
      purgeDeadJobs(dashboard.db, { queue, before: new Date(Date.now() + 3_600_000), ids: [dead.id], actor }),
    ).rejects.toThrow('a queue name and a date not in the future are needed');
    await expect(
      purgeDeadJobs(dashboard.db, { queue: 'bad name!', before: new Date(), ids: [dead.id], actor }),
    ).rejects.toBeInstanceOf(LeaseholdInputError);
    expect((await getJob(admin.db, dead.id)).state).toBe('dead');
    expect(await auditsOf('purge_dead', dead.id)).toEqual([]);
  });
});
