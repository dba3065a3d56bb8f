/**
 * The queue core. Every function takes the executor first: a Drizzle database or transaction,
 * a pg pool/client, or a StatementRunner (fromKysely, fromPostgresJs, fromDrizzlePostgresJs).
 * See docs/contract.md for the guarantees and docs/executors.md for the clients.
 *
 * What its module marks internal (the statements themselves: claimStatement, reapStatement) is
 * not re-exported here: the package's declarations leave it out (tsconfig.build.json's
 * stripInternal), and a re-export of a name its module's declaration lacks would fail a user's
 * compiler. Import it from its module. (This comment must not spell the tag: tsc strips the
 * statement a comment holding it leads, here the first export.)
 */
export type { Executor, StatementRunner } from './executor.ts';
export { fromDrizzlePostgresJs, fromKysely, fromPostgresJs } from './adapters.ts';
export type { KyselyExecutor, KyselyRawQuery, PostgresJsSql } from './adapters.ts';
export type { Job, ClaimedJob, LeaseRef, SettleOutcome } from './job.ts';
export { LEASE_LOST } from './job.ts';
export { LeaseholdInputError } from './errors.ts';
export { enqueue, enqueueMany, MAX_BULK_ENQUEUE } from './enqueue.ts';
export type { EnqueueResult, BulkEnqueueResult, JobEnqueueOptions, JobEnqueueManyOptions } from './enqueue.ts';
export { defineJob, checkPayload, isJobContract, isStandardSchema } from './job-contract.ts';
export type {
  JobContract,
  JobDefinition,
  JobInput,
  JobOutput,
  JobKind,
  PayloadCheck,
  StandardSchemaV1,
} from './job-contract.ts';
export { DEFAULT_DEDUPE_WINDOW_SECONDS } from './enqueue-spec.ts';
export type { EnqueueSpec } from './enqueue-spec.ts';
export { NOTIFY_QUEUE_LIMIT, WAKE_CHANNEL, WAKE_DEBOUNCE_MS } from './wake.ts';
export type { EnqueueOptions } from './wake.ts';
export { claim, ClaimOptionsCache, MAX_CLAIM_ARMS, MAX_CLAIM_BATCH } from './claim.ts';
export {
  declareLimits,
  limitDeclarationProblems,
  limitKey,
  listLimits,
  setLimit,
  LIMIT_SCOPES,
  limitedQueues,
  renewQueueLimits,
  QUEUE_LIMIT_DECLARATION_SECONDS,
  limitWaitMs,
  MAX_CLAIM_LIMITS,
  MAX_LIMIT,
  MAX_RATE_INTERVAL_MS,
  pauseLimit,
  whyWaiting,
} from './limits.ts';
export type * from './limits.ts';
export {
  groupedQueueNames,
  listGroups,
  MAX_GROUP_LIMIT,
  MAX_LISTED_GROUPS,
  pauseGroup,
  pruneGroupClaims,
  resumeGroup,
  setGroupLimit,
} from './group-limits.ts';
export type { GroupLimitOutcome, GroupLimitValues, GroupStatus, QueueGroups } from './group-limits.ts';
export {
  cronProblems,
  declareSchedules,
  defineSchedule,
  planTicks,
  runDueSchedules,
  DEFAULT_MISSED_AFTER_MS,
} from './schedules.ts';
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
} from './schedule-admin.ts';
export { scheduledTick } from './schedule-key.ts';
export type { RuntimeScheduleInput, ScheduleActor, ScheduleChange, ScheduleView } from './schedule-admin.ts';
export type {
  MissedPolicy,
  ScheduleDeclaration,
  ScheduleDefinition,
  ScheduleSettings,
  TickOutcome,
  TickPlan,
} from './schedules.ts';
export type { ClaimBoundOptions, ClaimOptions } from './claim.ts';
export {
  completeIfLeaseHeld,
  completeManyIfLeaseHeld,
  failIfLeaseHeld,
  heartbeatIfLeaseHeld,
  releaseIfLeaseHeld,
  snoozeIfLeaseHeld,
  truncateError,
  MAX_ERROR_LENGTH,
} from './settle.ts';
export type { FailInput, FailOutcome, HeartbeatOutcome, HeartbeatSkipped } from './settle.ts';
export {
  errorDetail,
  errorDetailSchema,
  redactedValues,
  scrubText,
  scrubDetail,
  MAX_CAUSE_DEPTH,
  MAX_DETAIL_CHARS,
  MAX_STACK_FRAMES,
} from './error-detail.ts';
export type { ErrorDetail, ErrorCause } from './error-detail.ts';
export { reapExpiredLeases, deadIfKindUnrun, DEFAULT_UNKNOWN_KIND_GRACE_MS } from './reap.ts';
export { groupedQueues, GROUPED_WAKE_SUFFIX, sweepReadyGroups, GROUP_SWEEP_BATCH, type GroupSweep } from './groups.ts';
export type { ReapOptions, ReapResult, UnrunKindOptions } from './reap.ts';
export { MAX_ATTEMPTS, ATTEMPT_LIMIT_SENTENCE, noAttemptsLeft } from './attempt-cap.ts';
export { decideRetry, backoffDelayMs, isRetryable, DEFAULT_RETRY_POLICY } from './retry-policy.ts';
export type { RetryPolicy, RetryDecision, RetryInput } from './retry-policy.ts';
export {
  retryIfTerminal,
  retryManyIfTerminal,
  cancelIfUnchanged,
  cancelManyIfUnchanged,
  pauseQueue,
  resumeQueue,
  MAX_BULK_ACTION,
} from './operator.ts';
export type {
  ActionResult,
  ActionRefusal,
  SingleActionOutcome,
  RefusalReason,
  QueueActionOutcome,
} from './operator.ts';
export {
  runNowIfUnchanged,
  rescheduleIfUnchanged,
  setPriorityIfUnchanged,
  rerunCopy,
  purgeDeadJobs,
  MAX_RESCHEDULE_DAYS,
} from './support-actions.ts';
export type { JobSeen, PurgeResult, SupportOutcome, SupportRefusalReason } from './support-actions.ts';
export { removeExpiredHistory, removeOldAudit, MIN_AUDIT_DAYS, DEFAULT_AUDIT_DAYS } from './retention.ts';
export type { RetentionOptions, RetentionResult } from './retention.ts';
export { heartbeatManyIfLeaseHeld, workerHeartbeat } from './settle.ts';
export type { WorkerBeat, WorkerBeatAttempt } from './settle.ts';
export {
  claimReceiptIfLeaseHeld,
  dropReceiptClaim,
  findReceipt,
  recordReceipt,
  removeOldReceipts,
} from './receipts.ts';
export type { Receipt, ReceiptClaim } from './receipts.ts';
export {
  registerWorker,
  touchWorker,
  deregisterWorker,
  removeStaleWorkers,
  listWorkers,
  LIVE_WORKER_SECONDS,
} from './worker-registry.ts';
export type { WorkerInfo } from './worker-registry.ts';
export { withMaintenanceLock } from './maintenance.ts';
export {
  registerKinds,
  setRedactedPaths,
  addRedactedPath,
  removeAddedRedactedPath,
  MAX_ADDED_REDACTED_PATHS,
  parseKindRegistrations,
  redactedPathSchema,
  redactedPathsSchema,
  MAX_REDACTED_PATHS,
  addSearchPath,
  removeSearchPath,
  searchPathSchema,
  searchablePathsSchema,
  SEARCH_PATH_PATTERN,
  MAX_SEARCHABLE_PATHS,
} from './kinds.ts';
export type {
  AddSearchPathOutcome,
  RemoveSearchPathOutcome,
  AddRedactedPathOutcome,
  KindRegistration,
  RemoveAddedRedactedPathOutcome,
  SetRedactedPathsOutcome,
} from './kinds.ts';

// A job's own settings, snooze cap and counters (docs/jobs.md).
export { DEFAULT_SNOOZE_CAP, MAX_SNOOZE_MS, MAX_JOB_TIMEOUT_MS, MAX_BACKOFF_MS } from './job-options.ts';
export type { Bounds, JobBackoff, KindSettings, SnoozeCap } from './job-options.ts';
export type { SnoozeOutcome } from './settle.ts';
export { UNIQUE_STATES, UNIQUE_MODES, MAX_TAGS, MAX_TAG_LENGTH } from './enqueue-spec.ts';
export type { UniqueAction, UniqueState, UniqueMode } from './enqueue-spec.ts';

// Results, progress and waiting (docs/jobs.md, "Results, progress and waiting").
export {
  getJob,
  waitForJob,
  storableResult,
  DEFAULT_RESULT_MAX_BYTES,
  MAX_RESULT_BYTES,
  MAX_PROGRESS_MESSAGE,
  PROGRESS_EVERY_MS,
} from './results.ts';
export type { JobProgress, JobResult, JobWithResult, StorableResult, WaitOutcome } from './results.ts';
