/**
 * Each list state as a predicate over a `jobs` row: the SQL twin of subStateOf in db/states.ts,
 * which the dashboard's badge uses. The jobs list filters with it and the overview counts with
 * it, so a job is listed under the filter whose badge it shows and counted in that bucket.
 *
 * `now()` is the statement's transaction time and the badge's `now` the web process's clock, so
 * a job due within that gap can read `scheduled` in one and `ready` in the other for a moment.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { ListState } from '../states';

const PREDICATES: Record<ListState, () => SQL> = {
  ready: () => sql`(state = 'ready' AND attempts = 0 AND run_at <= now())`,
  scheduled: () => sql`(state = 'ready' AND attempts = 0 AND run_at > now())`,
  retrying: () => sql`(state = 'ready' AND attempts > 0)`,
  running: () => sql`(state = 'running' AND lease_until > now())`,
  lease_expired: () => sql`(state = 'running' AND lease_until <= now())`,
  done: () => sql`(state = 'done')`,
  dead: () => sql`(state = 'dead')`,
  cancelled: () => sql`(state = 'cancelled')`,
};

/** The jobs in list state `state` (a fresh SQL fragment each call). */
export function inListState(state: ListState): SQL {
  return PREDICATES[state]();
}
