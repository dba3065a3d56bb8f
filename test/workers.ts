/** Worker settings for tests that run a Worker in-process: quiet defaults, overrides on top. */
import type { WorkerSettings } from '../workers/worker.ts';

type Overrides = Partial<Omit<WorkerSettings, 'maintenance'>> & {
  maintenance?: Partial<WorkerSettings['maintenance']>;
};

/** One slot, one job per claim, polling every 100 ms, no LISTEN, no maintenance, no scheduler. */
export function workerSettings(queue: string, workerId: string, overrides: Overrides = {}): WorkerSettings {
  const { maintenance, ...rest } = overrides;
  return {
    workerId,
    queues: [queue],
    concurrency: 1,
    leaseSeconds: 30,
    batchSize: 1,
    pollMs: 100,
    listen: false,
    graceMs: 0,
    ackFlushMs: 5,
    asyncClaims: false,
    registryIntervalMs: 10_000,
    scheduler: false,
    ...rest,
    maintenance: {
      enabled: false,
      reapIntervalMs: 1000,
      retentionIntervalMs: 60_000,
      staleWorkerSeconds: 60,
      receiptsRetentionSeconds: 86400,
      retention: {},
      ...maintenance,
    },
  };
}
