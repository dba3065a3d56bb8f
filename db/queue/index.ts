/**
 * The queue core. Every function takes the executor first: a Drizzle database or transaction,
 * or a pg pool/client. See docs/contract.md for the guarantees.
 */
export type { Executor } from './executor.ts';
export type { Job, ClaimedJob, LeaseRef, SettleOutcome } from './job.ts';
export { LEASE_LOST } from './job.ts';
export { LeaseholdInputError } from './errors.ts';
export { enqueue, enqueueMany, MAX_BULK_ENQUEUE } from './enqueue.ts';
export type { EnqueueResult, BulkEnqueueResult } from './enqueue.ts';
export { DEFAULT_DEDUPE_WINDOW_SECONDS } from './enqueue-spec.ts';
export type { EnqueueSpec } from './enqueue-spec.ts';
export { WAKE_CHANNEL, WAKE_DEBOUNCE_MS } from './wake.ts';
export type { EnqueueOptions } from './wake.ts';
export { claim, ClaimOptionsCache, claimStatement, MAX_CLAIM_ARMS, MAX_CLAIM_BATCH } from './claim.ts';
export type { ClaimOptions } from './claim.ts';
export {
  completeIfLeaseHeld,
  completeManyIfLeaseHeld,
  failIfLeaseHeld,
  heartbeatIfLeaseHeld,
  releaseIfLeaseHeld,
  truncateError,
  MAX_ERROR_LENGTH,
} from './settle.ts';
export type { FailInput, FailOutcome, HeartbeatOutcome } from './settle.ts';
export { reapExpiredLeases, reapStatement, deadIfKindUnrun, DEFAULT_UNKNOWN_KIND_GRACE_MS } from './reap.ts';
export type { ReapOptions, ReapResult, UnrunKindOptions } from './reap.ts';
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
export { removeExpiredHistory } from './retention.ts';
export type { RetentionOptions, RetentionResult } from './retention.ts';
export { heartbeatManyIfLeaseHeld } from './settle.ts';
export { findReceipt, recordReceipt, removeOldReceipts } from './receipts.ts';
export type { Receipt } from './receipts.ts';
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
  parseKindRegistrations,
  redactedPathSchema,
  redactedPathsSchema,
  MAX_REDACTED_PATHS,
} from './kinds.ts';
export type { KindRegistration, SetRedactedPathsOutcome } from './kinds.ts';
