/**
 * Prometheus metrics for one worker process (prom-client), served on the metrics port with a
 * health endpoint beside them.
 */
import http from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export type WorkerMetrics = ReturnType<typeof createMetrics>;

export function createMetrics(registry = new Registry()) {
  collectDefaultMetrics({ register: registry, prefix: 'leasehold_worker_' });
  const labels = ['queue', 'kind'] as const;
  return {
    registry,
    claimed: new Counter({
      name: 'leasehold_jobs_claimed_total',
      help: 'Jobs claimed (attempts started).',
      labelNames: ['queue'],
      registers: [registry],
    }),
    completed: new Counter({
      name: 'leasehold_jobs_completed_total',
      help: 'Attempts completed (job done).',
      labelNames: labels,
      registers: [registry],
    }),
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
    released: new Counter({
      name: 'leasehold_jobs_released_total',
      help: 'Attempts released at shutdown.',
      labelNames: labels,
      registers: [registry],
    }),
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
    startDelay: new Histogram({
      name: 'leasehold_enqueue_to_start_seconds',
      help: 'From a job becoming due (enqueue, or its run_at) to its first attempt starting.',
      labelNames: ['queue'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers: [registry],
    }),
  };
}

/** Serves `/metrics` (Prometheus text) and `/healthz` (JSON from `health()`). */
export function serveMetrics(
  port: number,
  registry: Registry,
  health: () => Record<string, unknown>,
): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    if (req.url === '/metrics') {
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
    } else if (req.url === '/healthz') {
      const body = health();
      res.writeHead(body.status === 'ok' ? 200 : 503, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found: try /metrics or /healthz');
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '0.0.0.0', () => resolve(server));
  });
}
