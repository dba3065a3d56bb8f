/**
 * The package entries' names (docs/versioning.md: the public API is what `exports` lists): each
 * entry is an explicit list (no `export *`, which would make public whatever its folder adds),
 * and its names are the ones below. A name added, renamed or dropped fails here first: change
 * the list with the CHANGELOG entry that says so. Values are read from the loaded module; the
 * type-only names (which leave no trace at run time) from the file's `export type { … }` lists.
 * No database is used.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './cli.ts';

const ENTRIES: Record<'index' | 'worker' | 'testing', { values: string[]; types: string[] }> = {
  index: {
    values: [
      'DEFAULT_DEDUPE_WINDOW_SECONDS',
      'DEFAULT_RETRY_POLICY',
      'LEASE_LOST',
      'LeaseholdError',
      'LeaseholdInputError',
      'MAX_ATTEMPTS',
      'MAX_BULK_ACTION',
      'MAX_BULK_ENQUEUE',
      'MAX_CLAIM_BATCH',
      'MigrationFailed',
      'MigrationRefused',
      'SCHEMA_VERSION',
      'SUPPORTED_SCHEMA',
      'attemptBudget',
      'attemptsAfterRetry',
      'cancelIfUnchanged',
      'cancelManyIfUnchanged',
      'claim',
      'completeIfLeaseHeld',
      'defineJob',
      'enqueue',
      'enqueueMany',
      'errorDetail',
      'failIfLeaseHeld',
      'fromDrizzlePostgresJs',
      'fromKysely',
      'fromPostgresJs',
      'heartbeatIfLeaseHeld',
      'migrateDatabase',
      'noAttemptsLeft',
      'pauseQueue',
      'pendingMigrationsSql',
      'redactedValues',
      'releaseIfLeaseHeld',
      'resumeQueue',
      'retryIfTerminal',
      'retryManyIfTerminal',
      'schemaCompatibility',
    ],
    types: [
      'ActionRefusal',
      'ActionResult',
      'AttemptBudget',
      'AttemptCapSource',
      'BulkEnqueueResult',
      'ClaimOptions',
      'ClaimedJob',
      'EnqueueOptions',
      'EnqueueResult',
      'EnqueueSpec',
      'ErrorCause',
      'ErrorDetail',
      'Executor',
      'FailInput',
      'FailOutcome',
      'HeartbeatOutcome',
      'HeartbeatSkipped',
      'Job',
      'JobContract',
      'JobEnqueueManyOptions',
      'JobEnqueueOptions',
      'JobInput',
      'JobKind',
      'JobOutput',
      'KyselyExecutor',
      'KyselyRawQuery',
      'LeaseRef',
      'MigrateOptions',
      'MigrateResult',
      'PostgresJsSql',
      'QueueActionOutcome',
      'RefusalReason',
      'RetryPolicy',
      'SettleOutcome',
      'SingleActionOutcome',
      'StandardSchemaV1',
      'StatementRunner',
    ],
  },
  worker: {
    values: [
      'DEFAULT_HANDLER_TIMEOUT_MS',
      'DEFAULT_HEALTH_HOST',
      'DEFAULT_METRICS_HOST',
      'JobError',
      'PermanentError',
      'RateLimitedError',
      'TransientError',
      'UnknownOutcomeError',
      'ValidationError',
      'WorkerOptionsError',
      'checkHealth',
      'claimStaleDefault',
      'createMetrics',
      'createWorker',
      'defineHandler',
      'serveHealth',
      'serveMetrics',
      'workerHealth',
    ],
    types: [
      'CreateWorkerOptions',
      'DeadEvent',
      'EventLoopLag',
      'FailedEvent',
      'Handler',
      'HandlerContext',
      'HandlerOptions',
      'HealthCheckOptions',
      'HealthReport',
      'HealthSource',
      'Isolation',
      'LeaseholdWorker',
      'RunForOptions',
      'RunForSummary',
      'WorkerErrorEvent',
      'WorkerErrorSource',
      'WorkerEventListener',
      'WorkerEventMap',
      'WorkerEventName',
      'WorkerMetrics',
    ],
  },
  testing: {
    values: [
      'EnqueuedAssertionError',
      'JobNotRunnable',
      'MAX_ADVANCE_MS',
      'advance',
      'createTemplateDatabase',
      'createTestDatabase',
      'drainQueue',
      'enqueuedJobs',
      'expectEnqueued',
      'expectNotEnqueued',
      'runJob',
    ],
    types: [
      'AdvanceResult',
      'DrainOptions',
      'DrainResult',
      'EnqueuedFilter',
      'JobRun',
      'RunOptions',
      'TemplateDatabase',
      'TemplateOptions',
      'TestDatabase',
      'TestDatabaseOptions',
    ],
  },
};

const source = (entry: string) => readFileSync(path.join(ROOT, 'entry', `${entry}.ts`), 'utf8');

describe('the package entries', () => {
  it.each(Object.keys(ENTRIES))('entry/%s.ts names every export, with no export *', (entry) => {
    expect(source(entry)).not.toMatch(/^export \*/m);
  });

  it.each(Object.entries(ENTRIES))('entry/%s.ts exports exactly its values', async (entry, { values }) => {
    const loaded = (await import(`../entry/${entry}.ts`)) as Record<string, unknown>;
    expect(Object.keys(loaded).sort()).toEqual([...values].sort());
  });

  it.each(Object.entries(ENTRIES))('entry/%s.ts exports exactly its types', (entry, { types }) => {
    const named = [...source(entry).matchAll(/^export type \{([^}]*)\}/gm)].flatMap((m) =>
      m[1]!
        .split(',')
        .map((n) => n.trim())
        .filter(Boolean),
    );
    expect(named.sort()).toEqual([...types].sort());
  });
});
