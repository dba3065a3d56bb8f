/**
 * Wake-ups: an enqueue NOTIFYs its queues so that LISTENing workers claim at once instead of
 * at their next poll. Polling stays the correctness path: a lost wake-up only delays a job.
 *
 * The debounce state belongs to the pool the enqueues commit through (a WakeDebouncer per pool,
 * found through a WeakMap keyed by the pool, so it goes when the pool goes): two pools, in one
 * process or in two test files, never share a window. Within a pool it is keyed by queue: an
 * enqueue that sends no NOTIFY of its own still gets the window's trailing one, sent through the
 * same pool, so no wake-up depends on another pool staying open.
 *
 * Back-pressure: PostgreSQL's NOTIFY queue is bounded (8 GB by default; `max_notify_queue_pages`
 * on PostgreSQL 17+), and one LISTENing session that stops reading (a paused worker, a listener
 * idle in a transaction) keeps it from draining. Once it is full, every transaction that
 * NOTIFYs fails at COMMIT ("too many notifications in the NOTIFY queue"), and an enqueue in a
 * business transaction would take the business write down with it. So every wake-up NOTIFY is
 * guarded in its own statement: above NOTIFY_QUEUE_LIMIT of the queue in use it is not sent,
 * and workers find the jobs at their next poll.
 */
import { sql, type SQL } from 'drizzle-orm';
import type pg from 'pg';
import { ownPool, run, type Executor } from './executor.ts';

/** The channel that enqueue NOTIFYs (payload: the queue name) and workers LISTEN on. */
export const WAKE_CHANNEL = 'leasehold_jobs';

export interface EnqueueOptions {
  /**
   * Send a wake-up NOTIFY for the queues that got jobs (default true). PostgreSQL delivers it
   * at commit and folds repeats within one transaction, so a transaction wakes each queue
   * once. Turn it off where nothing LISTENs (transaction-pooled PgBouncer).
   *
   * On an executor that commits each statement by itself (a pool), wake-ups are debounced per
   * queue and pool: PostgreSQL serialises the commits of all notifying transactions, so a
   * NOTIFY per job would cut concurrent enqueue rates by more than half. The first enqueue in a
   * window of WAKE_DEBOUNCE_MS carries the NOTIFY; the others send none, and one bare NOTIFY
   * follows at the end of the window, after their commits. So every committed job is followed
   * by a wake-up within WAKE_DEBOUNCE_MS, with at most two notifying commits per window and pool.
   */
  notify?: boolean;
}

/**
 * The share of the server's NOTIFY queue in use (`pg_notification_queue_usage()`, 0 to 1) at
 * and above which enqueues send no wake-up. Half leaves the other half for what is in flight
 * between the check and the commits, and for other users of NOTIFY on the server.
 */
export const NOTIFY_QUEUE_LIMIT = 0.5;

/**
 * The guard, as SQL text: true while the NOTIFY queue has room for wake-ups. One function call
 * (a shared lock on the queue's head and tail) in the statement that NOTIFYs: no round trip.
 */
export const NOTIFY_QUEUE_HAS_ROOM = `pg_catalog.pg_notification_queue_usage() < ${NOTIFY_QUEUE_LIMIT}`;

/** Wake-ups through a pool are debounced per queue over this window. */
export const WAKE_DEBOUNCE_MS = 5;

export interface WakePlan {
  /** Whether the enqueue's own statement carries the NOTIFY. */
  inStatement: boolean;
  /** Call once the jobs are committed: schedules the trailing NOTIFY if one is owed. */
  afterCommit: () => void;
}

interface WakeWindow {
  lastSent: number;
  trailing: NodeJS.Timeout | null;
}

/** The wake-up debounce windows of one pool, by queue. */
export class WakeDebouncer {
  private readonly windows = new Map<string, WakeWindow>();

  /**
   * For enqueues through this pool: the statement NOTIFYs only as the first of its window;
   * `afterCommit` then schedules the trailing NOTIFY (run on `executor`) for those that did not.
   */
  plan(executor: Executor, queues: string[]): WakePlan {
    const now = performance.now();
    const skipped: string[] = [];
    let inStatement = false;
    for (const queue of queues) {
      let state = this.windows.get(queue);
      if (!state) {
        if (this.windows.size >= 10_000) this.windows.clear();
        this.windows.set(queue, (state = { lastSent: Number.NEGATIVE_INFINITY, trailing: null }));
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
          const state = this.windows.get(queue);
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
}

// Not shared state: each entry belongs to its pool and is collected with it.
const debouncers = new WeakMap<pg.Pool, WakeDebouncer>();

/** The debouncer of `pool`, made on its first enqueue. */
export function wakeDebouncerFor(pool: pg.Pool): WakeDebouncer {
  let debouncer = debouncers.get(pool);
  if (!debouncer) debouncers.set(pool, (debouncer = new WakeDebouncer()));
  return debouncer;
}

/**
 * Whether this enqueue's statement should NOTIFY. In a transaction (or on a client) always:
 * PostgreSQL folds the repeats at commit. Through a pool, as its pool's debouncer decides.
 */
export function planWake(executor: Executor, queues: string[], requested: boolean): WakePlan {
  const nothing = () => {};
  if (!requested) return { inStatement: false, afterCommit: nothing };
  const pool = ownPool(executor);
  if (!pool) return { inStatement: true, afterCommit: nothing };
  return wakeDebouncerFor(pool).plan(executor, queues);
}

/**
 * A bare wake-up NOTIFY for each of `queues`, unless the NOTIFY queue is past NOTIFY_QUEUE_LIMIT.
 *
 * @internal
 */
export function wakeStatement(queues: string[]): SQL {
  return sql`SELECT count(pg_notify(${WAKE_CHANNEL}, q)) FROM unnest(${sql.param(queues)}::text[]) q
             WHERE ${sql.raw(NOTIFY_QUEUE_HAS_ROOM)}`;
}
