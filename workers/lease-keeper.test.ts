import { describe, expect, it } from 'vitest';
import { cancelIfUnchanged } from '../db/queue/index.ts';
import { claimedAttempts, idleHandler, silentLogger } from '../test/attempts.ts';
import { useTestDatabase, type WatchedStatement, watchedExecutor } from '../test/db.ts';
import { getJob } from '../test/factories.ts';
import { until } from '../test/wait.ts';
import { type Attempt, AttemptAborted } from './attempt.ts';
import { HandlerRegistry } from './handler.ts';
import { LeaseKeeper } from './lease-keeper.ts';

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
    registry: new HandlerRegistry([slow, quick]),
    logger: silentLogger,
  });
  return { keeper: k, statements };
}

describe('the lease keeper', () => {
  it('renews every running lease in one statement and moves each local deadline', async () => {
    const attempts = await running(4, 30);
    const before = [...attempts].map((a) => ({ until: a.job.leaseUntil.getTime(), deadline: a.leaseDeadline }));
    const { keeper: k, statements } = keeper(attempts, 60);
    await new Promise((r) => setTimeout(r, 20));
    await k.heartbeatAll();
    expect(statements).toHaveLength(1);
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

  it('sends no heartbeat for attempts already stopped', async () => {
    const attempts = await running(1, 30);
    for (const a of attempts) a.stop(new AttemptAborted('timeout', 'done with it'));
    const { keeper: k, statements } = keeper(attempts, 30);
    await k.heartbeatAll();
    expect(statements).toEqual([]);
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
    expect(statements).toHaveLength(1);
    expect((await getJob(t.db, wedged.job.id)).leaseUntil?.getTime()).toBe(before);
    expect((await getJob(t.db, inTime.job.id)).leaseUntil!.getTime()).toBeGreaterThan(before + 25_000);
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
