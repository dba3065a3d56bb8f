/**
 * The same-features floor: Leasehold's own statements with no worker around them. Each loop
 * claims a batch with `claim()` (the worker's statement text, lease and kinds) and acknowledges
 * it with `completeManyIfLeaseHeld()` (token-fenced, done row kept), at the worker's drain
 * batch size, two loops per process so one claim overlaps one acknowledgement as in the
 * worker. What the worker adds on top (slots, attempts, handlers, validation, batching of acks,
 * heartbeats, the reaper) is the gap between this and `leasehold`; the gap between this and
 * `bare-sql` is what the features cost the database. Like `leasehold`, it runs the built
 * package (./built.ts).
 */
import { randomUUID } from 'node:crypto';
import { claim, ClaimOptionsCache, completeManyIfLeaseHeld } from './built.ts';
import { benchPool } from './db.ts';
import { leasehold } from './leasehold.ts';
import { QUEUE, type BenchSystem } from './types.ts';

const LOOPS_PER_PROCESS = 2;
/** The worker's drain batch (bench/systems/leasehold.ts: --batch-size 1000). */
const BATCH = 1000;
const KINDS = [{ kind: 'bench.noop', versions: [1] }];

export const floor: BenchSystem = {
  name: 'floor',
  settings: {
    enqueue: leasehold.settings.enqueue,
    drain: `${LOOPS_PER_PROCESS} loops per process of claim() of ${BATCH} and completeManyIfLeaseHeld() of the batch (Leasehold's statements, no worker)`,
    listen: 'n/a',
    poll: 'n/a',
  },
  unsupported: {
    listen: 'not measured: the floor is for throughput',
    poll: 'not measured: the floor is for throughput',
    hold: 'not measured: the floor is for throughput',
  },
  install: (url) => leasehold.install(url),
  enqueuer: (url, connections, wake) => leasehold.enqueuer(url, connections, wake),
  enqueueBulk: (url, seqs) => leasehold.enqueueBulk(url, seqs),
  retain: (url) => leasehold.retain(url),
  storedSql: leasehold.storedSql,
  unsettledSql: leasehold.unsettledSql,

  async startWorker(url, _mode, hooks) {
    const pool = benchPool(url, LOOPS_PER_PROCESS);
    const workerId = `floor-${randomUUID().slice(0, 8)}`;
    let stopping = false;
    async function loop() {
      // The cache knows options by identity: one object per loop, as the worker's producer.
      const cache = new ClaimOptionsCache();
      const options = { queues: [QUEUE], workerId, limit: BATCH, leaseSeconds: 30, kinds: KINDS };
      const client = await pool.connect(); // a connection per loop, as the worker's claim connection
      try {
        while (!stopping) {
          const jobs = await claim(client, options, cache);
          if (jobs.length === 0) {
            await new Promise((r) => setTimeout(r, 50));
            continue;
          }
          for (const job of jobs) hooks.onStart((job.payload as { seq: number }).seq);
          hooks.onHandled(jobs.length);
          await completeManyIfLeaseHeld(client, jobs);
        }
      } finally {
        client.release();
      }
    }
    const loops = Array.from({ length: LOOPS_PER_PROCESS }, () => loop());
    return {
      stop: async () => {
        stopping = true;
        await Promise.all(loops);
        await pool.end();
      },
    };
  },
};
