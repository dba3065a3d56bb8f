import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { defineJob, type ClaimedJob, type Executor, type StandardSchemaV1 } from '../db/queue/index.ts';
import { silentLogger } from '../test/attempts.ts';
import { Attempt, AttemptAborted, type AttemptResult, execute, leaseDeadlineFrom } from './attempt.ts';
import { PermanentError, RateLimitedError, TransientError } from './errors.ts';
import { defineHandler, type Handler, HandlerRegistry, type HandlerContext } from './handler.ts';

// One execution needs no database unless the handler heartbeats or records a receipt (those
// run against a real database in worker.test.ts); here any use of it fails the test.
const noDatabase = new Proxy({} as Executor, {
  get(_target, key) {
    throw new Error(`these tests use no database (read ${String(key)})`);
  },
});

let ids = 0;
function claimed(overrides: Partial<ClaimedJob> = {}): ClaimedJob {
  const now = new Date();
  ids += 1;
  return {
    id: `00000000-0000-7000-8000-${String(ids).padStart(12, '0')}`,
    queue: 'attempts',
    kind: 'echo',
    kindVersion: 1,
    payload: { n: 1 },
    idempotencyKey: null,
    state: 'running',
    priority: 0,
    runAt: now,
    attempts: 1,
    attempt: 1,
    maxAttempts: 10,
    leaseToken: 'token',
    leaseUntil: new Date(now.getTime() + 30_000),
    workerId: 'w',
    failureClass: null,
    lastError: null,
    traceId: null,
    expiresAt: null,
    createdAt: now,
    startedAt: now,
    finishedAt: null,
    updatedAt: now,
    ...overrides,
  } as ClaimedJob;
}

function handler(handle: (context: HandlerContext<{ n: number }>) => Promise<unknown>, timeoutMs = 5000): Handler {
  return defineHandler({ kind: 'echo', versions: [1, 2], schema: z.object({ n: z.number() }), timeoutMs, handle });
}

function attemptOf(job: ClaimedJob, h: Handler | undefined): Attempt {
  return new Attempt(job, h, leaseDeadlineFrom(performance.now(), 30), silentLogger);
}

function run(entry: Attempt, h?: Handler): Promise<AttemptResult> {
  return execute(entry, { db: noDatabase, registry: new HandlerRegistry(h ? [h] : []), leaseSeconds: 30 });
}

describe('one attempt', () => {
  it('completes with the validated payload, the attempt number and the delivery key', async () => {
    const seen: unknown[] = [];
    const h = handler(async ({ payload, attempt, deliveryKey }) => {
      seen.push(payload, attempt, deliveryKey);
    });
    const job = claimed({ attempt: 3 });
    expect(await run(attemptOf(job, h), h)).toEqual({ kind: 'completed' });
    expect(seen).toEqual([{ n: 1 }, 3, `echo:${job.id}`]);

    const keyed = claimed({ idempotencyKey: 'receipt:42' });
    await run(attemptOf(keyed, h), h);
    expect(seen.at(-1)).toBe('receipt:42');
  });

  it('fails as permanent, without running any handler, for an unknown kind, version or payload', async () => {
    let calls = 0;
    const h = handler(async () => {
      calls += 1;
    });
    const unknown = await run(attemptOf(claimed({ kind: 'nope' }), undefined), h);
    expect(unknown).toMatchObject({ kind: 'failed', failureClass: 'permanent' });
    expect(unknown.kind === 'failed' && unknown.message).toContain('unknown kind "nope": this worker runs echo');

    const version = await run(attemptOf(claimed({ kindVersion: 3 }), h), h);
    expect(version).toMatchObject({ kind: 'failed', failureClass: 'permanent' });
    expect(version.kind === 'failed' && version.message).toContain('version 3 is not supported');

    const payload = await run(attemptOf(claimed({ payload: { n: 'one' } }), h), h);
    expect(payload).toMatchObject({ kind: 'failed', failureClass: 'permanent' });
    expect(payload.kind === 'failed' && payload.message).toContain('invalid payload for echo v1');
    expect(calls).toBe(0);
  });

  it('classifies what a handler throws', async () => {
    const outcomeOf = (error: unknown) =>
      run(
        attemptOf(
          claimed(),
          handler(async () => {
            throw error;
          }),
        ),
        handler(async () => {}),
      );
    expect(await outcomeOf(new TransientError('503'))).toMatchObject({ failureClass: 'transient' });
    expect(await outcomeOf(new PermanentError('no such user'))).toMatchObject({ failureClass: 'permanent' });
    expect(await outcomeOf(new RateLimitedError('slow down', { retryAfterMs: 7000 }))).toEqual({
      kind: 'failed',
      failureClass: 'rate_limited',
      message: 'RateLimitedError: slow down',
      retryAfterMs: 7000,
      // Its stack's frames, without the message line; no cause.
      detail: { stack: expect.stringMatching(/^\s+at .*attempt\.test\.ts:\d+/), causes: [], truncated: false },
    });
    expect(await outcomeOf(new Error('boom'))).toMatchObject({ failureClass: 'transient', message: 'Error: boom' });
    expect(await outcomeOf('a string')).toMatchObject({ failureClass: 'transient', message: 'thrown: a string' });
  });

  it('takes a handler that returns a plain value or throws before returning a promise', async () => {
    const plain = { ...handler(async () => {}), handle: () => 'done' as unknown as Promise<unknown> };
    // What it returned comes with the completion: the job's result (docs/jobs.md).
    expect(await run(attemptOf(claimed(), plain), plain)).toEqual({ kind: 'completed', value: 'done' });
    const sync: Handler = {
      ...handler(async () => {}),
      handle: () => {
        throw new PermanentError('thrown at once');
      },
    };
    expect(await run(attemptOf(claimed(), sync), sync)).toMatchObject({ failureClass: 'permanent' });
  });

  it('ends the wait on a handler that ignores its signal as soon as it is stopped', async () => {
    const never = handler(() => new Promise(() => {}));
    const outcomes = (['timeout', 'shutdown', 'lease_lost'] as const).map((reason) => {
      const entry = attemptOf(claimed(), never);
      const outcome = run(entry, never);
      setTimeout(() => entry.stop(new AttemptAborted(reason, `stopped: ${reason}`)), 20);
      return outcome;
    });
    expect(await Promise.all(outcomes)).toEqual([
      { kind: 'failed', failureClass: 'timeout', message: 'stopped: timeout' },
      { kind: 'released' },
      { kind: 'lost' },
    ]);
  });

  it('aborts the signal with the first stop reason only, and never completes once stopped', async () => {
    let signal: AbortSignal | undefined;
    let finish: () => void = () => {};
    const h = handler(
      (context) =>
        new Promise<void>((resolve) => {
          signal = context.signal;
          finish = resolve;
        }),
    );
    const entry = attemptOf(claimed(), h);
    const outcome = run(entry, h);
    await new Promise((r) => setTimeout(r, 10));
    entry.stop(new AttemptAborted('lease_lost', 'first'));
    entry.stop(new AttemptAborted('timeout', 'second'));
    finish(); // the handler returns after all
    expect(await outcome).toEqual({ kind: 'lost' });
    if (!signal) throw new Error('the handler never ran');
    expect(signal.aborted).toBe(true);
    expect((signal.reason as AttemptAborted).message).toBe('first');
    // A signal read only after the stop is aborted already, with the same reason.
    expect(entry.signal.aborted).toBe(true);
    expect(entry.signal.reason).toBe(signal.reason);
  });

  it('marks the attempt as no longer subject to its timeout once the handler returned', async () => {
    const h = handler(async () => {}, 50);
    const entry = attemptOf(claimed(), h);
    const before = performance.now();
    const outcome = run(entry, h);
    expect(entry.timeoutAt).toBeGreaterThanOrEqual(before + 50);
    await outcome;
    expect(entry.timeoutAt).toBe(Number.POSITIVE_INFINITY);
    expect(entry.endedAt).toBeGreaterThanOrEqual(entry.startedAt);
  });
});

describe("an attempt's payload check (the handler's Standard Schema)", () => {
  const echoJob = defineJob({
    kind: 'echo',
    version: 1,
    schema: z.object({ at: z.iso.datetime().transform((s) => new Date(s)), n: z.int().default(7) }),
  });

  it("hands a contract's handler the schema's output of the stored payload", async () => {
    const seen: unknown[] = [];
    const h = defineHandler(echoJob, async ({ payload }) => {
      seen.push(payload);
    });
    const job = claimed({ payload: { at: '2026-01-02T03:04:05Z' } });
    expect(await run(attemptOf(job, h), h)).toEqual({ kind: 'completed' });
    expect(seen).toEqual([{ at: new Date('2026-01-02T03:04:05Z'), n: 7 }]);
  });

  it('fails a stored payload the schema refuses as permanent, naming the field, without running the handler', async () => {
    let calls = 0;
    const h = defineHandler(echoJob, async () => {
      calls += 1;
    });
    const entry = attemptOf(claimed({ payload: { at: 'yesterday', n: 2 } }), h);
    const outcome = await run(entry, h);
    expect(outcome).toMatchObject({ kind: 'failed', failureClass: 'permanent' });
    expect(outcome.kind === 'failed' && outcome.message).toMatch(/^invalid payload for echo v1: payload\.at: /);
    expect(calls).toBe(0);
    expect(entry.timeoutAt).toBe(Number.POSITIVE_INFINITY);
  });

  /** A hand-written async schema: positive numbers only, decided after `delayMs`, or never. */
  function asyncSchema(delayMs: number | null): StandardSchemaV1<number> {
    return {
      '~standard': {
        version: 1,
        vendor: 'test',
        validate: (value) =>
          new Promise((resolve) => {
            if (delayMs === null) return; // never decides
            setTimeout(
              () =>
                resolve(
                  typeof value === 'number' && value > 0
                    ? { value }
                    : { issues: [{ message: 'expected a positive number', path: [] }] },
                ),
              delayMs,
            );
          }),
      },
    };
  }

  it('waits for an async schema, and fails the payload it refuses as permanent', async () => {
    const seen: number[] = [];
    const h = defineHandler(defineJob({ kind: 'echo', version: 1, schema: asyncSchema(5) }), async ({ payload }) => {
      seen.push(payload);
    });
    expect(await run(attemptOf(claimed({ payload: 3 }), h), h)).toEqual({ kind: 'completed' });
    expect(seen).toEqual([3]);
    expect(await run(attemptOf(claimed({ payload: -1 }), h), h)).toEqual({
      kind: 'failed',
      failureClass: 'permanent',
      message: 'invalid payload for echo v1: payload: expected a positive number',
    });
  });

  it('stops an async schema that never decides like a handler that never returns', async () => {
    let calls = 0;
    const h = defineHandler(
      defineJob({ kind: 'echo', version: 1, schema: asyncSchema(null) }),
      async () => {
        calls += 1;
      },
      { timeoutMs: 50 },
    );
    const entry = attemptOf(claimed({ payload: 1 }), h);
    const outcome = run(entry, h);
    expect(entry.timeoutAt).toBeLessThan(Number.POSITIVE_INFINITY); // the sweep would find it
    setTimeout(() => entry.stop(new AttemptAborted('timeout', 'stopped: timeout')), 20);
    expect(await outcome).toEqual({ kind: 'failed', failureClass: 'timeout', message: 'stopped: timeout' });
    expect(calls).toBe(0);
  });

  it('classifies a schema that throws as the handler failing, without running the handler', async () => {
    let calls = 0;
    const throwing: StandardSchemaV1<unknown> = {
      '~standard': {
        version: 1,
        vendor: 'test',
        validate: () => {
          throw new Error('lookup service down');
        },
      },
    };
    const h = defineHandler(defineJob({ kind: 'echo', version: 1, schema: throwing }), async () => {
      calls += 1;
    });
    expect(await run(attemptOf(claimed(), h), h)).toEqual({
      kind: 'failed',
      failureClass: 'transient',
      message: 'Error: lookup service down',
      detail: { stack: expect.stringMatching(/^\s+at .*attempt\.test\.ts:\d+/), causes: [], truncated: false },
    });
    expect(calls).toBe(0);
  });

  it('a stopped attempt renews no lease and claims no receipt key, though its handler goes on', async () => {
    let heartbeatError: unknown;
    let receiptError: unknown;
    let effectRan = false;
    let finished!: () => void;
    const over = new Promise<void>((resolve) => (finished = resolve));
    const deaf = handler(async (context) => {
      await new Promise((resolve) => setTimeout(resolve, 150)); // past its stop; the signal ignored
      heartbeatError = await context.heartbeat().then(
        () => null,
        (error: unknown) => error,
      );
      receiptError = await context
        .receipt(async () => {
          effectRan = true;
        })
        .then(
          () => null,
          (error: unknown) => error,
        );
      finished();
    }, 50);
    const entry = attemptOf(claimed(), deaf);
    const result = run(entry, deaf);
    await new Promise((resolve) => setTimeout(resolve, 60));
    entry.stop(new AttemptAborted('timeout', 'echo did not finish within 50 ms'));
    expect(await result).toMatchObject({ kind: 'failed', failureClass: 'timeout' });
    await over;
    // Neither reached the database (it would have thrown "these tests use no database").
    expect(heartbeatError).toBeInstanceOf(AttemptAborted);
    expect((heartbeatError as AttemptAborted).reason).toBe('timeout');
    expect(receiptError).toBeInstanceOf(AttemptAborted);
    expect(effectRan).toBe(false);
  });
});
