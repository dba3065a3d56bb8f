/**
 * The event-loop lag monitor: how late the main thread's loop turns. Heartbeats, the timeout
 * sweep and settlements all run on that loop, so a handler that computes without yielding holds
 * all of them: past a lease without a heartbeat, the reaper hands the job to another worker
 * and it runs twice (docs/workers.md, "A blocked event loop").
 *
 * A timer sampler, not a histogram of perf_hooks' monitorEventLoopDelay: a timer re-armed every
 * `intervalMs` that fires late by `lag` ms saw the loop held that long, and it can say so at once
 * after the block, naming the kinds that were running. The lag is low by at most `intervalMs`
 * (a block that began just after a sample); one timer, unref'd, so it never keeps a process up.
 *
 * - `leasehold_event_loop_lag_seconds`: the last sample's lag;
 * - `leasehold_event_loop_lag_max_seconds`: the worst since the last scrape (reset by it);
 * - `leasehold_event_loop_blocked_total`: samples over the warning threshold;
 * - a warn line `event loop blocked` at each such sample, with the lag and the running kinds.
 */
import type { Logger } from 'pino';
import type { EventLoopLag } from './health.ts';
import type { WorkerMetrics } from './metrics.ts';

/** How often the loop is sampled. */
export const LAG_SAMPLE_MS = 20;

/** The warning threshold for a lease: a third of it (a heartbeat's interval), at most a second. */
export function lagWarnMs(leaseSeconds: number): number {
  return Math.min(1000, (leaseSeconds * 1000) / 3);
}

export interface EventLoopMonitorDeps {
  logger: Logger;
  metrics?: WorkerMetrics | undefined;
  /** The kinds of the attempts running now (named in the warning). */
  running: () => Iterable<string>;
}

// Declared in health.ts, which reports it, so that health.ts imports nothing of workers/.
export type { EventLoopLag } from './health.ts';

export class EventLoopMonitor {
  private timer: NodeJS.Timeout | null = null;
  private armedAt = 0;
  private lagMs = 0;
  private maxLagMs = 0;
  private blocked = 0;

  constructor(
    private readonly warnAfterMs: number,
    private readonly deps: EventLoopMonitorDeps,
    private readonly intervalMs = LAG_SAMPLE_MS,
  ) {}

  start(): void {
    if (this.timer) return;
    this.arm();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  lag(): EventLoopLag {
    return { lagMs: Math.round(this.lagMs), maxLagMs: Math.round(this.maxLagMs), blocked: this.blocked };
  }

  private arm(): void {
    this.armedAt = performance.now();
    this.timer = setTimeout(() => this.sample(), this.intervalMs);
    this.timer.unref();
  }

  private sample(): void {
    const lag = Math.max(0, performance.now() - this.armedAt - this.intervalMs);
    this.lagMs = lag;
    this.maxLagMs = Math.max(this.maxLagMs, lag);
    const { metrics } = this.deps;
    metrics?.eventLoopLag.set(lag / 1000);
    metrics?.eventLoopLagMax.observe(lag / 1000);
    if (lag >= this.warnAfterMs) {
      this.blocked += 1;
      metrics?.eventLoopBlocked.inc();
      // Read only now, not at every sample (thousands of attempts in flight, 50 samples a second).
      // A handler that blocked and returned is still here: its settlement waits on I/O.
      const kinds = [...new Set(this.deps.running())].sort();
      this.deps.logger.warn(
        { lagMs: Math.round(lag), thresholdMs: this.warnAfterMs, runningKinds: kinds },
        `event loop blocked for ${Math.round(lag)} ms: heartbeats and timeouts waited (running: ${kinds.join(', ') || 'nothing'}); a CPU-bound handler can be declared isolated: 'thread'`,
      );
    }
    this.arm();
  }
}
