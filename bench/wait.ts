/**
 * waitForJob's latency (docs/jobs.md, "Results, progress and waiting"): from the acknowledgement
 * that completes an awaitable job to the waiting caller's return, one job at a time. The waiter
 * LISTENs on a connection of its own pool; the acknowledgement runs on another (a worker's),
 * measured from the moment its statement returned (the commit has happened by then) to the
 * moment waitForJob returned with the result. The NOTIFY travels at the commit, so a wake-up can
 * come back before the acknowledgement's own reply does: those count as 0.
 */
import pg from 'pg';
import { claim, completeManyIfLeaseHeld, enqueue, storableResult, waitForJob } from '../db/queue/index.ts';

export async function waitLatencies(url: string, samples: number): Promise<number[]> {
  const waiters = new pg.Pool({ connectionString: url, max: 2 });
  const worker = new pg.Pool({ connectionString: url, max: 2 });
  const latencies: number[] = [];
  try {
    for (let i = 0; i < samples; i++) {
      const { id } = await enqueue(
        worker,
        { queue: 'bench-wait', kind: 'bench.wait', awaitable: true },
        { notify: false },
      );
      const [job] = await claim(worker, { queues: ['bench-wait'], workerId: 'bench-wait', limit: 1 });
      if (!job || job.id !== id) throw new Error('bench wait: the claim did not take the job just enqueued');
      let returned = 0;
      const waiting = waitForJob(waiters, id, { timeoutMs: 10_000 }).then((outcome) => {
        returned = performance.now();
        if (!outcome.ended) throw new Error('bench wait: waitForJob timed out');
        return outcome;
      });
      // Let the waiter reach its LISTEN and its first read before the job ends.
      await new Promise((r) => setTimeout(r, 20));
      await completeManyIfLeaseHeld(worker, [
        { id, leaseToken: job.leaseToken, awaitable: true, result: storableResult({ i }) },
      ]);
      const acknowledged = performance.now();
      const outcome = await waiting;
      if (!outcome.ended || outcome.job.state !== 'done') throw new Error('bench wait: the job did not end done');
      latencies.push(Math.max(0, returned - acknowledged));
    }
  } finally {
    await Promise.all([waiters.end(), worker.end()]);
  }
  return latencies;
}
