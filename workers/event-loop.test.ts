import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { until } from '../test/wait.ts';
import { EventLoopMonitor, lagWarnMs } from './event-loop.ts';
import { createMetrics } from './metrics.ts';

function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {}
}

function monitored(warnAfterMs: number, running: string[]) {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const metrics = createMetrics();
  const monitor = new EventLoopMonitor(warnAfterMs, { logger, metrics, running: () => running });
  return { monitor, metrics, lines };
}

const gauge = async (metrics: ReturnType<typeof createMetrics>, name: string) =>
  (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name)?.values[0]?.value ?? Number.NaN;

describe('the event-loop lag monitor', () => {
  it('shows a 320 ms busy loop as lag of at least 0.3 s, and warns naming the running kinds', async () => {
    const { monitor, metrics, lines } = monitored(200, ['report.render', 'mail.send']);
    monitor.start();
    try {
      await new Promise((r) => setTimeout(r, 60)); // a few samples of a free loop first
      busy(320);
      const warning = await until('the warning', async () => lines.find((l) => l.runningKinds));
      expect(warning.lagMs as number).toBeGreaterThanOrEqual(300);
      expect(warning.runningKinds).toEqual(['mail.send', 'report.render']);
      expect(warning.msg).toMatch(/^event loop blocked for \d+ ms/);
      expect(monitor.lag().maxLagMs).toBeGreaterThanOrEqual(300);
      expect(monitor.lag().blocked).toBe(1);
      expect(await gauge(metrics, 'leasehold_event_loop_lag_max_seconds')).toBeGreaterThanOrEqual(0.3);
      // The scrape reset the worst-since-scrape figure; the blocked count stays.
      expect(await gauge(metrics, 'leasehold_event_loop_lag_max_seconds')).toBeLessThan(0.3);
      expect(await gauge(metrics, 'leasehold_event_loop_blocked_total')).toBe(1);
    } finally {
      monitor.stop();
    }
  });

  it('stays quiet while the loop is free', async () => {
    const { monitor, metrics, lines } = monitored(200, []);
    monitor.start();
    await new Promise((r) => setTimeout(r, 300));
    monitor.stop();
    expect(lines).toEqual([]);
    expect(monitor.lag().maxLagMs).toBeLessThan(200);
    expect(await gauge(metrics, 'leasehold_event_loop_blocked_total')).toBe(0);
  });

  it('warns at a third of the lease, at most a second', () => {
    expect(lagWarnMs(30)).toBe(1000);
    expect(lagWarnMs(2)).toBeCloseTo(666.7, 0);
  });
});
