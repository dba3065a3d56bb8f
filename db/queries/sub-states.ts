/**
 * Each list state as a predicate over a `jobs` row: the SQL twin of subStateOf in db/states.ts,
 * which the dashboard's badge uses. The jobs list filters with it and the overview counts with
 * it, so a job is listed under the filter whose badge it shows and counted in that bucket.
 *
 * `now()` is the statement's transaction time and the badge's `now` the web process's clock, so
 * a job due within that gap can read `scheduled` in one and `ready` in the other for a moment.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { ListState } from '../states.ts';

/**
 * A running job's effective deadline over a `jobs` row: its own `lease_until`, or its worker's
 * lease while that covers the job's claim (drizzle/0015; the settlements' guard is the same
 * condition, db/queue/transitions/guards.ts). Every reader of a job's deadline uses this.
 */
export const effectiveLeaseUntil = (): SQL => sql`leasehold.effective_lease_until(lease_until, lease_token, queue)`;

/** The sub-states of `ready` over columns a `ready_jobs` row has too (every such row is ready). */
const READY_SPLIT: Record<'ready' | 'scheduled' | 'retrying', () => SQL> = {
  ready: () => sql`(attempts = 0 AND run_at <= now())`,
  scheduled: () => sql`(attempts = 0 AND run_at > now())`,
  retrying: () => sql`(attempts > 0)`,
};

const PREDICATES: Record<ListState, () => SQL> = {
  ready: () => sql`(state = 'ready' AND ${READY_SPLIT.ready()})`,
  scheduled: () => sql`(state = 'ready' AND ${READY_SPLIT.scheduled()})`,
  retrying: () => sql`(state = 'ready' AND ${READY_SPLIT.retrying()})`,
  running: () => sql`(state = 'running' AND ${effectiveLeaseUntil()} > now())`,
  lease_expired: () => sql`(state = 'running' AND ${effectiveLeaseUntil()} <= now())`,
  done: () => sql`(state = 'done')`,
  // Dead and cancelled jobs always have a class (CHECK jobs_ended_class_check): saying so lets
  // the planner walk the class indexes instead of every job.
  dead: () => sql`(state = 'dead' AND failure_class IS NOT NULL)`,
  cancelled: () => sql`(state = 'cancelled' AND failure_class IS NOT NULL)`,
};

/** The jobs in list state `state` (a fresh SQL fragment each call). */
export function inListState(state: ListState): SQL {
  return PREDICATES[state]();
}

/** The same split over `ready_jobs` rows, for the overview's counts. */
export function readyRowIn(state: 'ready' | 'scheduled' | 'retrying'): SQL {
  return READY_SPLIT[state]();
}
