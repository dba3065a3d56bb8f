/**
 * runJob and drainQueue run jobs in the test's process through the worker's own execution and
 * settlement: a completion is `done`, a retryable failure leaves the job `ready` with its
 * backoff ahead, a permanent one `dead`, a timeout is the handler's, and a settlement after an
 * operator's cancel changes nothing.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { LeaseholdInputError } from '../db/queue/errors.ts';
import { cancelIfUnchanged, enqueue, type ClaimedJob } from '../db/queue/index.ts';
import { PermanentError, TransientError } from '../workers/errors.ts';
import type { Handler, HandlerContext } from '../workers/handler.ts';
import { createTestDatabase, type TestDatabase } from './database.ts';
import { drainQueue, JobNotRunnable, runJob } from './run.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase({ connectionString: inject('serverUrl') });
});
afterAll(() => t?.drop());

let count = 0;
const unique = (name: string) => `${name}-${++count}`;

function handler(kind: string, handle: Handler['handle'], extra: Partial<Handler> = {}): Handler {
  return { kind, versions: [1], schema: z.unknown(), timeoutMs: 5000, handle, ...extra };
}

async function attemptRows(id: string) {
  const { rows } = await t.pool.query<{ attempt: number; outcome: string; failure_class: string | null }>(
    'SELECT attempt, outcome, failure_class FROM leasehold.job_attempts WHERE job_id = $1 ORDER BY attempt',
    [id],
  );
  return rows;
}

describe('runJob', () => {
  it('runs the named job with its validated payload, fence and delivery key, and completes it', async () => {
    const kind = unique('receipt.send');
    const seen: Array<Pick<HandlerContext<unknown>, 'payload' | 'attempt' | 'deliveryKey'>> = [];
    const handlers = [
      handler(kind, async ({ payload, attempt, deliveryKey }) => void seen.push({ payload, attempt, deliveryKey }), {
        schema: z.object({ orderId: z.number() }),
      }),
    ];
    // Another due job of the same kind and queue: runJob takes the one it is given.
    await enqueue(t.db, { kind, payload: { orderId: 1 } });
    const { id } = await enqueue(t.db, { kind, payload: { orderId: 42 }, idempotencyKey: `receipt:${kind}` });
    const run = await runJob(t.db, handlers, { id });
    expect(seen).toEqual([{ payload: { orderId: 42 }, attempt: 1, deliveryKey: `receipt:${kind}` }]);
    expect(run).toMatchObject({
      id,
      kind,
      queue: 'default',
      attempt: 1,
      outcome: 'completed',
      failureClass: null,
      error: null,
      state: 'done',
      attempts: 1,
      job: { id, state: 'done', leaseToken: null },
    });
  });

  it('leaves a job that failed with a retryable error ready, its backoff ahead, the attempt recorded', async () => {
    const kind = unique('mail.send');
    const handlers = [
      handler(
        kind,
        async () => {
          throw new TransientError('provider 503');
        },
        { retry: { baseDelayMs: 60_000, maxDelayMs: 60_000 } },
      ),
    ];
    const { id } = await enqueue(t.db, { kind });
    const before = Date.now();
    const run = await runJob(t.db, handlers, id);
    expect(run).toMatchObject({
      outcome: 'failed',
      failureClass: 'transient',
      error: 'TransientError: provider 503',
      state: 'ready',
      attempts: 1,
    });
    // Equal jitter: at least half the 60 s step from now.
    expect(run.runAt.getTime()).toBeGreaterThan(before + 29_000);
    expect(await attemptRows(id)).toEqual([{ attempt: 1, outcome: 'failed', failure_class: 'transient' }]);
    // Not due: running it again is refused until the backoff is over.
    await expect(runJob(t.db, handlers, id)).rejects.toMatchObject({ reason: 'not_due' });
  });

  it('makes a job dead on a permanent error, on a payload its schema refuses, and on a kind with no handler', async () => {
    const kind = unique('card.charge');
    const handlers = [
      handler(
        kind,
        async () => {
          throw new PermanentError('card declined');
        },
        { schema: z.object({ amount: z.number() }) },
      ),
    ];
    const declined = await enqueue(t.db, { kind, payload: { amount: 5 } });
    const badPayload = await enqueue(t.db, { kind, payload: { amount: 'five' } });
    const unknownKind = await enqueue(t.db, { kind: unique('nobody.runs') });
    expect(await runJob(t.db, handlers, declined)).toMatchObject({
      outcome: 'failed',
      failureClass: 'permanent',
      error: 'PermanentError: card declined',
      state: 'dead',
    });
    const invalid = await runJob(t.db, handlers, badPayload);
    expect(invalid).toMatchObject({ failureClass: 'permanent', state: 'dead' });
    expect(invalid.error).toMatch(/invalid payload/);
    const unknown = await runJob(t.db, handlers, unknownKind);
    expect(unknown).toMatchObject({ failureClass: 'permanent', state: 'dead' });
    expect(unknown.error).toMatch(/unknown kind/);
  });

  it("stops a handler past its timeout through the worker's lease keeper: failed as timeout, retried", async () => {
    const kind = unique('slow.call');
    let aborted: unknown = null;
    const handlers = [
      handler(
        kind,
        ({ signal }) =>
          new Promise((_, reject) => {
            signal.addEventListener('abort', () => {
              aborted = signal.reason;
              reject(signal.reason);
            });
          }),
        { timeoutMs: 50 },
      ),
    ];
    const { id } = await enqueue(t.db, { kind });
    const run = await runJob(t.db, handlers, id);
    expect(run).toMatchObject({ outcome: 'failed', failureClass: 'timeout', state: 'ready', attempts: 1 });
    expect(aborted).toMatchObject({ reason: 'timeout' });
  });

  it('settles nothing after an operator cancelled the running job: it stays cancelled', async () => {
    const kind = unique('export.build');
    const handlers = [
      handler(kind, async ({ job }) => {
        const outcome = await cancelIfUnchanged(t.db, {
          id: job.id,
          leaseToken: (job as ClaimedJob).leaseToken,
          actor: 'ops@example.com',
        });
        expect(outcome).toMatchObject({ applied: true });
      }),
    ];
    const { id } = await enqueue(t.db, { kind });
    const run = await runJob(t.db, handlers, id);
    // The attempt completed, but its acknowledgement was lease-guarded and refused.
    expect(run).toMatchObject({ outcome: 'completed', state: 'cancelled', attempts: 1 });
  });

  it('refuses a job that is not ready, or not found, with a reason, settling nothing', async () => {
    const kind = unique('once.only');
    const handlers = [handler(kind, async () => {})];
    const { id } = await enqueue(t.db, { kind });
    await runJob(t.db, handlers, id);
    const again = await runJob(t.db, handlers, id).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(JobNotRunnable);
    expect(again).toMatchObject({ reason: 'not_ready', message: expect.stringMatching(/is done, not ready/) });
    expect(await attemptRows(id)).toEqual([]); // completions write no attempt row; nothing else was written
    await expect(runJob(t.db, handlers, '0190f2d4-0000-7000-8000-000000000000')).rejects.toMatchObject({
      reason: 'not_found',
    });
    await expect(runJob(t.db, handlers, 'nope')).rejects.toThrow(/jobId: a job id/);
    await expect(runJob(t.db, [], id)).rejects.toThrow(/handlers: a non-empty array/);
  });
});

describe('drainQueue', () => {
  it("runs every due job of the handlers' queues, follow-ups included, and leaves other queues alone", async () => {
    const queue = unique('orders');
    const other = unique('elsewhere');
    const order = unique('order.placed');
    const receipt = unique('receipt.send');
    const ran: string[] = [];
    const handlers = [
      handler(
        order,
        async ({ payload }) => {
          ran.push(`order ${(payload as { n: number }).n}`);
          await enqueue(t.db, { queue, kind: receipt, payload });
        },
        { defaultQueue: queue },
      ),
      handler(receipt, async ({ payload }) => void ran.push(`receipt ${(payload as { n: number }).n}`), {
        defaultQueue: queue,
      }),
    ];
    await enqueue(t.db, { queue, kind: order, payload: { n: 1 } });
    await enqueue(t.db, { queue, kind: order, payload: { n: 2 } });
    const untouched = await enqueue(t.db, { queue: other, kind: order, payload: { n: 3 } });
    const result = await drainQueue(t.db, { handlers });
    expect(result.stoppedBecause).toBe('drained');
    expect(ran).toEqual(['order 1', 'order 2', 'receipt 1', 'receipt 2']);
    expect(result.runs.map((r) => [r.kind, r.state])).toEqual([
      [order, 'done'],
      [order, 'done'],
      [receipt, 'done'],
      [receipt, 'done'],
    ]);
    const { rows } = await t.pool.query('SELECT state, attempts FROM leasehold.jobs WHERE id = $1', [untouched.id]);
    expect(rows).toEqual([{ state: 'ready', attempts: 0 }]);
  });

  it('does not wait for a backoff unless asked; asked, it runs the retry when it is due', async () => {
    const queue = unique('flaky');
    const kind = unique('flaky.call');
    let calls = 0;
    const handlers = [
      handler(
        kind,
        async () => {
          calls += 1;
          if (calls === 1) throw new TransientError('first try fails');
        },
        { retry: { baseDelayMs: 100, maxDelayMs: 100 } },
      ),
    ];
    const { id } = await enqueue(t.db, { queue, kind });
    const first = await drainQueue(t.db, { handlers, queues: [queue] });
    expect(first.stoppedBecause).toBe('drained');
    expect(first.runs).toMatchObject([{ id, outcome: 'failed', state: 'ready', attempts: 1 }]);
    const waited = await drainQueue(t.db, { handlers, queues: [queue], waitForRetries: true });
    expect(waited.stoppedBecause).toBe('drained');
    expect(waited.runs).toMatchObject([{ id, attempt: 2, outcome: 'completed', state: 'done', attempts: 2 }]);
  });

  it('stops at maxJobs, and at timeoutMs when handlers keep enqueuing, saying which', async () => {
    const queue = unique('loop');
    const kind = unique('loop.again');
    const handlers = [handler(kind, async () => void (await enqueue(t.db, { queue, kind })))];
    await enqueue(t.db, { queue, kind });
    const capped = await drainQueue(t.db, { handlers, queues: [queue], maxJobs: 3 });
    expect(capped).toMatchObject({ stoppedBecause: 'max_jobs' });
    expect(capped.runs).toHaveLength(3);
    const timed = await drainQueue(t.db, { handlers, queues: [queue], timeoutMs: 200 });
    expect(timed.stoppedBecause).toBe('timeout');
    expect(timed.runs.length).toBeGreaterThan(0);
  });

  it('refuses bad options with a sentence naming each, running nothing', async () => {
    const kind = unique('never.runs');
    const { id } = await enqueue(t.db, { kind });
    const handlers = [handler(kind, async () => {})];
    const error = await drainQueue(t.db, { handlers, queues: [], maxJobs: 0, timeoutMs: -1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LeaseholdInputError);
    expect((error as LeaseholdInputError).problems).toEqual([
      expect.stringMatching(/^maxJobs: /),
      expect.stringMatching(/^timeoutMs: /),
      expect.stringMatching(/^queues: /),
    ]);
    await expect(drainQueue(t.db, { handlers: [...handlers, handler(kind, async () => {})] })).rejects.toThrow(
      /handlers: .*two handlers for kind/,
    );
    const { rows } = await t.pool.query('SELECT state FROM leasehold.jobs WHERE id = $1', [id]);
    expect(rows).toEqual([{ state: 'ready' }]);
  });
});
