import { beforeEach, describe, expect, it } from 'vitest';
import { cancelIfUnchanged } from '../db/queue/index.ts';
import { claimedAttempts, idleHandler, silentLogger } from '../test/attempts.ts';
import { useTestDatabase, type WatchedStatement, watchedExecutor } from '../test/db.ts';
import { getJob } from '../test/factories.ts';
import { until } from '../test/wait.ts';
import { type Attempt, AttemptAborted } from './attempt.ts';
import { HandlerRegistry } from './handler.ts';
import { HeartbeatTimeout, LeaseKeeper } from './lease-keeper.ts';

const t = useTestDatabase();

const slow = idleHandler('slow', 400);
const quick = idleHandler('quick', 120);

const running = async (count: number, leaseSeconds: number) =>
  new Set(await claimedAttempts(t.db, count, { handler: slow, leaseSeconds }));

function keeper(attempts: Set<Attempt>, leaseSeconds: number, fail?: (s: WatchedStatement) => boolean) {
  const statements: WatchedStatement[] = [];
  const db = watchedExecutor(t.pool, async (statement, run) => {
    statements.push(statement);
    if (fail?.(statement)) throw Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' });
    return run();
  });
  const k = new LeaseKeeper(leaseSeconds, attempts, {
    db,
    workerId: 'service-test',
    registry: new HandlerRegistry([slow, quick]),
    logger: silentLogger,
  });
  return { keeper: k, statements };
}

/** The worker lease of 'service-test' as the database has it (null: none). */
async function workerLease() {
  const { rows } = await t.pool.query<{ since: Date; lease_until: Date }>(
    `SELECT since, lease_until FROM leasehold.worker_leases WHERE worker_id = 'service-test'`,
  );
  return rows[0] ?? null;
}

// Each test starts with no worker lease: claims made before the keeper's first heartbeat are
// renewed per job (the path every attempt took before worker leases), unless a test starts one.
beforeEach(async () => {
  await t.pool.query('DELETE FROM leasehold.worker_leases');
});

describe('the lease keeper', () => {
  it('renews the worker lease in one write and no job row for claims made since it started', async () => {
    const { keeper: k, statements } = keeper(new Set(), 30);
    await k.heartbeatAll(); // the worker lease starts (a worker's start does this before claiming)
    const started = await workerLease();
    expect(started).not.toBeNull();
    const attempts = await running(4, 30);
    const jobsBefore = await Promise.all([...attempts].map((a) => getJob(t.db, a.job.id)));
    const deadlines = [...attempts].map((a) => a.leaseDeadline);
    const { keeper: k2, statements: beat } = keeper(attempts, 60);
    await new Promise((r) => setTimeout(r, 20));
    await k2.heartbeatAll();
    expect(statements).toHaveLength(1);
    expect(beat).toHaveLength(1); // the worker lease alone: no per-job statement
    const renewed = await workerLease();
    expect(renewed!.since.getTime()).toBe(started!.since.getTime()); // the same lease, renewed
    expect(renewed!.lease_until.getTime()).toBeGreaterThan(started!.lease_until.getTime() + 25_000); // 30 s → 60 s
    [...attempts].forEach((a, i) => {
      expect(a.stopped).toBeNull();
      expect(a.leaseDeadline).toBeGreaterThan(deadlines[i]!);
    });
    for (const [i, a] of [...attempts].entries()) {
      const job = await getJob(t.db, a.job.id);
      expect(job.leaseUntil?.getTime()).toBe(jobsBefore[i]!.leaseUntil?.getTime()); // no job row written
      expect(job.updatedAt.getTime()).toBe(jobsBefore[i]!.updatedAt.getTime());
    }
  });

  it('renews per job the attempts claimed before the worker lease started, and moves each local deadline', async () => {
    const attempts = await running(4, 30);
    const before = [...attempts].map((a) => ({ until: a.job.leaseUntil.getTime(), deadline: a.leaseDeadline }));
    const { keeper: k, statements } = keeper(attempts, 60);
    await new Promise((r) => setTimeout(r, 20));
    await k.heartbeatAll();
    expect(statements).toHaveLength(2); // the worker lease, then these four per job
    [...attempts].forEach((a, i) => {
      expect(a.stopped).toBeNull();
      expect(a.job.leaseUntil.getTime()).toBeGreaterThan(before[i]!.until + 25_000); // 30 s → 60 s
      expect(a.leaseDeadline).toBeGreaterThan(before[i]!.deadline);
    });
    for (const a of attempts) {
      expect((await getJob(t.db, a.job.id)).leaseUntil?.getTime()).toBe(a.job.leaseUntil.getTime());
    }
  });

  it('stops an attempt whose heartbeat was refused (operator cancel) with lease_lost, and only that one', async () => {
    const attempts = await running(2, 30);
    const [cancelled, kept] = [...attempts] as [Attempt, Attempt];
    await cancelIfUnchanged(t.db, { id: cancelled.job.id, leaseToken: cancelled.job.leaseToken, actor: 'test' });
    await keeper(attempts, 30).keeper.heartbeatAll();
    expect(cancelled.stopped).toBeInstanceOf(AttemptAborted);
    expect(cancelled.stopped?.reason).toBe('lease_lost');
    expect(cancelled.signal.aborted).toBe(true);
    expect(kept.stopped).toBeNull();
  });

  it('when heartbeats fail, stops only the attempts whose lease has surely ended', async () => {
    const attempts = await running(2, 30);
    const [overdue, fine] = [...attempts] as [Attempt, Attempt];
    overdue.leaseDeadline = performance.now() - 1;
    const { keeper: k, statements } = keeper(attempts, 30, () => true);
    await k.heartbeatAll();
    expect(statements).toHaveLength(1);
    expect(overdue.stopped?.reason).toBe('lease_lost');
    expect(overdue.stopped?.message).toBe('no heartbeat got through before the lease ended');
    expect(fine.stopped).toBeNull();
  });

  it('renews no lease of an attempt already stopped: only the worker lease is renewed', async () => {
    const attempts = await running(1, 30);
    const [stopped] = [...attempts] as [Attempt];
    stopped.stop(new AttemptAborted('timeout', 'done with it'));
    const before = (await getJob(t.db, stopped.job.id)).leaseUntil?.getTime();
    const { keeper: k, statements } = keeper(attempts, 60);
    await k.heartbeatAll();
    expect(statements).toHaveLength(1); // the worker lease, naming no attempt
    expect(await workerLease()).not.toBeNull();
    expect((await getJob(t.db, stopped.job.id)).leaseUntil?.getTime()).toBe(before);
  });

  it('renews no lease of a handler past its timeout that the sweep has not stopped yet (a wedged main thread)', async () => {
    const attempts = await running(2, 30);
    const [wedged, inTime] = [...attempts] as [Attempt, Attempt];
    // A busy loop held the thread past the timeout: the heartbeat's timer may fire before the sweep's.
    wedged.timeoutAt = performance.now() - 1;
    inTime.timeoutAt = performance.now() + 60_000;
    const before = wedged.job.leaseUntil.getTime();
    const { keeper: k, statements } = keeper(attempts, 60);
    await k.heartbeatAll();
    expect(statements).toHaveLength(2); // the worker lease, then the one in time per job
    expect((await getJob(t.db, wedged.job.id)).leaseUntil?.getTime()).toBe(before);
    expect((await getJob(t.db, inTime.job.id)).leaseUntil!.getTime()).toBeGreaterThan(before + 25_000);
  });

  it('keeps renewing a finished attempt waiting for its acknowledgement past its local deadline', async () => {
    const attempts = await running(2, 30);
    const [finished, runningOn] = [...attempts] as [Attempt, Attempt];
    // Both handlers' local deadlines passed (a starved event loop); one handler is over.
    for (const a of attempts) a.leaseDeadline = performance.now() - 1;
    finished.endedAt = Date.now();
    const { keeper: k } = keeper(attempts, 60);
    k.sweepTimeouts();
    expect(finished.stopped).toBeNull(); // nothing of it runs: the settlement decides
    expect(runningOn.stopped?.reason).toBe('lease_lost'); // a running handler stops at its deadline
    const before = (await getJob(t.db, finished.job.id)).leaseUntil!.getTime();
    await k.heartbeatAll();
    expect((await getJob(t.db, finished.job.id)).leaseUntil!.getTime()).toBeGreaterThan(before + 25_000);
    expect(finished.leaseDeadline).toBeGreaterThan(performance.now() + 50_000);
    // Stopped or not, a finished attempt is renewed while the database says its lease holds.
    finished.stop(new AttemptAborted('lease_lost', 'late local deadline'));
    const renewed = finished.leaseDeadline;
    await new Promise((r) => setTimeout(r, 10));
    await k.heartbeatAll();
    expect(finished.leaseDeadline).toBeGreaterThan(renewed);
  });

  it('stops a handler past its timeout with timeout, and leaves one within it alone', async () => {
    const attempts = await running(2, 30);
    const [late, inTime] = [...attempts] as [Attempt, Attempt];
    late.timeoutAt = performance.now() - 1;
    inTime.timeoutAt = performance.now() + 60_000;
    keeper(attempts, 30).keeper.sweepTimeouts();
    expect(late.stopped?.reason).toBe('timeout');
    expect(late.stopped?.message).toBe('slow did not finish within 400 ms');
    expect(inTime.stopped).toBeNull();
  });

  it('sweeps at a tenth of the shortest handler timeout, within 5 to 100 ms', async () => {
    const none = new Set<Attempt>();
    expect(keeper(none, 30).keeper.timeoutSweepMs()).toBe(12); // quick: 120 ms
  });

  it('beats on its own at a third of the lease until stopped', async () => {
    const attempts = await running(1, 2);
    const [attempt] = [...attempts] as [Attempt];
    const first = attempt.job.leaseUntil.getTime();
    const { keeper: k, statements } = keeper(attempts, 2);
    k.start();
    await until('a heartbeat renewed the lease', async () => attempt.job.leaseUntil.getTime() > first);
    await k.stop();
    const sent = statements.length;
    expect(sent).toBeGreaterThanOrEqual(1);
    await new Promise((r) => setTimeout(r, 900)); // more than a beat (667 ms): none after stop
    expect(statements).toHaveLength(sent);
  });
});

describe('the lease keeper when the database does not answer (security review B2)', () => {
  /** `promise`, or a rejection once `ms` passed. */
  function within<T>(ms: number, promise: Promise<T>): Promise<T> {
    return Promise.race([
      promise,
      new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`still waiting after ${ms} ms`)), ms)),
    ]);
  }

  /** A keeper whose heartbeat statements are sent nowhere and never answered (a half-open connection). */
  function blackHoled(attempts: Set<Attempt>, leaseSeconds: number) {
    const statements: WatchedStatement[] = [];
    const db = watchedExecutor(t.pool, (statement) => {
      statements.push(statement);
      return new Promise(() => {});
    });
    const warnings: unknown[] = [];
    const logger = Object.create(silentLogger, { warn: { value: (o: unknown) => warnings.push(o) } });
    const k = new LeaseKeeper(leaseSeconds, attempts, {
      db,
      workerId: 'service-test',
      registry: new HandlerRegistry([slow, quick]),
      logger,
    });
    return { keeper: k, statements, warnings };
  }

  it('renews the other leases at once while another session holds one job row FOR UPDATE', async () => {
    const attempts = await running(3, 30);
    const [locked, ...others] = [...attempts] as [Attempt, Attempt, Attempt];
    const before = others.map((a) => a.job.leaseUntil.getTime());
    const other = await t.pool.connect();
    try {
      await other.query('BEGIN');
      await other.query('SELECT id FROM leasehold.jobs WHERE id = $1 FOR UPDATE', [locked.job.id]);
      const started = performance.now();
      await within(2000, keeper(attempts, 60).keeper.heartbeatAll());
      expect(performance.now() - started).toBeLessThan(2000);
    } finally {
      await other.query('ROLLBACK');
      other.release();
    }
    others.forEach((a, i) => {
      expect(a.job.leaseUntil.getTime()).toBeGreaterThan(before[i]! + 25_000); // 30 s → 60 s
      expect(a.stopped).toBeNull();
    });
    // Not renewed this round, but not lost either: the handler goes on.
    expect(locked.stopped).toBeNull();
    expect((await getJob(t.db, locked.job.id)).leaseUntil?.getTime()).toBe(locked.job.leaseUntil.getTime());
  });

  it('ends a heartbeat round on a black-holed connection at its deadline', async () => {
    const attempts = await running(2, 6);
    const { keeper: k, statements, warnings } = blackHoled(attempts, 6);
    const round = 1000; // a round's deadline: half the 2 s beat of a 6 s lease
    const started = performance.now();
    await within(round + 1500, k.heartbeatAll());
    const took = performance.now() - started;
    expect(statements).toHaveLength(1);
    expect(took).toBeGreaterThanOrEqual(round - 5);
    expect(warnings).toHaveLength(1);
    expect((warnings[0] as { err: unknown }).err).toBeInstanceOf(HeartbeatTimeout);
    for (const a of attempts) expect(a.stopped).toBeNull(); // their leases have not ended yet
  });

  it('stops handlers at their lease deadline by its own timer while a heartbeat hangs', async () => {
    const attempts = await running(2, 30);
    const [due, later] = [...attempts] as [Attempt, Attempt];
    const { keeper: k, statements } = blackHoled(attempts, 30);
    const fired: unknown[] = [];
    due.signal.addEventListener('abort', () => fired.push(due.signal.reason));
    k.start();
    try {
      // The lease keeper's first beat is 10 s away and would hang: only the sweep can stop it.
      due.leaseDeadline = performance.now() + 300;
      await until('the handler whose lease ended was stopped', async () => due.stopped !== null, 3000);
      expect(due.stopped?.reason).toBe('lease_lost');
      expect(due.stopped?.message).toBe('no heartbeat got through before the lease ended');
      expect(fired).toEqual([due.stopped]);
      expect(performance.now()).toBeGreaterThanOrEqual(due.leaseDeadline);
      expect(later.stopped).toBeNull();
      expect(statements).toHaveLength(0);
    } finally {
      await within(15_000, k.stop());
    }
  });
});
