import nodeModule from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import pino from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { cancelIfUnchanged, enqueue, findReceipt } from '../db/queue/index.ts';
import { handlers } from '../test/fixtures/isolated-handlers.ts';
import { handlers as tsSyntaxHandlers } from '../test/fixtures/isolated-ts-syntax.ts';
import { useTestDatabase } from '../test/db.ts';
import { attemptsOf, getJob, jobInState, uniqueQueue } from '../test/factories.ts';
import { until } from '../test/wait.ts';
import { createWorker, type LeaseholdWorker, WorkerOptionsError } from './create-worker.ts';
import { TransientError } from './errors.ts';
import { defineHandler, type Handler, type HandlerContext, isolatedModule } from './handler.ts';
import { loadHandlerFiles } from './handler-files.ts';
import { type Isolate, isolatedThreads, reviveError, runIsolated, serializeError } from './isolated.ts';
import { type IsolatedRuntime, isolatedLoading } from './isolated-loader.ts';
import { createMetrics } from './metrics.ts';
import { z } from 'zod';

const t = useTestDatabase({ max: 10 });
const workers: LeaseholdWorker[] = [];
const pools: pg.Pool[] = [];

afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop(0)));
});
afterAll(async () => {
  await Promise.all(pools.splice(0).map((p) => p.end().catch(() => {})));
});

/** What the worker's logger wrote, one parsed line each. */
function capturedLogger() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

function start(queue: string, options: { leaseSeconds?: number; jobs?: Handler[] } = {}) {
  const pool = new pg.Pool({ connectionString: t.url, max: 5 });
  pool.on('error', () => {});
  pools.push(pool);
  const { logger, lines } = capturedLogger();
  const metrics = createMetrics();
  const worker = createWorker({
    pool,
    jobs: options.jobs ?? handlers,
    queues: [queue],
    logger,
    metrics,
    pollMs: 100,
    listen: false,
    maintenance: false,
    graceMs: 0,
    concurrency: 2,
    leaseSeconds: options.leaseSeconds ?? 30,
  });
  workers.push(worker);
  return { worker, lines, metrics };
}

/** The thread the worker started for the next isolated attempt, with a promise of its exit code. */
async function nextThread(mode?: Isolate['mode']): Promise<{ thread: Isolate; exited: Promise<number | null> }> {
  // With `mode`, an isolate of that mode: a thread an earlier test's worker started may still be
  // on its way out when the next test's starts (seen on a loaded CI run).
  const thread = await until(`an isolated handler’s ${mode ?? 'thread'} started`, async () =>
    [...isolatedThreads()].find((t) => mode === undefined || t.mode === mode),
  );
  return { thread, exited: new Promise((resolve) => thread.once('exit', resolve)) };
}

/**
 * An attempt of `iso.count` outside a worker: its thread counts into `counter` (shared memory)
 * until it is terminated; `controller` stops it.
 */
function countingAttempt(jobId: string) {
  const shared = new SharedArrayBuffer(4);
  const controller = new AbortController();
  const context = {
    job: { id: jobId, queue: 'q', kind: 'iso.count' },
    payload: shared,
    attempt: 1,
    deliveryKey: `iso.count:${jobId}`,
    signal: controller.signal,
    logger: pino({ level: 'silent' }),
    heartbeat: async () => {},
    receipt: async <T>(effect: () => Promise<T>) => effect(),
  } as unknown as HandlerContext<unknown>;
  const handler = handlers.find((h) => h.kind === 'iso.count')!;
  return { counter: new Int32Array(shared), controller, handler, context };
}

describe('isolated handlers', () => {
  it('terminates a thread that never yields at its timeout, and fails the job with class timeout', async () => {
    const queue = uniqueQueue('iso');
    const { worker, metrics, lines } = start(queue);
    const job = await enqueue(t.db, { queue, kind: 'iso.spin', maxAttempts: 1 });
    await worker.start();
    const { exited } = await nextThread();
    const startedAt = Date.now();
    // Its line reaches the main thread while the thread spins (messages do not wait for its loop).
    await until('the handler is in its loop', async () => lines.some((l) => l.msg === 'spinning'));
    const failed = await until('the job failed', jobInState(t.db, job.id, 'dead'), 20_000);
    expect(failed.failureClass).toBe('timeout');
    await exited; // the thread is gone: its exit event came
    // Within the 8 s timeout, the sweep and the termination (and a loaded machine).
    expect(Date.now() - startedAt).toBeLessThan(10_000);
    expect(isolatedThreads().size).toBe(0);
    await until('the termination was counted', async () =>
      (await metrics.registry.getSingleMetricAsString('leasehold_isolated_terminated_total')).includes(
        'reason="timeout"} 1',
      ),
    );
    expect(
      lines.some((l) => l.msg === 'isolated handler stopped: its thread was terminated' && l.reason === 'timeout'),
    ).toBe(true);
    // The main thread's loop stayed free while the thread spun: no lag sample over the threshold.
    const { worker: status } = await worker.health();
    expect(status.status).toBe('ok');
    expect(status.eventLoop.blocked).toBe(0);
  });

  it('keeps a TransientError thrown in the thread as its class, with its message, stack and cause', async () => {
    const queue = uniqueQueue('iso');
    const { worker } = start(queue);
    const job = await enqueue(t.db, { queue, kind: 'iso.transient', maxAttempts: 1 });
    await worker.start();
    const { exited } = await nextThread();
    await until('the attempt failed', async () => (await attemptsOf(t.db, job.id)).find((a) => a.outcome === 'failed'));
    const [attempt] = await attemptsOf(t.db, job.id);
    expect(attempt?.failureClass).toBe('transient');
    expect(attempt?.error).toBe('TransientError: the provider answered 503');
    const detail = attempt?.errorDetail as {
      stack: string | null;
      causes: { name: string; message: string; code?: string }[];
    };
    expect(detail.stack).toContain('isolated-handlers.ts');
    expect(detail.causes[0]).toMatchObject({ name: 'Error', message: 'socket hang up', code: 'ECONNRESET' });
    await exited;
  });

  it('terminates the thread when the lease is lost (an operator cancel), and settles nothing', async () => {
    const queue = uniqueQueue('iso');
    const { worker, metrics } = start(queue, { leaseSeconds: 3 });
    const job = await enqueue(t.db, { queue, kind: 'iso.spin-long' });
    await worker.start();
    const { exited } = await nextThread();
    const running = await until('the job ran', jobInState(t.db, job.id, 'running'));
    await cancelIfUnchanged(t.db, { id: job.id, leaseToken: running.leaseToken!, actor: 'test' });
    await exited; // at the next heartbeat (a second), refused: the thread is terminated
    expect((await getJob(t.db, job.id)).state).toBe('cancelled');
    await until('the termination was counted', async () =>
      (await metrics.registry.getSingleMetricAsString('leasehold_isolated_terminated_total')).includes(
        'reason="lease_lost"} 1',
      ),
    );
  });

  it('terminates the thread at shutdown after the grace period, releasing the job', async () => {
    const queue = uniqueQueue('iso');
    const { worker } = start(queue);
    const job = await enqueue(t.db, { queue, kind: 'iso.spin-long' });
    await worker.start();
    const { exited } = await nextThread();
    await until('the job ran', jobInState(t.db, job.id, 'running'));
    await worker.stop(200);
    await exited;
    expect((await getJob(t.db, job.id)).state).toBe('ready');
  });

  it('gives the thread the checked payload, heartbeats, receipts and a logger that reach the main thread', async () => {
    const queue = uniqueQueue('iso');
    const { worker, lines } = start(queue);
    const job = await enqueue(t.db, { queue, kind: 'iso.context', payload: { n: 21 } });
    await worker.start();
    await until('the job was done', jobInState(t.db, job.id, 'done'));
    const line = await until('the thread’s log line', async () => lines.find((l) => l.msg === 'isolated context seen'));
    expect(line).toMatchObject({
      first: { doubled: 42, attempt: 1 },
      second: { doubled: 42, attempt: 1 },
      deliveryKey: `iso.context:${job.id}`,
      jobId: job.id,
      isolated: true,
    });
    expect((await findReceipt(t.db, `iso.context:${job.id}`))?.result).toEqual({ doubled: 42, attempt: 1 });
  });

  it('refuses an isolated handler that names no module for its thread', () => {
    const bare = defineHandler({
      kind: 'iso.bare',
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 1000,
      isolated: 'thread',
      handle: async () => {},
    });
    expect(() => createWorker({ connectionString: t.url, jobs: [bare] })).toThrow(WorkerOptionsError);
    expect(() => createWorker({ connectionString: t.url, jobs: [bare] })).toThrow(/isolated: the thread needs/);
  });
});

describe('isolated handlers in a child process', () => {
  it('kills a process that never yields at its timeout, and fails the job with class timeout', async () => {
    const queue = uniqueQueue('iso');
    const { worker, lines } = start(queue);
    const job = await enqueue(t.db, { queue, kind: 'iso.spin-process', maxAttempts: 1 });
    await worker.start();
    const { thread, exited } = await nextThread('process');
    expect(thread.mode).toBe('process');
    const spinning = await until('the handler is in its loop', async () => lines.find((l) => l.msg === 'spinning'));
    expect(spinning.childPid).not.toBe(process.pid);
    const failed = await until('the job failed', jobInState(t.db, job.id, 'dead'), 20_000);
    expect(failed.failureClass).toBe('timeout');
    await exited;
    expect(() => process.kill(spinning.childPid as number, 0)).toThrow(/ESRCH/); // the process is gone
  });

  it('keeps a TransientError thrown in the process as its class', async () => {
    const queue = uniqueQueue('iso');
    const { worker } = start(queue);
    const job = await enqueue(t.db, { queue, kind: 'iso.transient-process', maxAttempts: 1 });
    await worker.start();
    await until('the attempt failed', async () => (await attemptsOf(t.db, job.id)).find((a) => a.outcome === 'failed'));
    const [attempt] = await attemptsOf(t.db, job.id);
    expect(attempt?.failureClass).toBe('transient');
    expect(attempt?.error).toBe('TransientError: the provider answered 503 (from a process)');
  });
});

describe('runIsolated', () => {
  it('terminates the thread the moment the attempt is stopped, even when the main loop is held right after', async () => {
    const { counter, controller, handler, context } = countingAttempt('job-1');
    const run = runIsolated(handler, context);
    run.catch(() => {});
    const { exited } = await nextThread();
    await until('the handler counts', async () => Atomics.load(counter, 0) > 0);
    controller.abort(new Error('stopped'));
    // The next handler may hold the loop right after the stop: the thread must not go on
    // counting meanwhile.
    const spinUntil = performance.now() + 300;
    while (performance.now() < spinUntil - 200) {}
    const early = Atomics.load(counter, 0);
    while (performance.now() < spinUntil) {}
    expect(Atomics.load(counter, 0)).toBe(early);
    await expect(run).rejects.toThrow('stopped');
    await exited;
  });

  it('ends the handler’s own promise of a stopped attempt only once its thread has exited (the slot is held until then)', async () => {
    const { counter, controller, handler, context } = countingAttempt('job-3');
    const run = runIsolated(handler, context);
    const { thread, exited } = await nextThread();
    let threadGone = false;
    thread.once('exit', () => (threadGone = true));
    await until('the handler counts', async () => Atomics.load(counter, 0) > 0);
    controller.abort(new Error('stopped'));
    // The producer frees the slot when this promise ends: by then the thread must be gone.
    const goneWhenEnded = await run.then(
      () => threadGone,
      () => threadGone,
    );
    expect(goneWhenEnded).toBe(true);
    await exited;
  });
});

describe('isolated handlers from --handlers files', () => {
  it('records the file a handler came from, and its thread imports that file', async () => {
    const file = 'test/fixtures/isolated-file-handler.ts';
    const { registry } = await loadHandlerFiles([file]);
    const handler = registry.get('iso.from-file')!;
    expect(isolatedModule(handler)).toBe(pathToFileURL(path.resolve(file)).href);
    const lines: Record<string, unknown>[] = [];
    const context = {
      job: { id: 'job-2', queue: 'q', kind: handler.kind },
      payload: {},
      attempt: 1,
      deliveryKey: 'iso.from-file:job-2',
      signal: new AbortController().signal,
      logger: pino({ level: 'warn' }, { write: (line: string) => lines.push(JSON.parse(line)) }),
      heartbeat: async () => {},
      receipt: async <T>(effect: () => Promise<T>) => effect(),
    } as unknown as HandlerContext<unknown>;
    await runIsolated(handler, context);
    expect(lines.find((l) => l.msg === 'ran from its file')).toMatchObject({ isMainThread: false, isolated: true });
  });
});

describe('isolated handlers written in TypeScript', () => {
  it('runs a module with an enum and a parameter property in a thread and in a child process (tsx loads it on every Node)', async () => {
    const queue = uniqueQueue('iso');
    const { worker, lines } = start(queue, { jobs: tsSyntaxHandlers });
    const inThread = await enqueue(t.db, { queue, kind: 'iso.ts-syntax', payload: { n: 21 }, maxAttempts: 1 });
    const inProcess = await enqueue(t.db, { queue, kind: 'iso.ts-syntax-process', payload: { n: 22 }, maxAttempts: 1 });
    await worker.start();
    await until('the thread’s job was done', jobInState(t.db, inThread.id, 'done'), 20_000);
    await until('the process’s job was done', jobInState(t.db, inProcess.id, 'done'), 20_000);
    const ran = lines.filter((l) => l.msg === 'non-erasable TypeScript ran');
    expect(ran).toHaveLength(2);
    // The enum's value and the parameter property's field, in a thread and in another process.
    const thread = ran.find((l) => l.said === '21 dark');
    const child = ran.find((l) => l.said === '22 dark');
    expect(thread).toMatchObject({ isMainThread: false, childPid: process.pid, isolated: true });
    expect(child).toMatchObject({ isMainThread: true, isolated: true });
    expect(child?.childPid).not.toBe(process.pid);
  });

  it('refuses at start a handler whose module does not exist, before any attempt', () => {
    const missing = defineHandler({
      kind: 'iso.missing',
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 1000,
      isolated: { mode: 'thread', module: pathToFileURL(path.resolve('test/fixtures/no-such-handler.ts')).href },
      handle: async () => {},
    });
    expect(() => createWorker({ connectionString: t.url, jobs: [missing] })).toThrow(WorkerOptionsError);
    expect(() => createWorker({ connectionString: t.url, jobs: [missing] })).toThrow(
      /handler iso\.missing: isolated: its module .*no-such-handler\.ts does not exist/,
    );
  });
});

describe('how an isolated handler’s TypeScript is loaded', () => {
  const enumModule = pathToFileURL(path.resolve('test/fixtures/isolated-ts-syntax.ts')).href;
  const erasableModule = pathToFileURL(path.resolve('test/fixtures/isolated-file-handler.ts')).href;
  // As in the installed package: the entry is JavaScript, only the user's module is TypeScript.
  const packageEntry = pathToFileURL(path.resolve('dist/workers/isolated-entry.js')).href;
  const runtime = (overrides: Partial<IsolatedRuntime>): IsolatedRuntime => ({
    entry: packageEntry,
    version: 'v24.22.3',
    typescript: 'strip',
    findTsx: () => undefined,
    stripTypes: undefined,
    ...overrides,
  });
  const stripTypeScriptTypes = (nodeModule as { stripTypeScriptTypes?: (source: string) => unknown })
    .stripTypeScriptTypes;

  it('uses tsx when it is found, whatever this Node does with TypeScript itself', () => {
    const tsx = { api: 'file:///x/tsx/dist/esm/api/index.mjs', loader: 'file:///x/tsx/dist/loader.mjs' };
    for (const typescript of ['strip', 'transform', undefined] as const)
      expect(isolatedLoading(enumModule, runtime({ typescript, findTsx: () => tsx }))).toEqual({ tsx });
    // In this checkout the real lookup finds the repository's own tsx.
    expect(isolatedLoading(enumModule).tsx?.api).toMatch(/node_modules\/tsx\/dist\/esm\/api\/index\.mjs$/);
  });

  it('refuses a TypeScript module when this Node runs no TypeScript and tsx is not found (as on Node 20), saying what to do', () => {
    const { problem } = isolatedLoading(enumModule, runtime({ version: 'v20.19.0', typescript: undefined }));
    expect(problem).toBe(
      `${path.resolve('test/fixtures/isolated-ts-syntax.ts')} is TypeScript, and Node v20.19.0 runs no TypeScript of its own: install tsx beside it (npm install --save-dev tsx), which the thread or process then registers, or compile the module to .js (Node 22.18 and later run erasable TypeScript without a loader)`,
    );
  });

  it('lets Node load the module without tsx when it transforms TypeScript itself (--experimental-transform-types)', () => {
    expect(isolatedLoading(enumModule, runtime({ typescript: 'transform' }))).toEqual({});
  });

  it.runIf(stripTypeScriptTypes !== undefined)(
    'on Node 22.18+ and 24 without tsx (type stripping only): refuses an enum or parameter property at start, and takes erasable TypeScript',
    () => {
      const strip = runtime({ stripTypes: stripTypeScriptTypes });
      const { problem } = isolatedLoading(enumModule, strip);
      expect(problem).toContain(
        `${path.resolve('test/fixtures/isolated-ts-syntax.ts')} uses TypeScript that Node v24.22.3 only strips`,
      );
      expect(problem).toContain('TypeScript enum is not supported in strip-only mode');
      expect(problem).toContain('install tsx beside it (npm install --save-dev tsx)');
      expect(problem).toContain('compile the module to .js');
      expect(isolatedLoading(erasableModule, strip)).toEqual({});
    },
  );
});

describe('errors across threads', () => {
  it('makes a typed error again by its name, with its retry-after, cause chain and code', () => {
    const revived = reviveError(
      serializeError(new TransientError('busy', { cause: Object.assign(new Error('reset'), { code: 'ECONNRESET' }) })),
    ) as TransientError;
    expect(revived).toBeInstanceOf(TransientError);
    expect(revived.failureClass).toBe('transient');
    expect((revived.cause as Error & { code: string }).code).toBe('ECONNRESET');
    const other = reviveError(serializeError(Object.assign(new RangeError('out'), { code: 'E_RANGE' })));
    expect(other).toMatchObject({ name: 'RangeError', message: 'out', code: 'E_RANGE' });
    expect(reviveError(serializeError('a string'))).toBe('a string');
  });
});
