/**
 * The lease keeper: renews the lease of every running attempt in one statement at a third of
 * the lease, and stops attempts that must not go on — a heartbeat the queue refused (lease lost:
 * expired, reaped, cancelled), no heartbeat through before the lease surely ended, or a handler
 * past its timeout (one sweep for all attempts instead of a timer each).
 *
 * It runs from the worker's start until after the last release at shutdown: heartbeats go on
 * through the grace period, so a handler finishing then is not reaped and run twice.
 */
import type { Logger } from 'pino';
import { heartbeatManyIfLeaseHeld, type Executor } from '../db/queue/index.ts';
import { type Attempt, AttemptAborted, leaseDeadlineFrom, leaseLost } from './attempt.ts';
import type { Failpoints } from './failpoints.ts';
import type { HandlerRegistry } from './handler.ts';
import { Loops } from './timing.ts';

export interface LeaseKeeperDeps {
  db: Executor;
  registry: HandlerRegistry;
  logger: Logger;
  failpoints?: Failpoints | undefined;
}

export class LeaseKeeper {
  private readonly loops: Loops;

  constructor(
    private readonly leaseSeconds: number,
    /** The attempts in flight (owned by the producer; read, never changed here). */
    private readonly attempts: ReadonlySet<Attempt>,
    private readonly deps: LeaseKeeperDeps,
  ) {
    this.loops = new Loops(deps.logger);
  }

  start(): void {
    this.loops.every(Math.max(250, (this.leaseSeconds * 1000) / 3), () => this.heartbeatAll(), 'heartbeat');
    this.loops.every(this.timeoutSweepMs(), () => this.sweepTimeouts(), 'timeout sweep');
  }

  /** Stops both loops; resolves once a heartbeat in flight has returned. */
  stop(): Promise<void> {
    return this.loops.stop();
  }

  /** How often overruns are looked for: a tenth of the shortest handler timeout, 5–100 ms. */
  timeoutSweepMs(): number {
    const { registry } = this.deps;
    const timeouts = registry.kinds().map((kind) => registry.get(kind)?.timeoutMs ?? Number.POSITIVE_INFINITY);
    return Math.min(100, Math.max(5, Math.min(...timeouts) / 10));
  }

  /** Stops every handler past its timeout. */
  sweepTimeouts(): void {
    const now = performance.now();
    for (const entry of this.attempts) {
      // timeoutAt is finite only while a handler runs, so the entry has one.
      if (now >= entry.timeoutAt && !entry.stopped && entry.handler) {
        entry.stop(
          new AttemptAborted('timeout', `${entry.job.kind} did not finish within ${entry.handler.timeoutMs} ms`),
        );
      }
    }
  }

  /** Renews every running attempt's lease in one statement. */
  async heartbeatAll(): Promise<void> {
    // Not past its timeout: a wedged handler the sweep could not stop yet keeps no lease alive.
    const entries = [...this.attempts].filter((e) => !e.stopped && performance.now() < e.timeoutAt);
    if (entries.length === 0) return;
    const sent = performance.now();
    this.deps.failpoints?.hit('in_heartbeat');
    try {
      const outcomes = await heartbeatManyIfLeaseHeld(
        this.deps.db,
        entries.map((e) => e.job),
        { leaseSeconds: this.leaseSeconds },
      );
      outcomes.forEach((outcome, i) => {
        const entry = entries[i]!;
        if (outcome.applied) {
          entry.job.leaseUntil = outcome.leaseUntil;
          entry.leaseDeadline = leaseDeadlineFrom(sent, this.leaseSeconds);
        } else entry.stop(leaseLost());
      });
    } catch (error) {
      this.deps.logger.warn({ err: error, jobs: entries.length }, 'heartbeat failed; retrying at the next beat');
      // Without a heartbeat the lease runs out on its own: stop handlers whose lease surely
      // ended, because the reaper may already have handed their jobs to another worker.
      const now = performance.now();
      for (const entry of entries) {
        if (now >= entry.leaseDeadline) {
          entry.stop(new AttemptAborted('lease_lost', 'no heartbeat got through before the lease ended'));
        }
      }
    }
  }
}
