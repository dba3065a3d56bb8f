/**
 * `leasehold`: what an application imports to define jobs and enqueue them in its own
 * transaction, to install the schema, and to act on jobs as an operator. Workers are in
 * `leasehold/worker`, the testing kit in `leasehold/testing`. This file is the public API
 * (docs/versioning.md): what it does not export is internal and may change in any release.
 */

// Job contracts and enqueue (docs/jobs.md).
export { defineJob } from '../db/queue/job-contract.ts';
export type { JobContract, JobInput, JobOutput, JobKind, StandardSchemaV1 } from '../db/queue/job-contract.ts';
export { enqueue, enqueueMany, MAX_BULK_ENQUEUE } from '../db/queue/enqueue.ts';
export type {
  EnqueueResult,
  BulkEnqueueResult,
  JobEnqueueOptions,
  JobEnqueueManyOptions,
} from '../db/queue/enqueue.ts';
export { DEFAULT_DEDUPE_WINDOW_SECONDS } from '../db/queue/enqueue-spec.ts';
export type { EnqueueSpec, UniqueAction, UniqueMode, UniqueState } from '../db/queue/enqueue-spec.ts';
// A job's own settings and the bounds its kind allows (docs/jobs.md).
export type { JobBackoff, KindSettings } from '../db/queue/job-options.ts';
// What a handler returned, how far it got, and a wait for a job's end (docs/jobs.md).
export { getJob, waitForJob } from '../db/queue/results.ts';
export type { JobProgress, JobResult, JobWithResult, WaitOutcome } from '../db/queue/results.ts';
export type { EnqueueOptions } from '../db/queue/wake.ts';
// Every error Leasehold throws is a LeaseholdError with a stable `code` (docs/versioning.md).
export { LeaseholdError } from '../db/errors.ts';
export { LeaseholdInputError } from '../db/queue/errors.ts';

// What the queue functions run on: Drizzle or pg as they are, other clients through an adapter
// (docs/executors.md).
export type { Executor, StatementRunner } from '../db/queue/executor.ts';
export { fromKysely, fromPostgresJs, fromDrizzlePostgresJs } from '../db/queue/adapters.ts';
export type { KyselyExecutor, KyselyRawQuery, PostgresJsSql } from '../db/queue/adapters.ts';

// The schema: install and upgrade it (docs/operations.md, "Migrations").
export {
  buildSearchIndexes,
  migrateDatabase,
  pendingMigrationsSql,
  MigrationFailed,
  MigrationRefused,
} from '../db/migrate/index.ts';
export type { MigrateOptions, MigrateResult, SearchIndexResult } from '../db/migrate/index.ts';
export { SCHEMA_VERSION, SUPPORTED_SCHEMA, schemaCompatibility } from '../db/schema-version.ts';

// PostgreSQL's health and the queues' backlog alerts (docs/operations.md, "Reading the health page").
export { readHealth } from '../db/queries/health.ts';
export type { Health, HealthCheck, HorizonHolder, TableHealth } from '../db/queries/health.ts';
export { listQueueAlerts, setQueueAlert } from '../db/queue/alerts.ts';
export type { AlertFigure, QueueAlertOutcome, StoredAlert } from '../db/queue/alerts.ts';

// Concurrency limits across every worker process: declare, set at run time (audited), list
// (docs/flow-control.md).
export {
  declareLimits,
  listLimits,
  MAX_LIMIT,
  MAX_RATE_INTERVAL_MS,
  setLimit,
  whyWaiting,
} from '../db/queue/limits.ts';
export type {
  LimitDeclaration,
  LimitRate,
  LimitScope,
  LimitStatus,
  LimitValues,
  SetLimitOutcome,
  WaitReason,
} from '../db/queue/limits.ts';

// Recurring jobs: declared in code beside the handler, managed at run time (audited), and the
// tick a scheduled job is for (docs/scheduling.md).
export { defineSchedule } from '../db/queue/schedules.ts';
export type { MissedPolicy, ScheduleDeclaration, ScheduleDefinition } from '../db/queue/schedules.ts';
export {
  changeSchedule,
  createSchedule,
  deleteSchedule,
  getSchedule,
  listSchedules,
  pauseSchedule,
  recentTicks,
  resetSchedule,
  resumeSchedule,
} from '../db/queue/schedule-admin.ts';
export type { RuntimeScheduleInput, ScheduleActor, ScheduleChange, ScheduleView } from '../db/queue/schedule-admin.ts';
export { scheduledTick } from '../db/queue/schedule-key.ts';

// A claim loop of your own: claim with a lease, settle only while it is held (docs/contract.md).
export { claim, MAX_CLAIM_BATCH } from '../db/queue/claim.ts';
export type { ClaimOptions } from '../db/queue/claim.ts';
export {
  completeIfLeaseHeld,
  failIfLeaseHeld,
  heartbeatIfLeaseHeld,
  releaseIfLeaseHeld,
  snoozeIfLeaseHeld,
} from '../db/queue/settle.ts';
export type {
  Completion,
  FailInput,
  FailOutcome,
  HeartbeatOutcome,
  HeartbeatSkipped,
  SnoozeOutcome,
} from '../db/queue/settle.ts';
// What a failed attempt records besides its message (docs/contract.md §6), for clients that fail jobs themselves.
export { errorDetail, redactedValues } from '../db/queue/error-detail.ts';
export type { ErrorDetail, ErrorCause } from '../db/queue/error-detail.ts';
export type { Job, ClaimedJob, LeaseRef, SettleOutcome } from '../db/queue/job.ts';
export { LEASE_LOST } from '../db/queue/job.ts';
// A job's attempts as the fail path counts them: charged against the cap that applies (docs/contract.md, "Attempts").
export { attemptBudget, attemptsAfterRetry, MAX_ATTEMPTS, noAttemptsLeft } from '../db/queue/attempt-cap.ts';
export type { AttemptBudget, AttemptCapSource } from '../db/queue/attempt-cap.ts';
export { DEFAULT_RETRY_POLICY } from '../db/queue/retry-policy.ts';
export type { RetryPolicy } from '../db/queue/retry-policy.ts';

// Operator actions, guarded and reported as values (docs/contract.md, "Operator actions").
export {
  retryIfTerminal,
  retryManyIfTerminal,
  cancelIfUnchanged,
  cancelManyIfUnchanged,
  pauseQueue,
  resumeQueue,
  MAX_BULK_ACTION,
} from '../db/queue/operator.ts';
export type {
  ActionResult,
  ActionRefusal,
  SingleActionOutcome,
  RefusalReason,
  QueueActionOutcome,
} from '../db/queue/operator.ts';
