/**
 * `leasehold/worker`: handlers and the workers that run them, in your own process or from the
 * CLI (`leasehold workers --handlers <file>`). Public API (docs/versioning.md); docs/workers.md.
 */
export { defineHandler, DEFAULT_HANDLER_TIMEOUT_MS } from '../workers/handler.ts';
export type { Handler, HandlerContext, HandlerLimit, HandlerOptions, Isolation } from '../workers/handler.ts';
export {
  JobError,
  TransientError,
  RateLimitedError,
  UnknownOutcomeError,
  PermanentError,
  ValidationError,
} from '../workers/errors.ts';
// Snooze: wait without spending an attempt (docs/jobs.md, "Snooze").
export { snooze, SnoozeError } from '../workers/snooze.ts';
export type { Snooze } from '../workers/snooze.ts';

// A worker in your own process (docs/workers.md).
export { createWorker, WorkerOptionsError } from '../workers/create-worker.ts';
export type { CreateWorkerOptions, LeaseholdWorker, RunForOptions, RunForSummary } from '../workers/create-worker.ts';
export type {
  FailedEvent,
  DeadEvent,
  WorkerErrorEvent,
  WorkerErrorSource,
  WorkerEventMap,
  WorkerEventName,
  WorkerEventListener,
} from '../workers/events.ts';

// Health and metrics over HTTP, for a worker you run yourself.
export { workerHealth, checkHealth, claimStaleDefault } from '../workers/health.ts';
export type { HealthReport, HealthSource, HealthCheckOptions } from '../workers/health.ts';
export {
  createMetrics,
  serveMetrics,
  serveHealth,
  DEFAULT_METRICS_HOST,
  DEFAULT_HEALTH_HOST,
} from '../workers/metrics.ts';
export type { WorkerMetrics } from '../workers/metrics.ts';
export type { EventLoopLag } from '../workers/event-loop.ts';
