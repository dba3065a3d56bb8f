/**
 * pg-boss 12 at its documented throughput settings: batch fetch (`batchSize`) with
 * `burstWhenBatchFull`, so a worker fetches again at once while batches come back full; a
 * batch handler completes the whole batch in one statement. LISTEN/NOTIFY is opt-in per queue.
 */
import { PgBoss } from 'pg-boss';
import { QUEUE, type BenchSystem, type CommonMode } from './types.ts';

const WORK: Record<CommonMode, Record<string, unknown>> = {
  drain: { batchSize: 500, localConcurrency: 4, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 },
  listen: { batchSize: 1, localConcurrency: 1, notifyPollingIntervalSeconds: 30 },
  // A batch per poll: with batchSize 1 it would take one job per 0.5 s and fall behind.
  poll: { batchSize: 100, localConcurrency: 1, pollingIntervalSeconds: 0.5 },
};

function boss(url: string, max: number, listen = false) {
  const instance = new PgBoss({
    connectionString: url,
    max,
    migrate: false,
    supervise: false,
    schedule: false,
    useListenNotify: listen,
  });
  instance.on('error', (error) => console.error('[pg-boss]', error));
  return instance;
}

export const pgBoss: BenchSystem = {
  name: 'pg-boss',
  settings: {
    enqueue: 'send()/insert(); queue created with notify off (the default) unless the case needs LISTEN',
    drain: `work(${JSON.stringify(WORK.drain)}) with a batch handler; completed rows kept (pg-boss default retention)`,
    listen: `useListenNotify: true, queue notify: true, work(${JSON.stringify(WORK.listen)})`,
    poll: `work(${JSON.stringify(WORK.poll)}) (0.5 s is the smallest interval pg-boss accepts)`,
  },

  async install(url) {
    const instance = new PgBoss({ connectionString: url, max: 2, supervise: false, schedule: false });
    await instance.start();
    // A job takes the queue's deleteAfterSeconds when it is sent: 1 s, so the lifecycle case's
    // retention finds the finished jobs due. Nothing deletes them elsewhere: every other case
    // runs with the supervisor off.
    await instance.createQueue(QUEUE, { deleteAfterSeconds: 1 });
    await instance.stop({ graceful: false, close: true });
  },

  async enqueuer(url, connections, wake) {
    const instance = boss(url, connections);
    await instance.start();
    if (wake) await instance.updateQueue(QUEUE, { notify: true });
    return {
      send: async (seq) => {
        await instance.send(QUEUE, { seq });
      },
      sendMany: async (seqs) => {
        await instance.insert(
          QUEUE,
          seqs.map((seq) => ({ data: { seq } })),
        );
      },
      close: () => instance.stop({ graceful: false, close: true }),
    };
  },

  async enqueueBulk(url, seqs) {
    const instance = boss(url, 2);
    await instance.start();
    try {
      await instance.insert(
        QUEUE,
        seqs.map((seq) => ({ data: { seq } })),
      );
    } finally {
      await instance.stop({ graceful: false, close: true });
    }
  },

  async retain(url) {
    // Its maintenance pass (supervise) deletes completed jobs older than the queue's
    // deleteAfterSeconds (1 s, set at install), then one pass.
    // A queue's deletion runs at most once per maintenanceIntervalSeconds: 1 s here too.
    const instance = new PgBoss({
      connectionString: url,
      max: 2,
      migrate: false,
      supervise: false,
      schedule: false,
      maintenanceIntervalSeconds: 1,
    });
    instance.on('error', (error) => console.error('[pg-boss]', error));
    await instance.start();
    try {
      await new Promise((resolve) => setTimeout(resolve, 1100));
      await instance.supervise(QUEUE);
    } finally {
      await instance.stop({ graceful: false, close: true });
    }
  },

  storedSql: `SELECT count(*)::int AS n FROM pgboss.job WHERE name = '${QUEUE}'`,

  unsettledSql: `SELECT count(*)::int AS n FROM pgboss.job WHERE name = '${QUEUE}' AND state IN ('created', 'retry', 'active')`,

  hold: {
    settings:
      'queue heartbeatSeconds L, work({ batchSize: 500, localConcurrency: N/500, heartbeatRefreshSeconds: L/3 }) with a batch handler',
    async start(url, { concurrency, holdMs, leaseSeconds, beatSeconds }, hooks) {
      const instance = boss(url, 10);
      await instance.start();
      await instance.updateQueue(QUEUE, { heartbeatSeconds: leaseSeconds });
      const controller = new AbortController();
      const batchSize = Math.min(500, concurrency);
      await instance.work<{ seq: number }>(
        QUEUE,
        {
          batchSize,
          localConcurrency: Math.max(1, Math.round(concurrency / batchSize)),
          heartbeatRefreshSeconds: beatSeconds,
          pollingIntervalSeconds: 0.5,
        },
        async (jobs) => {
          for (const job of jobs) hooks.onStart(job.data.seq);
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, holdMs);
            controller.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
          });
          hooks.onHandled(jobs.length);
        },
      );
      return {
        stop: async () => {
          controller.abort();
          await instance.stop({ graceful: true, close: true, timeout: 5000 });
        },
      };
    },
    beatTablesSql: `SELECT coalesce(sum(n_tup_upd), 0)::bigint AS n FROM pg_catalog.pg_stat_user_tables WHERE schemaname = 'pgboss' AND relname LIKE 'job%'`,
  },

  async startWorker(url, mode, hooks) {
    const instance = boss(url, 10, mode === 'listen');
    await instance.start();
    await instance.work<{ seq: number }>(QUEUE, WORK[mode as CommonMode], async (jobs) => {
      for (const job of jobs) hooks.onStart(job.data.seq);
      hooks.onHandled(jobs.length);
    });
    return { stop: () => instance.stop({ graceful: true, close: true, timeout: 5000 }) };
  },
};
