/**
 * Prometheus metrics for one worker process (prom-client), and the HTTP listeners that serve
 * them and the health check: `/metrics` on 127.0.0.1 unless told otherwise (what it shows is
 * for this host's scraper), `/healthz` on its own listener that may face every interface (a
 * load balancer or an orchestrator probes it from outside).
 */
import http from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { HealthSource } from './health.ts';

export type WorkerMetrics = ReturnType<typeof createMetrics>;

export function createMetrics(registry = new Registry()) {
  collectDefaultMetrics({ register: registry, prefix: 'leasehold_worker_' });
  const labels = ['queue', 'kind'] as const;
  // The worst event-loop lag since the last scrape, reported and reset by that scrape.
  let lagMaxSinceScrape = 0;
  const counter = (name: string, help: string) =>
    new Counter({ name, help, labelNames: labels, registers: [registry] });
  return {
    registry,
    claimed: new Counter({
      name: 'leasehold_jobs_claimed_total',
      help: 'Jobs claimed (attempts started).',
      labelNames: ['queue'],
      registers: [registry],
    }),
    completed: counter('leasehold_jobs_completed_total', 'Attempts completed (job done).'),
    failed: new Counter({
      name: 'leasehold_jobs_failed_total',
      help: 'Attempts failed, by failure class.',
      labelNames: [...labels, 'failure_class'],
      registers: [registry],
    }),
    leasesLost: new Counter({
      name: 'leasehold_leases_lost_total',
      help: 'Attempts that lost their lease (expired, reaped, cancelled) and settled nothing.',
      labelNames: labels,
      registers: [registry],
    }),
    released: counter('leasehold_jobs_released_total', 'Attempts released at shutdown.'),
    snoozed: counter(
      'leasehold_jobs_snoozed_total',
      'Attempts that snoozed: the job waits, the attempt not spent (docs/jobs.md, "Snooze").',
    ),
    reaped: new Counter({
      name: 'leasehold_leases_reaped_total',
      help: 'Expired leases ended by this process’s reaper.',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    handlerDuration: new Histogram({
      name: 'leasehold_handler_duration_seconds',
      help: 'Handler run time by outcome.',
      labelNames: [...labels, 'outcome'],
      buckets: [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers: [registry],
    }),
    inFlight: new Gauge({
      name: 'leasehold_jobs_in_flight',
      help: 'Attempts running in this process.',
      registers: [registry],
    }),
    stoppedRunning: new Gauge({
      name: 'leasehold_attempts_stopped_running',
      help: 'Stopped attempts (timeout, lease lost, shutdown) whose handler ignores its signal and still runs: each keeps its slot until it ends or is abandoned.',
      registers: [registry],
    }),
    abandoned: new Counter({
      name: 'leasehold_attempts_abandoned_total',
      help: 'Stopped attempts whose handler was still running at the abandon limit: their slot was freed with the handler still going.',
      labelNames: labels,
      registers: [registry],
    }),
    heldBack: new Counter({
      name: 'leasehold_attempts_held_back_total',
      help: 'Claimed jobs handed straight back (not charged) because an earlier execution of the job still runs in this process.',
      labelNames: labels,
      registers: [registry],
    }),
    notifyQueueUsage: new Gauge({
      name: 'leasehold_notify_queue_usage',
      help: 'Share of the server’s NOTIFY queue in use (0 to 1), sampled by the LISTEN connection; at 0.5 or more enqueues send no wake-ups.',
      registers: [registry],
    }),
    startDelay: new Histogram({
      name: 'leasehold_enqueue_to_start_seconds',
      help: 'From a job becoming due (enqueue, or its run_at) to its first attempt starting.',
      labelNames: ['queue'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers: [registry],
    }),
    eventLoopLag: new Gauge({
      name: 'leasehold_event_loop_lag_seconds',
      help: 'How late the main thread’s event loop turned at the last sample (every 20 ms); heartbeats wait that long.',
      registers: [registry],
    }),
    eventLoopLagMax: {
      observe(seconds: number) {
        lagMaxSinceScrape = Math.max(lagMaxSinceScrape, seconds);
      },
      gauge: new Gauge({
        name: 'leasehold_event_loop_lag_max_seconds',
        help: 'The worst event-loop lag since the last scrape (each scrape resets it): a handler that blocks the loop past a third of the lease delays heartbeats.',
        registers: [registry],
        collect() {
          this.set(lagMaxSinceScrape);
          lagMaxSinceScrape = 0;
        },
      }),
    },
    eventLoopBlocked: new Counter({
      name: 'leasehold_event_loop_blocked_total',
      help: 'Event-loop lag samples over the warning threshold (a third of the lease, at most 1 s).',
      registers: [registry],
    }),
    isolatedTerminated: new Counter({
      name: 'leasehold_isolated_terminated_total',
      help: 'Threads of isolated handlers terminated because their attempt was stopped (timeout, lease lost, shutdown).',
      labelNames: [...labels, 'reason'],
      registers: [registry],
    }),
  };
}

/** Where the CLI's metrics listen unless told otherwise: this host only (scrapers run beside it). */
export const DEFAULT_METRICS_HOST = '127.0.0.1';
/** Where the CLI's health endpoint listens unless told otherwise: every interface (probes come from outside). */
export const DEFAULT_HEALTH_HOST = '0.0.0.0';

/**
 * Serves `/metrics` (Prometheus text) on `host:port`, and `/healthz` too when given a health
 * source (one listener for both, for a setup with one port). Port 0 takes any free port.
 */
export function serveMetrics(
  port: number,
  host: string,
  registry: Registry,
  options: { health?: HealthSource | undefined } = {},
): Promise<http.Server> {
  const health = options.health;
  return listen(
    'metrics',
    port,
    host,
    metricsRoute(registry),
    health ? (res) => void answerHealth(health, res) : undefined,
  );
}

/**
 * Serves `/healthz` alone on `host:port`: 200 with the JSON report when the worker is healthy
 * (its database answers, its claim loop ticks: workers/health.ts), 503 with the same report,
 * `reasons` filled in, when not. Port 0 takes any free port.
 */
export function serveHealth(port: number, host: string, source: HealthSource): Promise<http.Server> {
  return listen('health', port, host, undefined, (res) => void answerHealth(source, res));
}

type Route = (res: http.ServerResponse) => void;

function metricsRoute(registry: Registry): Route {
  return (res) => {
    registry.metrics().then(
      (text) => {
        res.writeHead(200, { 'content-type': registry.contentType });
        res.end(text);
      },
      (error: Error) => {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`metrics failed: ${error.message}`);
      },
    );
  };
}

async function answerHealth(source: HealthSource, res: http.ServerResponse): Promise<void> {
  try {
    const report = await source.health();
    reply(res, report.healthy ? 200 : 503, report);
  } catch (error) {
    reply(res, 503, { healthy: false, status: 'unhealthy', reasons: [`health check failed: ${String(error)}`] });
  }
}

function reply(res: http.ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

function listen(
  what: string,
  port: number,
  host: string,
  metrics: Route | undefined,
  health: Route | undefined,
): Promise<http.Server> {
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    return Promise.reject(new RangeError(`Leasehold ${what} server: port must be a whole number 0–65535, got ${port}`));
  if (typeof host !== 'string' || host.trim() === '')
    return Promise.reject(
      new TypeError(`Leasehold ${what} server: host must be an address or name, got ${JSON.stringify(host)}`),
    );
  const paths = [metrics && '/metrics', health && '/healthz'].filter(Boolean).join(' or ');
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path === '/metrics' && metrics) metrics(res);
    else if (path === '/healthz' && health) health(res);
    else {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end(`not found: try ${paths}`);
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', (error) =>
      reject(
        new Error(`Leasehold ${what} server: could not listen on ${host}:${port}: ${error.message}`, { cause: error }),
      ),
    );
    server.listen(port, host, () => resolve(server));
  });
}
