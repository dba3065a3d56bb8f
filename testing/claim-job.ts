/**
 * The claim of one named job, for `runJob`: the library's claim (db/queue/claim.ts) takes the
 * next due jobs of a queue, never a given one, and a test wants to run the job it enqueued.
 *
 * It is the claim with one difference, the candidate: the job's own ready row (found by the
 * job's queue and claim key, the ready rows' index) instead of a walk of the queue. The rest is
 * the claim's, shared with it: the same guards (the ready row locked FOR UPDATE SKIP LOCKED and
 * deleted, the job updated only while `ready` and due, nothing from a paused queue), the same
 * SET (CLAIM_SET: attempts + 1, a fresh token, the deadline in database time) and the same lease
 * row (CLAIM_LEASE_ROWS), so settlement, heartbeats and the reaper see an ordinary attempt.
 * Like the failure harness's claim (workers/failpoints.ts), it lives beside its only caller.
 */
import { randomUUID } from 'node:crypto';
import { runText, toDate, type Executor } from '../db/queue/executor.ts';
import { CLAIM_COLUMNS, mapClaimedJob, qualified, type ClaimColumnsRow, type ClaimedJob } from '../db/queue/job.ts';
import { CLAIM_LEASE_ROWS, CLAIM_SET } from '../db/queue/transitions.ts';

// $1 the job id, $2 the limit (1), $3 token, $4 lease seconds, $5 worker id (CLAIM_SET's).
const CLAIM_ONE = `
    WITH candidate AS (
      SELECT r.ctid
      FROM leasehold.jobs t
      JOIN leasehold.ready_jobs r ON r.queue = t.queue AND r.claim_at = t.claim_at AND r.id = t.id
      WHERE t.id = $1::uuid
        AND r.claim_at <= statement_timestamp() AND r.run_at <= statement_timestamp()
        AND NOT EXISTS (SELECT 1 FROM leasehold.queues q WHERE q.name = r.queue AND q.paused)
      LIMIT $2::int
      FOR UPDATE OF r SKIP LOCKED
    ),
    taken AS (
      DELETE FROM leasehold.ready_jobs r WHERE r.ctid = ANY(ARRAY(SELECT ctid FROM candidate)) RETURNING r.id
    ),
    claimed AS (
      UPDATE leasehold.jobs j
      SET ${CLAIM_SET}
      WHERE j.id = ANY(ARRAY(SELECT id FROM taken)) AND j.state = 'ready' AND j.run_at <= statement_timestamp()
      RETURNING ${qualified(CLAIM_COLUMNS, 'j')}
    ),${CLAIM_LEASE_ROWS}
    SELECT * FROM claimed`;

/** Leases job `id` if it is ready, due, unlocked and its queue not paused; else null. */
export async function claimJobIfDue(
  executor: Executor,
  id: string,
  options: { workerId: string; leaseSeconds: number },
): Promise<ClaimedJob | null> {
  const leaseToken = randomUUID();
  const rows = await runText<ClaimColumnsRow>(executor, CLAIM_ONE, [
    id,
    1,
    leaseToken,
    options.leaseSeconds,
    options.workerId,
  ]);
  const row = rows[0];
  if (!row) return null;
  return mapClaimedJob(row, {
    leaseToken,
    workerId: options.workerId,
    startedAt: toDate(row.started_at).getTime(),
    leaseUntil: toDate(row.lease_until).getTime(),
  });
}
