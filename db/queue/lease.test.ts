import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import {
  cancelIfUnchanged,
  claim,
  completeIfLeaseHeld,
  failIfLeaseHeld,
  heartbeatIfLeaseHeld,
  heartbeatManyIfLeaseHeld,
  reapExpiredLeases,
  releaseIfLeaseHeld,
  removeExpiredHistory,
  workerHeartbeat,
  registerWorker,
  deregisterWorker,
} from '.';
import { leaseHeldSql } from './transitions.ts';
import { run } from './executor.ts';
import { useTestDatabase } from '../../test/db.ts';
import { addJob, attemptsOf, claimOne, expireLease, getJob, makeDue, uniqueQueue } from '../../test/factories.ts';

const t = useTestDatabase();

describe('the stale worker story (seed 000)', () => {
  it("refuses every settlement by a worker whose lease was reaped and re-claimed, and B's completion wins", async () => {
    const queue = uniqueQueue();
    const job = await addJob(t.db, { queue });
    const a = await claimOne(t.db, queue, 'worker-a');
    expect(a.attempt).toBe(1);

    await expireLease(t.db, job.id);
    const reaped = await reapExpiredLeases(t.db, { leaseExpiredDelayMs: 0 });
    expect(reaped.retried).toContain(job.id);

    const b = await claimOne(t.db, queue, 'worker-b');
    expect(b.id).toBe(job.id);
    expect(b.attempt).toBe(2);
    expect(b.leaseToken).not.toBe(a.leaseToken);

    const before = await getJob(t.db, job.id);
    expect(await completeIfLeaseHeld(t.db, a)).toEqual({ applied: false, reason: 'lease_lost' });
    expect(await failIfLeaseHeld(t.db, a, { error: 'late', failureClass: 'transient' })).toEqual({
      applied: false,
      reason: 'lease_lost',
    });
    expect(await heartbeatIfLeaseHeld(t.db, a, { leaseSeconds: 60 })).toEqual({ applied: false, reason: 'lease_lost' });
    expect(await releaseIfLeaseHeld(t.db, a)).toEqual({ applied: false, reason: 'lease_lost' });
    expect(await getJob(t.db, job.id)).toEqual(before);

    expect(await completeIfLeaseHeld(t.db, b)).toEqual({ applied: true });
    const after = await getJob(t.db, job.id);
    expect(after.state).toBe('done');
    expect(after.attempts).toBe(2);
    expect(after.workerId).toBe('worker-b');
    const history = await attemptsOf(t.db, job.id);
    expect(history.map((h) => [h.attempt, h.outcome, h.workerId])).toEqual([
      [1, 'lease_expired', 'worker-a'],
      [2, 'completed', 'worker-b'],
    ]);
    expect(history[0]!.leaseToken).toBe(a.leaseToken);
    // The completing attempt is recorded by the done row, which keeps no token (a settled job
    // holds no lease); its attempt number names it.
    expect(history[1]!.leaseToken).toBeNull();
  });

  it('rejects a completion after lease_until even before any reaper has run', async () => {
    const queue = uniqueQueue();
    await addJob(t.db, { queue });
    const [job] = await claim(t.db, { queues: [queue], workerId: 'slow', leaseSeconds: 1 });
    // Real time passes here: the deadline is database time, one second after the claim.
    await new Promise((r) => setTimeout(r, 1_300));
    expect(await completeIfLeaseHeld(t.db, job!)).toEqual({ applied: false, reason: 'lease_lost' });
    const stored = await getJob(t.db, job!.id);
    expect(stored.state).toBe('running');
    expect(stored.leaseToken).toBe(job!.leaseToken);
    expect(await attemptsOf(t.db, job!.id)).toEqual([]);
  });
});

describe('heartbeat', () => {
  it('extends the lease of the attempt that holds it, in database time', async () => {
    const queue = uniqueQueue();
    await addJob(t.db, { queue });
    const job = await claimOne(t.db, queue, 'w', 5);
    const beat = await heartbeatIfLeaseHeld(t.db, job, { leaseSeconds: 120 });
    expect(beat.applied).toBe(true);
    if (beat.applied) expect(beat.leaseUntil.getTime()).toBeGreaterThan(job.leaseUntil.getTime() + 100_000);
    expect((await getJob(t.db, job.id)).leaseUntil).toEqual(beat.applied ? beat.leaseUntil : null);
  });

  it('keeps a job that heartbeats past its first deadline away from the reaper', async () => {
    const queue = uniqueQueue();
    await addJob(t.db, { queue });
    const job = await claimOne(t.db, queue, 'w', 1);
    await new Promise((r) => setTimeout(r, 600));
    expect((await heartbeatIfLeaseHeld(t.db, job, { leaseSeconds: 1 })).applied).toBe(true);
    await new Promise((r) => setTimeout(r, 600));
    // 1.2 s after the claim: past the first lease, inside the extended one.
    const reaped = await reapExpiredLeases(t.db);
    expect(reaped.retried).not.toContain(job.id);
    expect(reaped.dead).not.toContain(job.id);
    expect(await completeIfLeaseHeld(t.db, job)).toEqual({ applied: true });
  });
});

describe('release', () => {
  it('returns the job to ready without charging the attempt, keeping the attempt number growing', async () => {
    const queue = uniqueQueue();
    await addJob(t.db, { queue, maxAttempts: 2 });
    const first = await claimOne(t.db, queue);
    expect(await releaseIfLeaseHeld(t.db, first, { reason: 'shutting down' })).toEqual({ applied: true });
    const released = await getJob(t.db, first.id);
    expect(released).toMatchObject({ state: 'ready', attempts: 1, maxAttempts: 2, leaseToken: null });
    const [row] = await run<{ released: number }>(
      t.db,
      sql`SELECT released FROM leasehold.jobs WHERE id = ${first.id}::uuid`,
    );
    expect(row!.released).toBe(1);
    const second = await claimOne(t.db, queue);
    expect(second.attempt).toBe(2);
    expect(await completeIfLeaseHeld(t.db, second)).toEqual({ applied: true });
    expect((await attemptsOf(t.db, first.id)).map((a) => a.outcome)).toEqual(['released', 'completed']);
  });
});

describe('operator cancel of a running job', () => {
  it('is refused with a stale token, and with the current token stops the worker from settling', async () => {
    const queue = uniqueQueue();
    const job = await addJob(t.db, { queue });
    const a = await claimOne(t.db, queue, 'worker-a');
    await expireLease(t.db, job.id);
    await reapExpiredLeases(t.db, { leaseExpiredDelayMs: 0 });
    const b = await claimOne(t.db, queue, 'worker-b');

    // The operator looked while attempt 1 was running: that token is stale now.
    const stale = await cancelIfUnchanged(t.db, { id: job.id, leaseToken: a.leaseToken, actor: 'ops@example.com' });
    expect(stale).toMatchObject({ applied: false, reason: 'changed_since_viewed', state: 'running' });
    const withoutToken = await cancelIfUnchanged(t.db, { id: job.id, actor: 'ops@example.com' });
    expect(withoutToken).toMatchObject({ applied: false, reason: 'changed_since_viewed' });
    expect((await getJob(t.db, job.id)).state).toBe('running');

    const current = await cancelIfUnchanged(t.db, { id: job.id, leaseToken: b.leaseToken, actor: 'ops@example.com' });
    expect(current.applied).toBe(true);
    expect(await heartbeatIfLeaseHeld(t.db, b, { leaseSeconds: 30 })).toEqual({ applied: false, reason: 'lease_lost' });
    expect(await completeIfLeaseHeld(t.db, b)).toEqual({ applied: false, reason: 'lease_lost' });
    const stored = await getJob(t.db, job.id);
    expect(stored).toMatchObject({ state: 'cancelled', failureClass: 'cancelled', leaseToken: null });
    expect(stored.finishedAt).not.toBeNull();
    expect((await attemptsOf(t.db, job.id)).map((h) => h.outcome)).toEqual(['lease_expired', 'cancelled']);
  });
});

describe('a job whose lease keeps expiring', () => {
  it('ends dead as lease_expired when its attempts are spent, instead of looping', async () => {
    const queue = uniqueQueue();
    const job = await addJob(t.db, { queue, maxAttempts: 3 });
    for (let attempt = 1; attempt <= 3; attempt++) {
      const claimed = await claimOne(t.db, queue, `crashy-${attempt}`);
      expect(claimed.attempt).toBe(attempt);
      await expireLease(t.db, job.id);
      const reaped = await reapExpiredLeases(t.db, { leaseExpiredDelayMs: 0 });
      expect(attempt < 3 ? reaped.retried : reaped.dead).toContain(job.id);
    }
    const stored = await getJob(t.db, job.id);
    expect(stored).toMatchObject({ state: 'dead', failureClass: 'lease_expired', attempts: 3 });
    expect(stored.lastError).toMatch(/no attempts left/);
    expect(await claim(t.db, { queues: [queue], workerId: 'w' })).toEqual([]);
  });

  it('waits the lease-expired delay before it can be claimed again', async () => {
    const queue = uniqueQueue();
    const job = await addJob(t.db, { queue });
    await claimOne(t.db, queue);
    await expireLease(t.db, job.id);
    await reapExpiredLeases(t.db, { leaseExpiredDelayMs: 60_000 });
    expect(await claim(t.db, { queues: [queue], workerId: 'w' })).toEqual([]);
    await makeDue(t.db, job.id);
    expect((await claimOne(t.db, queue)).attempt).toBe(2);
  });
});

describe('edge cases found in review', () => {
  it('settles a job whose id was reused after retention removed the first one (history keyed by token)', async () => {
    const queue = uniqueQueue();
    const id = '0190f0e8-0000-7000-8000-0000000000aa';
    await addJob(t.db, { id, queue });
    await completeIfLeaseHeld(t.db, await claimOne(t.db, queue));
    await removeExpiredHistory(t.db, { doneAfterSeconds: 0 });
    await addJob(t.db, { id, queue });
    const again = await claimOne(t.db, queue);
    expect(again.attempt).toBe(1);
    expect(await completeIfLeaseHeld(t.db, again)).toEqual({ applied: true });
  });

  it('stores an error containing U+0000 instead of failing the settlement', async () => {
    const queue = uniqueQueue();
    await addJob(t.db, { queue });
    const job = await claimOne(t.db, queue);
    const outcome = await failIfLeaseHeld(t.db, job, { error: 'binary\u0000body', failureClass: 'permanent' });
    expect(outcome).toMatchObject({ applied: true, state: 'dead' });
    expect((await getJob(t.db, job.id)).lastError).toBe('binary\uFFFDbody');
  });

  it('refuses a fail call without the attempt numbers, writing nothing', async () => {
    const queue = uniqueQueue();
    await addJob(t.db, { queue });
    const job = await claimOne(t.db, queue);
    await expect(
      failIfLeaseHeld(t.db, { id: job.id, leaseToken: job.leaseToken } as never, {
        error: 'x',
        failureClass: 'transient',
      }),
    ).rejects.toThrow(/attempt/);
    expect((await getJob(t.db, job.id)).state).toBe('running');
  });

  it('never shortens a lease through a heartbeat', async () => {
    const queue = uniqueQueue();
    await addJob(t.db, { queue });
    const job = await claimOne(t.db, queue, 'w', 600);
    const beat = await heartbeatIfLeaseHeld(t.db, job, { leaseSeconds: 5 });
    expect(beat.applied && beat.leaseUntil.getTime()).toBe(job.leaseUntil.getTime());
  });

  it('refuses to cancel a job seen running that went back to ready (changed since viewed)', async () => {
    const queue = uniqueQueue();
    const job = await addJob(t.db, { queue });
    const seen = await claimOne(t.db, queue);
    await expireLease(t.db, job.id);
    await reapExpiredLeases(t.db, { leaseExpiredDelayMs: 0 });
    const outcome = await cancelIfUnchanged(t.db, { id: job.id, leaseToken: seen.leaseToken, actor: 'op' });
    expect(outcome).toMatchObject({ applied: false, reason: 'changed_since_viewed', state: 'ready' });
  });
});

describe('heartbeats and row locks taken by other transactions (security review B2)', () => {
  /** Runs `work` while another session holds `FOR UPDATE` on job `id`; the lock is freed after. */
  async function whileRowLocked<T>(id: string, work: () => Promise<T>): Promise<T> {
    const other = await t.pool.connect();
    try {
      await other.query('BEGIN');
      await other.query('SELECT id FROM leasehold.jobs WHERE id = $1 FOR UPDATE', [id]);
      return await work();
    } finally {
      await other.query('ROLLBACK').catch(() => {});
      other.release();
    }
  }

  /** `promise`, or a rejection once `ms` passed (the statement would otherwise wait on the lock). */
  function within<T>(ms: number, promise: Promise<T>): Promise<T> {
    return Promise.race([
      promise,
      new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`still waiting after ${ms} ms`)), ms)),
    ]);
  }

  it('renews the other leases at once and reports the locked row as not renewed, not as lost', async () => {
    const queue = uniqueQueue();
    for (let i = 0; i < 3; i++) await addJob(t.db, { queue });
    const [locked, free, cancelled] = await claim(t.db, { queues: [queue], workerId: 'w', limit: 3, leaseSeconds: 30 });
    await cancelIfUnchanged(t.db, { id: cancelled!.id, leaseToken: cancelled!.leaseToken, actor: 'op' });
    const started = performance.now();
    const outcomes = await whileRowLocked(locked!.id, () =>
      within(2000, heartbeatManyIfLeaseHeld(t.db, [locked!, free!, cancelled!], { leaseSeconds: 120 })),
    );
    expect(performance.now() - started).toBeLessThan(2000);
    expect(outcomes[0]).toEqual({ applied: false, reason: 'row_locked' });
    expect(outcomes[1]).toMatchObject({ applied: true });
    expect(outcomes[2]).toEqual({ applied: false, reason: 'lease_lost' });
    const renewed = outcomes[1] as { leaseUntil: Date; leaseRemainingMs: number };
    expect(renewed.leaseRemainingMs).toBeGreaterThan(119_000);
    expect(renewed.leaseRemainingMs).toBeLessThanOrEqual(120_000);
    expect((await getJob(t.db, free!.id)).leaseUntil?.getTime()).toBe(renewed.leaseUntil.getTime());
    // The locked row kept its old deadline, and its lease is still held: the next beat renews it.
    expect((await getJob(t.db, locked!.id)).leaseUntil?.getTime()).toBe(locked!.leaseUntil.getTime());
    expect(await heartbeatIfLeaseHeld(t.db, locked!, { leaseSeconds: 120 })).toMatchObject({ applied: true });
  });

  it('answers a single heartbeat on a locked row at once with row_locked', async () => {
    const queue = uniqueQueue();
    await addJob(t.db, { queue });
    const job = await claimOne(t.db, queue);
    const outcome = await whileRowLocked(job.id, () =>
      within(2000, heartbeatIfLeaseHeld(t.db, job, { leaseSeconds: 60 })),
    );
    expect(outcome).toEqual({ applied: false, reason: 'row_locked' });
  });
});

describe('worker leases (one heartbeat write per worker)', () => {
  const beat = (workerId: string, leases: { id: string; leaseToken: string }[] = [], more = {}) =>
    workerHeartbeat(t.db, { workerId, leaseSeconds: 30, marginSeconds: 5, liveSeconds: 60, leases, ...more });
  const pastOwnDeadline = (id: string) =>
    run(t.db, sql`UPDATE leasehold.jobs SET lease_until = now() - interval '1 second' WHERE id = ${id}::uuid`);
  const endWorkerLease = (workerId: string) =>
    run(
      t.db,
      sql`UPDATE leasehold.worker_leases SET lease_until = now() - interval '1 second' WHERE worker_id = ${workerId}`,
    );
  const viewed = async (id: string) =>
    (
      await run<{ sub_state: string; lease_until: Date | null }>(
        t.db,
        sql`SELECT sub_state, lease_until FROM leasehold.jobs_view WHERE id = ${id}::uuid`,
      )
    )[0]!;
  const workerLease = async (workerId: string) => {
    const [row] = await run<{ since: string; lease_until: string }>(
      t.db,
      sql`SELECT since, lease_until FROM leasehold.worker_leases WHERE worker_id = ${workerId}`,
    );
    return row && { since: new Date(row.since), lease_until: new Date(row.lease_until) };
  };

  /** A job claimed by a worker whose lease started first, the job's own deadline passed. */
  const coveredJobPastItsOwnDeadline = async () => {
    const queue = uniqueQueue();
    const worker = `w-${queue}`;
    await beat(worker);
    const job = await addJob(t.db, { queue });
    const a = await claimOne(t.db, queue, worker);
    await pastOwnDeadline(job.id);
    return { queue, worker, job, a };
  };

  it('keeps a job past its own deadline held while its worker lease covers its claim: settled, not reaped', async () => {
    const queue = uniqueQueue();
    const worker = `w-${queue}`;
    await beat(worker); // the worker lease starts before the claim
    const [first, second] = [await addJob(t.db, { queue }), await addJob(t.db, { queue })];
    const a = await claimOne(t.db, queue, worker);
    const b = await claimOne(t.db, queue, worker);
    await pastOwnDeadline(first.id);
    await pastOwnDeadline(second.id);
    const renewed = await beat(worker, [a, b]);
    expect(renewed.renewed).toBe(true);
    expect(renewed.attempts).toEqual([
      { running: true, covered: true },
      { running: true, covered: true },
    ]);
    expect(await reapExpiredLeases(t.db, { leaseExpiredDelayMs: 0 })).toMatchObject({ reaped: 0 });
    const shown = await viewed(a.id);
    expect(shown.sub_state).toBe('running');
    expect(new Date(shown.lease_until!).getTime()).toBe(renewed.leaseUntil.getTime());
    expect(await heartbeatIfLeaseHeld(t.db, b, { leaseSeconds: 30 })).toMatchObject({ applied: true });
    expect(await completeIfLeaseHeld(t.db, a)).toEqual({ applied: true });
    expect((await getJob(t.db, a.id)).state).toBe('done');
  });

  it('ends the covered jobs once the worker lease runs out, and then removes that worker lease', async () => {
    const { worker, job, a } = await coveredJobPastItsOwnDeadline();
    await endWorkerLease(worker);
    expect((await viewed(job.id)).sub_state).toBe('lease_expired');
    expect(await completeIfLeaseHeld(t.db, a)).toEqual({ applied: false, reason: 'lease_lost' });
    const reaped = await reapExpiredLeases(t.db, { leaseExpiredDelayMs: 0 });
    expect(reaped.retried).toContain(job.id);
    // Kept while its claim's lease row is (the lease log reads it); the next round removes it.
    expect(await workerLease(worker)).toBeDefined();
    await reapExpiredLeases(t.db, { leaseExpiredDelayMs: 0 });
    expect(await workerLease(worker)).toBeUndefined();
    const history = await attemptsOf(t.db, job.id);
    expect(history[0]!.error).toMatch(/lease expired: attempt 1 \(worker w-/);
  });

  it('never revives a worker lease that ran out: the next heartbeat starts one that covers only later claims', async () => {
    const { queue, worker, job, a } = await coveredJobPastItsOwnDeadline();
    await endWorkerLease(worker);
    const before = await workerLease(worker);
    const next = await beat(worker, [a]);
    const after = await workerLease(worker);
    expect(after!.since.getTime()).toBeGreaterThan(before!.since.getTime()); // a new lease
    expect(next.attempts).toEqual([{ running: true, covered: false }]); // the old claim is not covered
    expect(await completeIfLeaseHeld(t.db, a)).toEqual({ applied: false, reason: 'lease_lost' });
    expect((await reapExpiredLeases(t.db, { leaseExpiredDelayMs: 0 })).retried).toContain(job.id);
    const c = await claimOne(t.db, queue, worker); // claimed again under the new worker lease
    expect((await beat(worker, [c])).attempts).toEqual([{ running: true, covered: true }]);
  });

  it('leaves a worker lease inside its last margin to run out instead of renewing it', async () => {
    const queue = uniqueQueue();
    const worker = `w-${queue}`;
    await beat(worker);
    await run(
      t.db,
      sql`UPDATE leasehold.worker_leases SET lease_until = now() + interval '2 seconds' WHERE worker_id = ${worker}`,
    );
    const before = await workerLease(worker);
    const late = await beat(worker);
    expect(late.renewed).toBe(false);
    expect((await workerLease(worker))!.lease_until.getTime()).toBe(before!.lease_until.getTime());
  });

  it('stops covering a claim its worker detached: the job own deadline decides again', async () => {
    const { worker, job, a } = await coveredJobPastItsOwnDeadline();
    const detached = await beat(worker, [a], { detach: [a.leaseToken] });
    expect(detached.attempts).toEqual([{ running: true, covered: false }]);
    expect(await completeIfLeaseHeld(t.db, a)).toEqual({ applied: false, reason: 'lease_lost' });
    expect((await reapExpiredLeases(t.db, { leaseExpiredDelayMs: 0 })).retried).toContain(job.id);
  });

  it('detaches, after a failed claim, only the covered claims whose lease passed and that no attempt holds', async () => {
    const queue = uniqueQueue();
    const worker = `w-${queue}`;
    await beat(worker);
    for (let i = 0; i < 3; i++) await addJob(t.db, { queue });
    const known = await claimOne(t.db, queue, worker);
    const lost = await claimOne(t.db, queue, worker); // committed; its answer never reached the worker
    const fresh = await claimOne(t.db, queue, worker); // its lease has not passed: perhaps still in flight
    for (const c of [known, lost]) {
      await pastOwnDeadline(c.id);
      await run(
        t.db,
        sql`UPDATE leasehold.leases SET lease_until = now() - interval '1 second' WHERE token = ${c.leaseToken}::uuid`,
      );
    }
    const usual = await beat(worker, [known]); // no failed claim: the lease rows are not read
    expect(usual.lostClaims).toBe(0);
    expect((await reapExpiredLeases(t.db, { leaseExpiredDelayMs: 0 })).reaped).toBe(0);
    const reconciled = await beat(worker, [known], { reconcile: { known: [known.leaseToken] } });
    expect(reconciled.lostClaims).toBe(1);
    expect(reconciled.attempts).toEqual([{ running: true, covered: true }]);
    expect((await reapExpiredLeases(t.db, { leaseExpiredDelayMs: 0 })).retried).toEqual([lost.id]);
    expect((await getJob(t.db, known.id)).state).toBe('running');
    expect((await getJob(t.db, fresh.id)).state).toBe('running');
    expect((await beat(worker, [known], { reconcile: { known: [known.leaseToken] } })).lostClaims).toBe(0);
  });

  it('moves its claims lease rows as well while a worker without a worker lease (an older release) is live', async () => {
    const queue = uniqueQueue();
    const worker = `w-${queue}`;
    await beat(worker);
    await addJob(t.db, { queue });
    const a = await claimOne(t.db, queue, worker);
    const leaseRow = async () =>
      (
        await run<{ lease_until: Date }>(
          t.db,
          sql`SELECT lease_until FROM leasehold.leases WHERE token = ${a.leaseToken}::uuid`,
        )
      )[0]!.lease_until;
    // What the reaper of schema version 9 (db/queue/transitions/maintenance.ts at 145efd0) would
    // take: a lease row past its deadline and its job past its own.
    const oldReaperTakes = async () =>
      (
        await run<{ n: number }>(
          t.db,
          sql`SELECT count(*)::int AS n FROM leasehold.leases l JOIN leasehold.jobs j ON j.id = ANY(l.job_ids)
              WHERE l.token = ${a.leaseToken}::uuid AND l.lease_until <= statement_timestamp()
                AND j.lease_token = l.token AND j.state = 'running' AND j.lease_until <= statement_timestamp()`,
        )
      )[0]!.n;
    const claimed = new Date(await leaseRow()).getTime();
    await run(
      t.db,
      sql`DELETE FROM leasehold.workers WHERE NOT EXISTS (SELECT 1 FROM leasehold.worker_leases w WHERE w.worker_id = workers.id)`,
    );
    await beat(worker, [a]);
    expect(new Date(await leaseRow()).getTime()).toBe(claimed); // nobody needs it moved
    // Both deadlines passed: held by the worker lease alone, which an older reaper cannot see.
    await run(t.db, sql`UPDATE leasehold.jobs SET lease_until = now() - interval '1 second' WHERE id = ${a.id}::uuid`);
    expect(await oldReaperTakes()).toBe(1);
    await registerWorker(t.db, { id: `old-${queue}`, host: 'h', pid: 1, queues: [queue], concurrency: 1 });
    const moved = await beat(worker, [a]);
    expect(new Date(await leaseRow()).getTime()).toBe(moved.leaseUntil.getTime());
    expect(await oldReaperTakes()).toBe(0);
    expect(await completeIfLeaseHeld(t.db, a)).toEqual({ applied: true });
    await deregisterWorker(t.db, `old-${queue}`);
  });

  it('states one deadline: leasehold.effective_lease_until agrees with the settlements guard', async () => {
    const queue = uniqueQueue();
    const worker = `w-${queue}`;
    await beat(worker);
    const cases: { own: string; worker: string | null; detached: boolean }[] = [];
    for (const own of ['-5 seconds', '+5 seconds'])
      for (const w of [null, '-3 seconds', '+8 seconds'])
        for (const detached of [false, true]) cases.push({ own, worker: w, detached });
    for (const c of cases) {
      const job = await addJob(t.db, { queue });
      const lease = await claimOne(t.db, queue, c.worker === null ? `nobody-${queue}` : worker);
      await run(
        t.db,
        sql`UPDATE leasehold.jobs SET lease_until = now() + ${c.own}::interval WHERE id = ${job.id}::uuid`,
      );
      if (c.worker !== null)
        await run(
          t.db,
          sql`UPDATE leasehold.worker_leases SET lease_until = now() + ${c.worker}::interval WHERE worker_id = ${worker}`,
        );
      if (c.detached)
        await run(t.db, sql`UPDATE leasehold.leases SET detached = true WHERE token = ${lease.leaseToken}::uuid`);
      const [row] = await run<{ effective_held: boolean; guard_held: boolean }>(
        t.db,
        sql`SELECT leasehold.effective_lease_until(j.lease_until, j.lease_token, j.queue) > statement_timestamp() AS effective_held,
                   (${leaseHeldSql('j', 'j.lease_token')}) AS guard_held
            FROM leasehold.jobs j WHERE j.id = ${job.id}::uuid`,
      );
      const expected = c.own.startsWith('+') || (c.worker?.startsWith('+') === true && !c.detached);
      expect({ ...c, ...row }).toEqual({ ...c, effective_held: expected, guard_held: expected });
    }
  });
});
