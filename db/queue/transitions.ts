/**
 * Transitions: every statement that writes a job's state, and nothing else does. The callers
 * (claim.ts, settle.ts, reap.ts, operator.ts, testing/claim-job.ts) validate input, pick
 * parameters and map rows; the SQL is in transitions/ (one file per flow, with this file as its
 * face), with its guards written once (transitions/guards.ts). test/state-writes.test.ts fails
 * when any other product file writes a job's state, and keeps transitions/ behind this face.
 *
 * Invariants (docs/contract.md, docs/design/schema-v1.md):
 * - every transition is a compare-and-set on the state it read: `state = 'ready'` for a
 *   claim, LEASE_HELD (running, this token, deadline not passed) for a settlement, an expired
 *   deadline for the reaper, a terminal state for an operator's retry;
 * - every ready job has a `ready_jobs` row. Enqueue writes it (the INSERT trigger
 *   `jobs_inserted_ready_rows`); every UPDATE into `ready` writes it through the row trigger
 *   `jobs_ready_row`, ours and anyone's. A claim deletes the rows it takes; a row whose job
 *   is not ready (cancelled, rescheduled) is skipped by the claim's guard and deleted;
 * - every running job is in the `leases` row of its claim (token, queue), whose deadline is
 *   never later than the job's effective one and whose `running` counts the jobs not yet
 *   settled. Each statement that ends attempts counts them down (LEASE_COUNTDOWN); the reaper,
 *   which walks the lease rows by deadline, repairs a count that writes from outside put wrong;
 * - a running job's effective deadline is its own `lease_until`, or its worker's lease
 *   (`worker_leases`) while that covers the job's claim (transitions/guards.ts, leaseHeld);
 *   a worker lease that ran out is never renewed (a new one covers only later claims), and the
 *   reaper locks the ones that ran out before it ends their jobs;
 * - each statement that finishes jobs adds them to `finished_rollup` (ROLLUP);
 * - ending an attempt other than by completing it writes its `job_attempts` row in the same
 *   statement (history.ts).
 *
 * Lock order, the same in every statement: a ready row before its job (claim, operator
 * cancel), a job before its lease row (settlements, operator cancel). The reaper locks lease
 * rows first but takes jobs with SKIP LOCKED, so it never waits on a job.
 *
 * Time is statement_timestamp(), not now(): the same inside a caller's transaction as outside.
 */
import type { JobState } from '../states.ts';

// The statements, by flow (transitions/: guards.ts, claim.ts, settle.ts, maintenance.ts); this
// file is their one face: the queue's callers import them from here, never from transitions/.
export { leaseHeld } from './transitions/guards.ts';
/** @internal: a drizzle fragment, kept out of the published declarations. */
export { leaseHeldSql } from './transitions/guards.ts';
export {
  CLAIM_JOB,
  claimText,
  limitedClaimText,
  limitRate,
  limitRunning,
  limitStarted,
  type ClaimShape,
} from './transitions/claim.ts';
export { groupedClaimText } from './transitions/claim-grouped.ts';
export { COMPLETE_MANY, completeManyText, JOB_ENDED_CHANNEL } from './transitions/settle.ts';
/** @internal: statement builders (drizzle fragments), kept out of the published declarations. */
export {
  failStatement,
  heartbeatStatement,
  releaseStatement,
  snoozeStatement,
  workerHeartbeatStatement,
} from './transitions/settle.ts';
/** @internal: statement builders (drizzle fragments), kept out of the published declarations. */
export { deadIfKindUnrunStatement, reapStatement } from './transitions/maintenance.ts';

/** One edge of the state machine: docs/state-machine.md's diagram is generated from this table. */
export interface Edge {
  from: JobState | null;
  to: JobState | null;
  /** The exported function that makes the move, and when. */
  by: string;
}

/** Every move a job can make, and who makes it. `null` is outside the table (enqueue, retention). */
export const EDGES: readonly Edge[] = [
  { from: null, to: 'ready', by: 'enqueue / enqueueMany' },
  { from: 'ready', to: 'running', by: 'claim (due, queue not paused, FOR UPDATE SKIP LOCKED)' },
  { from: 'ready', to: 'running', by: 'claim with grouped (a grouped job, its group in turn, FOR UPDATE SKIP LOCKED)' },
  { from: 'running', to: 'done', by: 'completeIfLeaseHeld (token, lease_until > statement_timestamp())' },
  { from: 'running', to: 'ready', by: 'failIfLeaseHeld, retryable class and attempts left' },
  { from: 'running', to: 'dead', by: 'failIfLeaseHeld, permanent/validation, attempts spent or max age' },
  { from: 'running', to: 'cancelled', by: 'failIfLeaseHeld with class cancelled' },
  { from: 'running', to: 'ready', by: 'releaseIfLeaseHeld (graceful shutdown, attempt not charged: released + 1)' },
  {
    from: 'running',
    to: 'ready',
    by: 'snoozeIfLeaseHeld (the handler waits, not charged: released + 1, under the snooze cap)',
  },
  {
    from: 'running',
    to: 'ready',
    by: 'reapExpiredLeases (lease_until <= statement_timestamp(), attempts left under the handler cap)',
  },
  { from: 'running', to: 'dead', by: 'reapExpiredLeases (no attempts left under the handler cap, or max age)' },
  { from: 'ready', to: 'dead', by: 'deadIfKindUnrun (no live worker ran its kind version for the grace period)' },
  {
    from: 'running',
    to: 'cancelled',
    by: 'cancelIfUnchanged (operator, with the token they saw; leasehold.operator_cancel)',
  },
  { from: 'ready', to: 'cancelled', by: 'cancelIfUnchanged (operator; leasehold.operator_cancel)' },
  { from: 'dead', to: 'ready', by: 'retryIfTerminal (operator; leasehold.operator_retry)' },
  { from: 'cancelled', to: 'ready', by: 'retryIfTerminal (operator; leasehold.operator_retry)' },
  {
    from: 'ready',
    to: 'ready',
    by: 'runNowIfUnchanged (operator: a scheduled or retrying job as seen, due now; leasehold.operator_run_now)',
  },
  {
    from: 'ready',
    to: 'ready',
    by: 'rescheduleIfUnchanged (operator: a scheduled or retrying job as seen, a new run time; leasehold.operator_reschedule)',
  },
  {
    from: 'ready',
    to: 'ready',
    by: 'setPriorityIfUnchanged (operator: as seen, claim_at moved with it; leasehold.operator_set_priority)',
  },
  {
    from: null,
    to: 'ready',
    by: 'rerunCopy (operator: a copy of a done job of a re-run-safe kind, rerun_of it; leasehold.operator_rerun)',
  },
  { from: 'done', to: null, by: 'removeExpiredHistory' },
  { from: 'dead', to: null, by: 'removeExpiredHistory' },
  {
    from: 'dead',
    to: null,
    by: 'purgeDeadJobs (admin: the previewed set, finished before a date; leasehold.operator_purge_dead)',
  },
  { from: 'cancelled', to: null, by: 'removeExpiredHistory' },
];

/** The mermaid diagram of EDGES (docs/state-machine.md; `npm run docs:states` writes it). */
export function stateDiagram(): string {
  const node = (s: JobState | null) => s ?? '[*]';
  return ['stateDiagram-v2', ...EDGES.map((e) => `    ${node(e.from)} --> ${node(e.to)}: ${e.by}`)].join('\n');
}

// ---------------------------------------------------------------------------------------------
// Operator actions (dead | cancelled → ready, ready → cancelled, running → cancelled with the
// token the operator saw) are the SECURITY DEFINER functions leasehold.operator_retry and
// leasehold.operator_cancel (drizzle/0011), so that the dashboard's role needs no write on the
// tables: a call of one is a transition of EDGES above (retryIfTerminal, cancelIfUnchanged),
// covered by the model test (model.test.ts) like the statements here. Their bodies are the
// former transitions.ts's OPERATOR_RETRY and operatorCancel CTEs with the audit row, unchanged.
