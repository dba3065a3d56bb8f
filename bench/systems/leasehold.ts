/**
 * Leasehold as the benchmark runs it: the product's own enqueue and Worker, nothing
 * special-cased, from the built package (./built.ts).
 */
import pino from 'pino';
import { z } from 'zod';
import {
  createDb,
  defineHandler,
  enqueue,
  enqueueMany,
  HandlerRegistry,
  migrateDatabase,
  parseWorkerConfig,
  removeExpiredHistory,
  Worker,
} from './built.ts';
import { benchPool } from './db.ts';
import {
  GROUPED_DRAIN,
  LIMITED_DRAIN_MAX,
  QUEUE,
  RATED_DRAIN,
  type BenchSystem,
  type WorkerHooks,
  type WorkerMode,
} from './types.ts';
import type { HandlerLimit } from '../../workers/handler.ts';

const KIND = 'bench.noop';

const WORKER_FLAGS: Record<WorkerMode, string[]> = {
  drain: ['--concurrency', '2000', '--batch-size', '1000', '--poll-ms', '1000'],
  'drain-limited': ['--concurrency', '2000', '--batch-size', '1000', '--poll-ms', '1000'],
  'drain-rated': ['--concurrency', '2000', '--batch-size', '1000', '--poll-ms', '1000'],
  'drain-grouped': ['--concurrency', '2000', '--batch-size', '1000', '--poll-ms', '1000'],
  listen: ['--concurrency', '10', '--poll-ms', '2000'],
  'listen-async-claims': ['--concurrency', '10', '--poll-ms', '2000', '--async-claims'],
  poll: ['--concurrency', '10', '--poll-ms', '500', '--no-listen'],
};

export const leasehold: BenchSystem = {
  name: 'leasehold',
  settings: {
    enqueue: 'enqueue()/enqueueMany() on a pg pool; wake-up NOTIFY on (the default) unless the case says off',
    drain: `Worker ${WORKER_FLAGS.drain.join(' ')}; completed rows, attempt history, token-guarded batched acks, reaper on`,
    'drain-limited': `Worker ${WORKER_FLAGS['drain-limited'].join(' ')}, the handler under limit: { max: ${LIMITED_DRAIN_MAX} } (every process together)`,
    'drain-rated': `Worker ${WORKER_FLAGS['drain-rated'].join(' ')}, the handler under limit: { rate: { max: ${RATED_DRAIN.max}, perMs: ${RATED_DRAIN.perMs} } } (every process together)`,
    'drain-grouped': `Worker ${WORKER_FLAGS['drain-grouped'].join(' ')}, the jobs in ${GROUPED_DRAIN.groups.toLocaleString('en')} fair groups, each group at most ${GROUPED_DRAIN.max} running (setGroupLimit, every process together)`,
    listen: `Worker ${WORKER_FLAGS.listen.join(' ')}; LISTEN on`,
    'listen-async-claims': `Worker ${WORKER_FLAGS['listen-async-claims'].join(' ')}; LISTEN on; claims commit without waiting for the WAL flush (not the default: docs/contract.md §4)`,
    poll: `Worker ${WORKER_FLAGS.poll.join(' ')}`,
  },

  async install(url) {
    await migrateDatabase(url);
  },

  async enqueuer(url, connections, wake) {
    const pool = benchPool(url, connections);
    return {
      send: async (seq) => {
        await enqueue(pool, { queue: QUEUE, kind: KIND, payload: { seq } }, { notify: wake });
      },
      sendMany: async (seqs) => {
        await enqueueMany(
          pool,
          seqs.map((seq) => ({ queue: QUEUE, kind: KIND, payload: { seq } })),
          { notify: wake },
        );
      },
      close: () => pool.end(),
    };
  },

  async enqueueBulk(url, seqs) {
    // A pool, as graphile-worker's and pg-boss's bulk calls get: enqueueMany then writes in
    // overlapped parts (on a bare client it sends one statement).
    const pool = benchPool(url, 1);
    try {
      await enqueueMany(
        pool,
        seqs.map((seq) => ({ queue: QUEUE, kind: KIND, payload: { seq } })),
      );
    } finally {
      await pool.end();
    }
  },

  async retain(url) {
    // The maintenance round's statement, with every window at 0, until a batch comes back short.
    const pool = benchPool(url, 1);
    try {
      const limit = 10_000;
      const windows = { doneAfterSeconds: 0, deadAfterSeconds: 0, cancelledAfterSeconds: 0, attemptsAfterSeconds: 0 };
      for (;;) {
        const removed = await removeExpiredHistory(pool, { ...windows, limit });
        if (removed.jobs < limit && removed.attempts < limit && removed.dedupeKeys < limit) break;
      }
    } finally {
      await pool.end();
    }
  },

  // Schema v1 keeps no index on the jobs' state: the ready rows and the lease rows' counts say
  // what is left, without a scan of every job every few milliseconds while the drain ends.
  storedSql: `SELECT count(*)::int AS n FROM leasehold.jobs`,

  unsettledSql: `SELECT ((SELECT count(*) FROM leasehold.ready_jobs) + (SELECT coalesce(sum(running), 0) FROM leasehold.leases))::int AS n`,

  hold: {
    settings:
      'Worker --concurrency N --batch-size 1000 (1 in the one-job-claims case) --lease-seconds L; heartbeats at L/3',
    async start(url, { concurrency, holdMs, leaseSeconds, claimBatch }, hooks) {
      const flags = [
        '--concurrency',
        String(concurrency),
        '--batch-size',
        String(claimBatch ?? 1000),
        '--lease-seconds',
        String(leaseSeconds),
      ];
      return startLeasehold(url, flags, hooks, holdMs);
    },
    // A beat writes the jobs' rows (per-job heartbeats), or the worker lease (schema version 10
    // on), or the claims' lease rows too (while an older worker is live): whichever it wrote.
    beatTablesSql: `SELECT coalesce(sum(n_tup_upd), 0)::bigint AS n FROM pg_catalog.pg_stat_user_tables WHERE schemaname = 'leasehold' AND relname IN ('jobs', 'worker_leases', 'leases')`,
  },

  async startWorker(url, mode, hooks) {
    const limit: HandlerLimit | undefined =
      mode === 'drain-limited'
        ? { max: LIMITED_DRAIN_MAX }
        : mode === 'drain-rated'
          ? { rate: { max: RATED_DRAIN.max, perMs: RATED_DRAIN.perMs } }
          : undefined;
    return startLeasehold(url, WORKER_FLAGS[mode], hooks, 0, limit);
  },
};

/**
 * A Worker on `flags` whose handler reports its start and waits `holdMs` (0: returns at once),
 * under `limit` (a concurrency limit, a rate or both) when given.
 */
async function startLeasehold(url: string, flags: string[], hooks: WorkerHooks, holdMs: number, limit?: HandlerLimit) {
  const config = parseWorkerConfig(['--queues', QUEUE, '--log-level', 'warn', ...flags], {});
  const logger = pino({ level: config.logLevel });
  const handle = createDb(url, { max: Math.min(config.concurrency + 4, 30), applicationName: 'leasehold-bench' });
  const registry = new HandlerRegistry([
    defineHandler({
      kind: KIND,
      versions: [1],
      schema: z.object({ seq: z.number() }),
      timeoutMs: 30_000 + holdMs,
      ...(limit === undefined ? {} : { limit }),
      handle: async ({ payload, signal }) => {
        hooks.onStart(payload.seq);
        if (holdMs > 0) await sleepUnless(holdMs, signal);
        hooks.onHandled(1);
      },
    }),
  ]);
  const worker = new Worker(config, { db: handle.db, databaseUrl: url, registry, logger });
  await worker.start();
  return {
    stop: async () => {
      await worker.stop(5000);
      await handle.close();
    },
  };
}

function sleepUnless(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });
}
