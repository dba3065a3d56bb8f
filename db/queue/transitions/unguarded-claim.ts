/**
 * `unguarded_claim`, the failure harness's claim with its guard taken out, for the harness to
 * catch (`npx tsx chaos/run.ts --self-test`; workers/failpoints.ts). A named transition outside
 * EDGES on purpose: it breaks the state machine, so that the harness proves it notices. Only
 * workers/failpoints.ts (and tests) reach it, by its address rather than an import
 * (test/state-writes.test.ts fails when an entry/ file or any other product file does), and
 * only when a LEASEHOLD_FAILPOINTS names it: no setting, flag or default does. The package has
 * no copy (package.json's `files` leave it out, the build never reaches it;
 * test/unguarded-claim-reach.test.ts), so only a worker run from the repository's sources can.
 */
import { randomUUID } from 'node:crypto';
import { runText, toDate, type Executor } from '../executor.ts';
import { CLAIM_COLUMNS, mapClaimedJob, qualified, type ClaimColumnsRow, type ClaimedJob } from '../job.ts';
import { CLAIM_LEASE_ROWS, CLAIM_SET } from './claim.ts';

/**
 * The claim without `state = 'ready'`: it walks the jobs themselves, ready or running (the
 * library walks ready_jobs and re-checks `state = 'ready'`), so a job another attempt holds gets
 * a second lease while the first still holds. It keeps the rest of the layout's bookkeeping (the
 * ready rows of what it takes, a lease row; the claim's own SET), so that what fails is the
 * overlap and nothing else. $1 the queues, $2 the limit, then CLAIM_SET's $3 to $5.
 */
const UNGUARDED_CLAIM = `WITH candidate AS (
       SELECT j.id FROM leasehold.jobs j
       WHERE j.queue = ANY($1::text[]) AND j.state IN ('ready', 'running') AND j.run_at <= statement_timestamp()
         AND j.attempts < j.max_attempts
       ORDER BY j.claim_at, j.id
       LIMIT $2::int
       FOR UPDATE SKIP LOCKED
     ),
     ready_gone AS (DELETE FROM leasehold.ready_jobs r USING candidate c WHERE r.id = c.id RETURNING r.id),
     claimed AS (
       UPDATE leasehold.jobs j
       SET ${CLAIM_SET}
       WHERE j.id IN (SELECT id FROM candidate) AND (SELECT count(*) FROM ready_gone) >= 0
       RETURNING ${qualified(CLAIM_COLUMNS, 'j')}
     ),${CLAIM_LEASE_ROWS}
     SELECT * FROM claimed`;

/** Leases up to `limit` jobs of `queues`, ready or running. Unnamed: it is never prepared. */
export async function claimWithoutReadyGuard(
  executor: Executor,
  options: { queues: string[]; workerId: string; limit: number; leaseSeconds: number },
): Promise<ClaimedJob[]> {
  const leaseToken = randomUUID();
  const rows = await runText<ClaimColumnsRow>(executor, UNGUARDED_CLAIM, [
    options.queues,
    options.limit,
    leaseToken,
    options.leaseSeconds,
    options.workerId,
  ]);
  if (rows.length === 0) return [];
  const instant = {
    leaseToken,
    workerId: options.workerId,
    startedAt: toDate(rows[0]!.started_at).getTime(),
    leaseUntil: toDate(rows[0]!.lease_until).getTime(),
  };
  return rows.map((row) => mapClaimedJob(row, instant));
}
