/**
 * Debuggable failures, through a real worker on real PostgreSQL: what a handler throws reaches
 * its attempt row with the stack and the cause chain, bounded, scrubbed of the payload's
 * secrets; and the handler's own log lines say which job, attempt and trace they belong to.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { z } from 'zod';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { enqueue } from '../db/queue/index.ts';
import {
  MASK,
  MAX_CAUSE_DEPTH,
  MAX_DETAIL_CHARS,
  MAX_STACK_FRAMES,
  type ErrorDetail,
} from '../db/queue/error-detail.ts';
import { MAX_ERROR_LENGTH } from '../db/queue/settle.ts';
import { testDatabase, type TestDatabase } from '../test/db.ts';
import { jobInState, uniqueQueue, writeDeepPayload } from '../test/factories.ts';
import { until } from '../test/wait.ts';
import { PermanentError } from './errors.ts';
import { defineHandler, HandlerRegistry, type Handler } from './handler.ts';
import { Worker } from './worker.ts';
import { workerSettings } from '../test/workers.ts';

let t: TestDatabase;
const workers: Worker[] = [];
beforeAll(async () => {
  t = await testDatabase({ max: 10 });
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop(0)));
});
afterAll(async () => {
  await t?.close();
});

const EMAIL = 'alice.failing@example.com';
const API_KEY = 'sk_live_4f9a7c21b3';
const payload = { customer: { email: EMAIL, name: 'Alice' }, apiKey: API_KEY, orderId: 'o-17' };

/** A handler of its own kind that throws what `fail` returns; `customer.email` is redacted. */
function failing(kind: string, fail: (p: typeof payload) => unknown): Handler {
  return defineHandler({
    kind,
    versions: [1],
    schema: z.object({
      customer: z.object({ email: z.string(), name: z.string() }),
      apiKey: z.string(),
      orderId: z.string(),
    }),
    timeoutMs: 5000,
    redact: ['customer.email'],
    async handle({ payload: p }) {
      throw fail(p as typeof payload);
    },
  });
}

interface AttemptRecord {
  error: string;
  error_detail: ErrorDetail | null;
  whole: string;
  last_error: string;
}

/** Runs one job of `handler` until its first attempt failed; its attempt row and job's last error. */
async function failOnce(
  handler: Handler,
  logger = pino({ level: 'silent' }),
  data: Record<string, unknown> = payload,
): Promise<AttemptRecord> {
  const queue = uniqueQueue('fail-detail');
  const worker = new Worker(workerSettings(queue, `w-${queue}`), {
    db: t.db,
    databaseUrl: t.url,
    registry: new HandlerRegistry([handler]),
    logger,
  });
  workers.push(worker);
  await worker.start();
  const { job } = await enqueue(t.db, { kind: handler.kind, queue, payload: data, maxAttempts: 1 });
  await until('the attempt failed', jobInState(t.db, job!.id, 'dead'));
  const { rows } = await t.pool.query<AttemptRecord>(
    `SELECT a.error, a.error_detail, a::text AS whole, j.last_error
     FROM leasehold.job_attempts a JOIN leasehold.jobs j ON j.id = a.job_id WHERE a.job_id = $1`,
    [job!.id],
  );
  expect(rows).toHaveLength(1);
  return rows[0]!;
}

function withStackLimit<T>(limit: number, make: () => T): T {
  const before = Error.stackTraceLimit;
  Error.stackTraceLimit = limit;
  try {
    return make();
  } finally {
    Error.stackTraceLimit = before;
  }
}

describe('a failed attempt records', () => {
  it('the stack and the cause chain of what the handler threw, outermost first', async () => {
    const root = Object.assign(new Error('connect ECONNRESET 10.0.0.7:443'), { code: 'ECONNRESET' });
    const row = await failOnce(
      failing(
        'detail.chain',
        () => new PermanentError('provider refused', { cause: new TypeError('fetch failed', { cause: root }) }),
      ),
    );
    expect(row.error).toBe('PermanentError: provider refused');
    const detail = row.error_detail!;
    // The frames of the throw site, without the message line (that is `error`).
    expect(detail.stack).toMatch(/^\s+at .*failure-detail\.test\.ts:\d+:\d+/);
    expect(detail.stack).not.toContain('provider refused');
    expect(detail.causes).toEqual([
      { name: 'TypeError', message: 'fetch failed', stack: expect.stringMatching(/failure-detail\.test\.ts/) },
      {
        name: 'Error',
        message: 'connect ECONNRESET 10.0.0.7:443',
        code: 'ECONNRESET',
        stack: expect.stringMatching(/failure-detail\.test\.ts/),
      },
    ]);
    expect(detail.chainEnd).toBeUndefined();
    expect(detail.truncated).toBe(false);
  });

  it('within its bounds: a 1 MB message, 200 frames and a 50-deep cause chain are cut', async () => {
    const huge = 'x'.repeat(1_000_000);
    const row = await failOnce(
      failing('detail.huge', () =>
        withStackLimit(500, () => {
          let cause: Error = new Error(`root ${huge}`);
          for (let i = 49; i >= 1; i -= 1) cause = new Error(`level ${i} ${huge}`, { cause });
          const deep = (n: number): Error => (n === 0 ? new Error(huge, { cause }) : deep(n - 1));
          return deep(200);
        }),
      ),
    );
    expect(row.error.length).toBeLessThanOrEqual(MAX_ERROR_LENGTH);
    expect(row.error.endsWith('…')).toBe(true);
    const detail = row.error_detail!;
    expect(detail.stack!.split('\n').length).toBe(MAX_STACK_FRAMES);
    expect(detail.causes).toHaveLength(MAX_CAUSE_DEPTH);
    expect(detail.causes.map((c) => c.message.slice(0, 8))).toEqual([
      'level 1 ',
      'level 2 ',
      'level 3 ',
      'level 4 ',
      'level 5 ',
    ]);
    expect(detail.chainEnd).toBe('depth');
    expect(detail.truncated).toBe(true);
    const text = [detail.stack, ...detail.causes.flatMap((c) => [c.name, c.message, c.stack])].join('');
    expect(text.length).toBeLessThanOrEqual(MAX_DETAIL_CHARS);
    // The whole row, JSON and all, stays small.
    expect(row.whole.length).toBeLessThan(MAX_ERROR_LENGTH + MAX_DETAIL_CHARS + 2000);
  });

  it('a cyclic cause chain once round, and says it loops', async () => {
    const row = await failOnce(
      failing('detail.cycle', () => {
        const a = new Error('a');
        const b = new Error('b', { cause: a });
        (a as { cause?: unknown }).cause = b;
        return a;
      }),
    );
    expect(row.error).toBe('Error: a');
    expect(row.error_detail!.causes.map((c) => c.message)).toEqual(['b']);
    expect(row.error_detail!.chainEnd).toBe('cycle');
  });

  it('no redacted payload value, in the message, a cause or a stack', async () => {
    const row = await failOnce(
      failing('detail.secret', (p) => {
        const cause = new Error(`upstream said: ${JSON.stringify(p)}`);
        cause.stack = `Error: upstream\n    at send (/srv/mail/${p.customer.email}/send.js:1:1)\n    at auth (/srv/${p.apiKey}.js:2:2)`;
        return new PermanentError(`provider refused ${p.customer.email} (key ${encodeURIComponent(p.apiKey)})`, {
          cause,
        });
      }),
    );
    expect(row.whole).not.toContain(EMAIL);
    expect(row.whole).not.toContain(API_KEY);
    expect(row.last_error).not.toContain(EMAIL);
    expect(row.error).toBe(`PermanentError: provider refused ${MASK} (key ${MASK})`);
    const [cause] = row.error_detail!.causes;
    expect(cause!.message).toContain(`"email":"${MASK}"`);
    expect(cause!.message).toContain(`"apiKey":"${MASK}"`);
    // What is not secret stays readable.
    expect(cause!.message).toContain('"orderId":"o-17"');
    expect(cause!.stack).toBe(`    at send (/srv/mail/${MASK}/send.js:1:1)\n    at auth (/srv/${MASK}.js:2:2)`);
  });

  it('no value under a key the default list matches by pattern, nor at a path spelled in another case', async () => {
    const secrets = {
      Customer: { Email: EMAIL },
      accessToken: 'tok_live_77aa',
      billing: { card_number: '4242424242424242' },
    };
    const handler = defineHandler({
      kind: 'detail.pattern',
      versions: [1],
      schema: z.looseObject({}),
      timeoutMs: 5000,
      redact: ['customer.email'],
      async handle({ payload: p }) {
        throw new PermanentError(`provider refused: ${JSON.stringify(p)}`);
      },
    });
    const row = await failOnce(handler, undefined, secrets);
    for (const secret of [EMAIL, 'tok_live_77aa', '4242424242424242']) expect(row.whole).not.toContain(secret);
    // jsonb orders the keys its own way: each masked pair is checked on its own.
    for (const pair of [`{"Email":"${MASK}"}`, `"accessToken":"${MASK}"`, `{"card_number":"${MASK}"}`])
      expect(row.error).toContain(pair);
  });
});

describe('a payload nested past the enqueue limit (written by the migrator, past every check)', () => {
  it('still settles the attempt with the error the handler threw, not as a lost lease', async () => {
    const queue = uniqueQueue('fail-deep');
    const handler = defineHandler({
      kind: 'detail.deep',
      versions: [1],
      schema: z.object({ deep: z.unknown() }),
      timeoutMs: 5000,
      redact: ['deep[0].token'],
      async handle() {
        throw new PermanentError('cannot handle a payload this deep', { cause: new RangeError('too deep') });
      },
    });
    const { job } = await enqueue(t.db, { kind: handler.kind, queue, payload: { deep: [] }, maxAttempts: 1 });
    // 3,000 levels, as `'{"deep":' || repeat('[', 3000) || repeat(']', 3000) || '}'` from psql.
    await writeDeepPayload(t.db, job!.id, 3000);
    const worker = new Worker(workerSettings(queue, `w-${queue}`), {
      db: t.db,
      databaseUrl: t.url,
      registry: new HandlerRegistry([handler]),
      logger: pino({ level: 'silent' }),
    });
    workers.push(worker);
    await worker.start();
    await until('the attempt failed', jobInState(t.db, job!.id, 'dead'));
    const { rows } = await t.pool.query<AttemptRecord & { outcome: string }>(
      `SELECT a.outcome, a.error, a.error_detail, j.last_error
       FROM leasehold.job_attempts a JOIN leasehold.jobs j ON j.id = a.job_id WHERE a.job_id = $1`,
      [job!.id],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      outcome: 'failed',
      error: 'PermanentError: cannot handle a payload this deep',
      last_error: 'PermanentError: cannot handle a payload this deep',
    });
    expect(rows[0]!.error_detail!.causes).toMatchObject([{ name: 'RangeError', message: 'too deep' }]);
  });
});

describe('a handler log line', () => {
  it('carries the job id, the attempt and the trace id', async () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n'))
          if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    const queue = uniqueQueue('fail-log');
    const handler = defineHandler({
      kind: 'detail.logs',
      versions: [1],
      schema: z.object({}),
      timeoutMs: 5000,
      async handle({ logger }) {
        logger.info({ step: 'charge' }, 'charging the card');
      },
    });
    const worker = new Worker(workerSettings(queue, `w-${queue}`), {
      db: t.db,
      databaseUrl: t.url,
      registry: new HandlerRegistry([handler]),
      logger: pino({ level: 'info' }, sink),
    });
    workers.push(worker);
    await worker.start();
    const { job } = await enqueue(t.db, { kind: 'detail.logs', queue, payload: {}, traceId: 'trace-7f3a' });
    await until('the job is done', jobInState(t.db, job!.id, 'done'));
    const line = lines.find((l) => l.msg === 'charging the card');
    expect(line).toMatchObject({
      jobId: job!.id,
      attempt: 1,
      traceId: 'trace-7f3a',
      kind: 'detail.logs',
      queue,
      step: 'charge',
    });
  });
});
