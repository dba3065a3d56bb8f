/**
 * What each safety feature costs, measured on the claim + acknowledge loop alone (no worker
 * around it): Leasehold's own statements as shipped, then the same loop with one feature taken
 * away at a time. Two loops on one pool, claim batches of 500, no-op work, durable commits.
 */
import { migrateDatabase } from '../db/migrate/index.ts';
import { claim, completeManyIfLeaseHeld, enqueueMany } from '../db/queue/index.ts';
import { QUEUE } from './systems/index.ts';
import { benchPool } from './systems/db.ts';

export const COST_VARIANTS = {
  'as shipped':
    'claim() and completeManyIfLeaseHeld(): one token per claim, lease check, dashboard indexes; the done row records the completing attempt',
  'with an attempt row per completion':
    'the acknowledgement also writes a job_attempts row (the design before this one)',
  'without dashboard indexes':
    'the list indexes dropped (jobs_queue_idx, _kind_idx, _created_idx, _failure_class_idx, _failed_queue_idx): in schema v1 they cost enqueue, not the drain',
  'without the lease check':
    'the acknowledgement is a plain UPDATE by id: no token, no deadline (unfenced, like graphile-worker)',
} as const;
export type CostVariant = keyof typeof COST_VARIANTS;

const DONE = `state = 'done', lease_token = NULL, lease_until = NULL, finished_at = statement_timestamp(), updated_at = statement_timestamp()`;
const HISTORY = `INSERT INTO leasehold.job_attempts (job_id, attempt, queue, kind, worker_id, lease_token, started_at, ended_at, outcome, duration_ms)
  SELECT s.id, s.attempts, s.queue, s.kind, s.worker_id, s.token, s.started_at, statement_timestamp(), 'completed', 0 FROM settled s`;

export async function costLoop(url: string, variant: CostVariant, jobs: number): Promise<number> {
  await migrateDatabase(url);
  const pool = benchPool(url, 3);
  try {
    if (variant === 'without dashboard indexes')
      await pool.query(
        'DROP INDEX leasehold.jobs_queue_idx, leasehold.jobs_kind_idx, leasehold.jobs_created_idx, leasehold.jobs_failure_class_idx, leasehold.jobs_failed_queue_idx',
      );
    await enqueueMany(
      pool,
      Array.from({ length: jobs }, (_, seq) => ({ queue: QUEUE, kind: 'bench.noop', payload: { seq } })),
      { notify: false },
    );
    await pool.query('VACUUM ANALYZE leasehold.jobs, leasehold.ready_jobs, leasehold.leases');
    const options = { queues: [QUEUE], workerId: 'bench', limit: 500, leaseSeconds: 60 };

    async function settle(batch: { id: string; leaseToken: string }[]) {
      const ids = batch.map((j) => j.id);
      const token = batch[0]!.leaseToken;
      switch (variant) {
        case 'as shipped':
        case 'without dashboard indexes':
          return completeManyIfLeaseHeld(pool, batch);
        case 'with an attempt row per completion':
          return pool.query(
            `WITH settled AS (UPDATE leasehold.jobs j SET ${DONE} WHERE j.id = ANY($1::uuid[]) AND j.state = 'running' AND j.lease_token = $2
               AND j.lease_until - statement_timestamp() > interval '0'
               RETURNING j.id, j.attempts, j.queue, j.kind, j.worker_id, j.started_at, $2::uuid AS token) ${HISTORY}`,
            [ids, token],
          );
        case 'without the lease check':
          return pool.query(`UPDATE leasehold.jobs j SET ${DONE} WHERE j.id = ANY($1::uuid[])`, [ids]);
      }
    }

    async function loop() {
      for (;;) {
        const batch = await claim(pool, options);
        if (batch.length === 0) return;
        await settle(batch);
      }
    }
    const t0 = performance.now();
    await Promise.all([loop(), loop()]);
    return jobs / ((performance.now() - t0) / 1000);
  } finally {
    await pool.end();
  }
}
