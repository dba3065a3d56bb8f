import { afterEach, describe, expect, it, vi } from 'vitest';
import { cancelIfUnchanged } from '../db/queue/index.ts';
import { claimedAttempts, idleHandler, silentLogger } from '../test/attempts.ts';
import { useTestDatabase, type WatchedStatement, watchedExecutor } from '../test/db.ts';
import { attemptsOf, getJob } from '../test/factories.ts';
import { Attempt } from './attempt.ts';
import { Completer } from './completer.ts';
import { createMetrics } from './metrics.ts';

const t = useTestDatabase();

const noop = idleHandler('noop');

/** A completer whose statements are recorded; `fail(statement)` may throw instead of running one. */
function completer(
  options: {
    ackFlushMs?: number;
    fail?: (s: WatchedStatement) => Error | undefined;
    inFlight?: () => number;
    leaseSeconds?: number;
  } = {},
) {
  const statements: WatchedStatement[] = [];
  const metrics = createMetrics();
  const db = watchedExecutor(t.pool, async (statement, run) => {
    statements.push(statement);
    const error = options.fail?.(statement);
    if (error) throw error;
    return run();
  });
  const c = new Completer(
    {
      workerId: 'completer-test',
      ackFlushMs: options.ackFlushMs ?? 5,
      retry: { baseDelayMs: 60_000 },
      // No grace past the local deadline unless a test gives one.
      leaseSeconds: options.leaseSeconds ?? 0,
    },
    { db, logger: silentLogger, metrics, inFlight: options.inFlight },
  );
  return { completer: c, statements, metrics };
}

const claimAttempts = (count: number, leaseSeconds = 30) => claimedAttempts(t.db, count, { leaseSeconds });

const counted = async (counter: { get(): Promise<{ values: { value: number }[] }> }) =>
  (await counter.get()).values.reduce((sum, v) => sum + v.value, 0);

describe('the completer', () => {
  it('acknowledges the completions that arrive together in one statement', async () => {
    const attempts = await claimAttempts(12);
    const { completer: c, statements, metrics } = completer({ ackFlushMs: 20 });
    await Promise.all(attempts.map((a) => c.settle(a, { kind: 'completed' })));
    expect(statements.map((s) => s.name)).toEqual(['leasehold_complete_many']);
    for (const a of attempts) expect((await getJob(t.db, a.job.id)).state).toBe('done');
    expect(await counted(metrics.completed)).toBe(12);
  });

  it('acknowledges at once, without waiting for the flush timer, when every attempt in flight waits for it', async () => {
    const attempts = await claimAttempts(3);
    const inFlight = attempts.length;
    const { completer: c, statements } = completer({ ackFlushMs: 60_000, inFlight: () => inFlight });
    // Two of three finished: the third may still join them, so they wait (the timer is a minute).
    const first = attempts.slice(0, 2).map((a) => c.settle(a, { kind: 'completed' }));
    await new Promise((r) => setTimeout(r, 200));
    expect(statements).toEqual([]);
    // The last one finishes: nothing else is running, so the statement goes now.
    const started = performance.now();
    await Promise.all([...first, c.settle(attempts[2]!, { kind: 'completed' })]);
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(statements.map((s) => s.name)).toEqual(['leasehold_complete_many']);
    for (const a of attempts) expect((await getJob(t.db, a.job.id)).state).toBe('done');
  });

  it('keeps one acknowledgement in flight: completions that arrive meanwhile go together in the next', async () => {
    const attempts = await claimAttempts(5);
    const statements: WatchedStatement[] = [];
    let running = 0;
    let most = 0;
    let open = () => {};
    const gate = new Promise<void>((resolve) => (open = resolve));
    const db = watchedExecutor(t.pool, async (statement, run) => {
      statements.push(statement);
      running += 1;
      most = Math.max(most, running);
      try {
        if (statements.length === 1) await gate; // the first acknowledgement is slow
        return await run();
      } finally {
        running -= 1;
      }
    });
    // One attempt in flight as far as the completer knows: every completion asks for a flush.
    const c = new Completer(
      { workerId: 'completer-test', ackFlushMs: 60_000, retry: { baseDelayMs: 60_000 }, leaseSeconds: 0 },
      { db, logger: silentLogger, inFlight: () => 1 },
    );
    const first = c.settle(attempts[0]!, { kind: 'completed' });
    await vi.waitFor(() => expect(statements).toHaveLength(1));
    const rest = attempts.slice(1).map((a) => c.settle(a, { kind: 'completed' }));
    await new Promise((r) => setTimeout(r, 100));
    expect(statements).toHaveLength(1); // the other four wait for the first statement
    open();
    await Promise.all([first, ...rest]);
    expect(statements.map((s) => s.name)).toEqual(['leasehold_complete_many', 'leasehold_complete_many']);
    expect(most).toBe(1);
    for (const a of attempts) expect((await getJob(t.db, a.job.id)).state).toBe('done');
  });

  it('reports each lost lease in a batch and completes the others', async () => {
    const attempts = await claimAttempts(3);
    const [first, cancelled, last] = attempts as [Attempt, Attempt, Attempt];
    const { completer: c, metrics } = completer({ ackFlushMs: 60_000 });
    const settled = attempts.map((a) => c.settle(a, { kind: 'completed' }));
    const outcome = await cancelIfUnchanged(t.db, {
      id: cancelled.job.id,
      leaseToken: cancelled.job.leaseToken,
      actor: 'test',
    });
    expect(outcome.applied).toBe(true);
    await c.flush(); // the timer is a minute away: flush() must not wait for it
    await Promise.all(settled);
    expect((await getJob(t.db, first.job.id)).state).toBe('done');
    expect((await getJob(t.db, cancelled.job.id)).state).toBe('cancelled');
    expect((await getJob(t.db, last.job.id)).state).toBe('done');
    expect(await counted(metrics.completed)).toBe(2);
    expect(await counted(metrics.leasesLost)).toBe(1);
  });

  it('records a failure with its class and the retry policy, capped by the handler’s max attempts', async () => {
    const [retried, capped] = (await claimAttempts(2)) as [Attempt, Attempt];
    const { completer: c, metrics } = completer();
    await c.settle(retried, { kind: 'failed', failureClass: 'transient', message: 'provider 503' });
    const waiting = await getJob(t.db, retried.job.id);
    expect(waiting).toMatchObject({
      state: 'ready',
      attempts: 1,
      failureClass: 'transient',
      lastError: 'provider 503',
    });
    // baseDelayMs is a minute: the retry waits at least about that long.
    expect(waiting.runAt.getTime() - Date.now()).toBeGreaterThan(20_000);

    const oneAttempt = new Attempt(capped.job, { ...noop, maxAttempts: 1 }, capped.leaseDeadline, silentLogger);
    await c.settle(oneAttempt, { kind: 'failed', failureClass: 'transient', message: 'again' });
    expect(await getJob(t.db, capped.job.id)).toMatchObject({ state: 'dead', failureClass: 'transient' });
    expect((await attemptsOf(t.db, capped.job.id)).map((a) => a.failureClass)).toEqual(['transient']);
    expect(await counted(metrics.failed)).toBe(2);
  });

  it('releases a job stopped at shutdown for another worker at once', async () => {
    const [attempt] = (await claimAttempts(1)) as [Attempt];
    const { completer: c, metrics } = completer();
    await c.settle(attempt, { kind: 'released' });
    const job = await getJob(t.db, attempt.job.id);
    expect(job.state).toBe('ready');
    expect(job.runAt.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
    expect(await counted(metrics.released)).toBe(1);
  });

  it('settles nothing for an attempt that lost its lease', async () => {
    const [attempt] = (await claimAttempts(1)) as [Attempt];
    const { completer: c, statements, metrics } = completer();
    await c.settle(attempt, { kind: 'lost' });
    expect(statements).toEqual([]);
    expect((await getJob(t.db, attempt.job.id)).state).toBe('running');
    expect(await counted(metrics.leasesLost)).toBe(1);
  });

  it('retries a settlement after a connection failure, and gives up at the lease end', async () => {
    const [kept, expiring] = (await claimAttempts(2, 30)) as [Attempt, Attempt];
    let cuts = 0;
    const lost = () => Object.assign(new Error('Connection terminated unexpectedly'), { code: undefined });
    const flaky = completer({ fail: () => (cuts++ < 2 ? lost() : undefined) });
    await flaky.completer.settle(kept, { kind: 'failed', failureClass: 'transient', message: 'x' });
    expect(cuts).toBe(3); // two cut, the third ran
    expect((await getJob(t.db, kept.job.id)).state).toBe('ready');

    // A lease that ends in under the first backoff is not worth another try (the attempt's
    // local deadline, as the claim and the heartbeats set it).
    expiring.leaseDeadline = performance.now() + 50;
    const down = completer({ fail: lost });
    await down.completer.settle(expiring, { kind: 'completed' });
    expect(down.statements).toHaveLength(1);
    expect((await getJob(t.db, expiring.job.id)).state).toBe('running');
    expect(await counted(down.metrics.leasesLost)).toBe(1);
  });

  it('retries a finished job acknowledgement past its local deadline by up to one lease', async () => {
    const [attempt] = (await claimAttempts(1, 30)) as [Attempt];
    // The local deadline is a guess that runs early (a starved event loop): the database's
    // lease still holds, and the guarded acknowledgement may go until a lease past the guess.
    attempt.leaseDeadline = performance.now() + 50;
    let cuts = 0;
    const lost = () => Object.assign(new Error('Connection terminated unexpectedly'), { code: undefined });
    const blip = completer({ leaseSeconds: 30, fail: () => (cuts++ < 1 ? lost() : undefined) });
    await blip.completer.settle(attempt, { kind: 'completed' });
    expect(cuts).toBe(2); // one cut, then through after the local deadline had passed
    expect(performance.now()).toBeGreaterThan(attempt.leaseDeadline);
    expect((await getJob(t.db, attempt.job.id)).state).toBe('done');
  });

  it('hands back claimed jobs that never started', async () => {
    const attempts = await claimAttempts(2);
    const { completer: c } = completer();
    await c.releaseUnstarted(attempts.map((a) => a.job));
    for (const a of attempts) expect((await getJob(t.db, a.job.id)).state).toBe('ready');
  });
});

describe('the completer and the clocks (security review B7)', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  const lost = () => Object.assign(new Error('Connection terminated unexpectedly'), { code: undefined });

  it('retries an acknowledgement after a blip when the worker clock runs 30 s ahead', async () => {
    const [attempt] = (await claimAttempts(1, 30)) as [Attempt];
    // The worker's wall clock is 31 s ahead of the database's: the 30 s lease's lease_until
    // looks past by that clock, though a full lease is left.
    const realNow = Date.now.bind(Date);
    vi.spyOn(Date, 'now').mockImplementation(() => realNow() + 31_000);
    let cuts = 0;
    const blip = completer({ fail: (s) => (s.name === 'leasehold_complete_many' && cuts++ < 1 ? lost() : undefined) });
    await blip.completer.settle(attempt, { kind: 'completed' });
    expect(cuts).toBe(2); // one cut, then the retry ran
    expect(blip.statements.map((s) => s.name)).toEqual(['leasehold_complete_many', 'leasehold_complete_many']);
    expect((await getJob(t.db, attempt.job.id)).state).toBe('done');
    expect(await counted(blip.metrics.completed)).toBe(1);
  });

  it('retries a failure after a blip when the worker clock runs 30 s ahead', async () => {
    const [attempt] = (await claimAttempts(1, 30)) as [Attempt];
    const realNow = Date.now.bind(Date);
    vi.spyOn(Date, 'now').mockImplementation(() => realNow() + 31_000);
    let cuts = 0;
    const blip = completer({ fail: () => (cuts++ < 1 ? lost() : undefined) });
    await blip.completer.settle(attempt, { kind: 'failed', failureClass: 'transient', message: 'x' });
    expect(cuts).toBe(2);
    expect((await getJob(t.db, attempt.job.id)).state).toBe('ready');
  });

  it('keeps retrying an acknowledgement while heartbeats extend the lease during the outage', async () => {
    const [attempt] = (await claimAttempts(1, 30)) as [Attempt];
    // The lease (by both clocks) ends in 300 ms, and the database is away for a second ...
    attempt.job.leaseUntil = new Date(Date.now() + 300);
    attempt.leaseDeadline = performance.now() + 300;
    const downUntil = performance.now() + 1000;
    const outage = completer({ fail: () => (performance.now() < downUntil ? lost() : undefined) });
    // ... but 50 ms in, a heartbeat (on another connection) renews it for 30 s, as the lease
    // keeper does for attempts waiting for their acknowledgement.
    setTimeout(() => {
      attempt.job.leaseUntil = new Date(Date.now() + 30_000);
      attempt.leaseDeadline = performance.now() + 29_000;
    }, 50);
    await outage.completer.settle(attempt, { kind: 'completed' });
    expect(outage.statements.length).toBeGreaterThan(2);
    expect((await getJob(t.db, attempt.job.id)).state).toBe('done');
    expect(await counted(outage.metrics.completed)).toBe(1);
  });

  it('retries a batch of acknowledgements after a blip though one of them is near its lease end', async () => {
    const [near, kept] = (await claimAttempts(2, 30)) as [Attempt, Attempt];
    // One attempt of the batch reached the completer with its local deadline all but gone (the
    // sweep stopped it, or its row was locked for a few beats); the other has its whole lease.
    near.leaseDeadline = performance.now() + 20;
    let cuts = 0;
    const lost = () => Object.assign(new Error('Connection terminated unexpectedly'), { code: undefined });
    const blip = completer({
      ackFlushMs: 60_000,
      fail: (s) => (s.name === 'leasehold_complete_many' && cuts++ < 1 ? lost() : undefined),
    });
    const settled = [near, kept].map((a) => blip.completer.settle(a, { kind: 'completed' }));
    await blip.completer.flush();
    await Promise.all(settled);
    // One statement cut, then the retry ran for the batch: the kept attempt is done.
    expect(blip.statements.map((s) => s.name)).toEqual(['leasehold_complete_many', 'leasehold_complete_many']);
    expect((await getJob(t.db, kept.job.id)).state).toBe('done');
  });
});
