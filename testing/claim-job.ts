/**
 * The claim of one named job, for `runJob`: the library's claim (db/queue/claim.ts) takes the
 * next due jobs of a queue, never a given one, and a test wants to run the job it enqueued.
 * The statement is a transition of db/queue/transitions.ts (CLAIM_JOB: the claim with the job's
 * own ready row as its candidate); this file binds its parameters and maps the row.
 */
import { randomUUID } from 'node:crypto';
import { runText, toDate, type Executor } from '../db/queue/executor.ts';
import { mapClaimedJob, type ClaimColumnsRow, type ClaimedJob } from '../db/queue/job.ts';
import { CLAIM_JOB } from '../db/queue/transitions.ts';

/** Leases job `id` if it is ready, due, unlocked and its queue not paused; else null. */
export async function claimJobIfDue(
  executor: Executor,
  id: string,
  options: { workerId: string; leaseSeconds: number },
): Promise<ClaimedJob | null> {
  const leaseToken = randomUUID();
  const rows = await runText<ClaimColumnsRow>(executor, CLAIM_JOB, [
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
