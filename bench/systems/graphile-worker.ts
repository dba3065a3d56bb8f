/**
 * graphile-worker 0.18 at the settings of its own perfTest for throughput: a local queue of 500
 * jobs per fetch, completions batched (`completeJobBatchDelay: 0`), 24 concurrent jobs. It
 * deletes completed jobs and does not fence a late attempt. It always LISTENs (no switch to
 * turn that off), and every add_job NOTIFYs.
 */
import { Logger, makeWorkerUtils, run, runMigrations } from 'graphile-worker';
import { benchPool } from './db.ts';
import { QUEUE, type BenchSystem, type CommonMode } from './types.ts';

const silent = new Logger(() => () => {});

const PRESETS: Record<CommonMode, Record<string, unknown>> = {
  drain: {
    concurrentJobs: 24,
    maxPoolSize: 25,
    localQueue: { size: 500 },
    completeJobBatchDelay: 0,
    failJobBatchDelay: 0,
    pollInterval: 1000,
  },
  listen: { concurrentJobs: 10, maxPoolSize: 11, pollInterval: 2000 },
  poll: {},
};

export const graphileWorker: BenchSystem = {
  name: 'graphile-worker',
  settings: {
    enqueue: 'WorkerUtils.addJob()/addJobs() on a pg pool (add_job always NOTIFYs)',
    drain: `preset.worker ${JSON.stringify(PRESETS.drain)} (its perfTest settings); completed jobs deleted`,
    listen: `preset.worker ${JSON.stringify(PRESETS.listen)}`,
    poll: 'n/a',
  },
  unsupported: {
    poll: 'graphile-worker always LISTENs; it has no polling-only mode',
    'enqueue-wake-off': 'add_job always NOTIFYs',
    hold: 'no heartbeat: a job stays locked for 4 hours (locked_at), however long it runs',
  },

  async install(url) {
    await runMigrations({ connectionString: url, logger: silent });
  },

  async enqueuer(url, connections) {
    const pool = benchPool(url, connections);
    const utils = await makeWorkerUtils({ pgPool: pool, logger: silent });
    return {
      send: async (seq) => {
        await utils.addJob(QUEUE, { seq });
      },
      sendMany: async (seqs) => {
        await utils.addJobs(seqs.map((seq) => ({ identifier: QUEUE, payload: { seq } })));
      },
      close: async () => {
        await utils.release();
        await pool.end();
      },
    };
  },

  async enqueueBulk(url, seqs) {
    const pool = benchPool(url, 2);
    const utils = await makeWorkerUtils({ pgPool: pool, logger: silent });
    try {
      await utils.addJobs(seqs.map((seq) => ({ identifier: QUEUE, payload: { seq } })));
    } finally {
      await utils.release();
      await pool.end();
    }
  },

  // A job row is deleted as it completes: its retention is in the drain.
  async retain() {},

  storedSql: `SELECT count(*)::int AS n FROM graphile_worker._private_jobs`,

  unsettledSql: 'SELECT count(*)::int AS n FROM graphile_worker._private_jobs',

  async startWorker(url, mode, hooks) {
    const runner = await run({
      noHandleSignals: true,
      logger: silent,
      taskList: {
        [QUEUE]: async (payload) => {
          hooks.onStart((payload as { seq: number }).seq);
          hooks.onHandled(1);
        },
      },
      preset: { worker: { connectionString: url, ...PRESETS[mode as CommonMode] } },
    });
    return {
      stop: async () => {
        await runner.stop();
        await runner.promise;
      },
    };
  },
};
