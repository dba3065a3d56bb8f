/**
 * Wake-ups: an enqueue NOTIFYs its queues so that LISTENing workers claim at once instead of
 * at their next poll. Polling stays the correctness path: a lost wake-up only delays a job.
 *
 * The debounce state is per process and keyed by queue alone, whichever pool an enqueue used:
 * an enqueue that sends no NOTIFY of its own still gets the window's trailing one, so sharing
 * the window across pools loses no wake-up.
 */
import { sql, type SQL } from 'drizzle-orm';
import { autocommits, run, type Executor } from './executor';

/** The channel that enqueue NOTIFYs (payload: the queue name) and workers LISTEN on. */
export const WAKE_CHANNEL = 'leasehold_jobs';

export interface EnqueueOptions {
  /**
   * Send a wake-up NOTIFY for the queues that got jobs (default true). PostgreSQL delivers it
   * at commit and folds repeats within one transaction, so a transaction wakes each queue
   * once. Turn it off where nothing LISTENs (transaction-pooled PgBouncer).
   *
   * On an executor that commits each statement by itself (a pool), wake-ups are debounced per
   * queue and process: PostgreSQL serialises the commits of all notifying transactions, so a
   * NOTIFY per job would cut concurrent enqueue rates by more than half. The first enqueue in a
   * window of WAKE_DEBOUNCE_MS carries the NOTIFY; the others send none, and one bare NOTIFY
   * follows at the end of the window, after their commits. So every committed job is followed
   * by a wake-up within WAKE_DEBOUNCE_MS, with at most two notifying commits per window.
   */
  notify?: boolean;
}

/** Wake-ups through a pool are debounced per queue over this window. */
export const WAKE_DEBOUNCE_MS = 5;

interface WakeState {
  lastSent: number;
  trailing: NodeJS.Timeout | null;
}
const wakes = new Map<string, WakeState>();

/**
 * Whether this enqueue's statement should NOTIFY. For a pool, it does only as the first of its
 * window; `afterCommit` then schedules the trailing NOTIFY for the enqueues that did not.
 */
export function planWake(
  executor: Executor,
  queues: string[],
  requested: boolean,
): { inStatement: boolean; afterCommit: () => void } {
  const nothing = () => {};
  if (!requested) return { inStatement: false, afterCommit: nothing };
  if (!autocommits(executor)) return { inStatement: true, afterCommit: nothing };
  const now = performance.now();
  const skipped: string[] = [];
  let inStatement = false;
  for (const queue of queues) {
    let state = wakes.get(queue);
    if (!state) {
      if (wakes.size >= 10_000) wakes.clear();
      wakes.set(queue, (state = { lastSent: Number.NEGATIVE_INFINITY, trailing: null }));
    }
    if (state.trailing === null && now - state.lastSent >= WAKE_DEBOUNCE_MS) {
      state.lastSent = now;
      inStatement = true;
    } else skipped.push(queue);
  }
  // Queues woken in the statement anyway need no trailing NOTIFY.
  const trailingFor = inStatement ? [] : skipped;
  return {
    inStatement,
    afterCommit: () => {
      for (const queue of trailingFor) {
        const state = wakes.get(queue);
        if (!state || state.trailing) continue;
        const delay = Math.max(0, state.lastSent + WAKE_DEBOUNCE_MS - performance.now());
        state.trailing = setTimeout(() => {
          state.trailing = null;
          state.lastSent = performance.now();
          // A lost wake-up only delays the job until the next poll.
          run(executor, wakeStatement([queue])).catch(() => {});
        }, delay);
        state.trailing.unref();
      }
    },
  };
}

/** A bare wake-up NOTIFY for each of `queues`. */
export function wakeStatement(queues: string[]): SQL {
  return sql`SELECT count(pg_notify(${WAKE_CHANNEL}, q)) FROM unnest(${sql.param(queues)}::text[]) q`;
}
