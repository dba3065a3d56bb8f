/**
 * The queue core. Every function takes the executor first: a Drizzle database or transaction,
 * or a pg pool/client. See docs/contract.md for the guarantees.
 */
export type { Executor } from './executor';
export type { Job, ClaimedJob, LeaseRef, SettleOutcome } from './job';
export { LEASE_LOST } from './job';
export { LeaseholdInputError } from './errors';
export { enqueue, enqueueMany, MAX_BULK_ENQUEUE } from './enqueue';
export type { EnqueueResult, BulkEnqueueResult } from './enqueue';
export { DEFAULT_DEDUPE_WINDOW_SECONDS } from './enqueue-spec';
export type { EnqueueSpec } from './enqueue-spec';
export { WAKE_CHANNEL, WAKE_DEBOUNCE_MS } from './wake';
export type { EnqueueOptions } from './wake';
export { claim, ClaimOptionsCache, claimStatement, MAX_CLAIM_BATCH } from './claim';
export type { ClaimOptions } from './claim';
export {
  completeIfLeaseHeld,
  completeManyIfLeaseHeld,
  failIfLeaseHeld,
  heartbeatIfLeaseHeld,
  releaseIfLeaseHeld,
  truncateError,
  MAX_ERROR_LENGTH,
} from './settle';
export type { FailInput, FailOutcome, HeartbeatOutcome } from './settle';
export { reapExpiredLeases, reapStatement } from './reap';
export type { ReapOptions, ReapResult } from './reap';
export { decideRetry, backoffDelayMs, isRetryable, DEFAULT_RETRY_POLICY } from './retry-policy';
export type { RetryPolicy, RetryDecision, RetryInput } from './retry-policy';
export {
  retryIfTerminal,
  retryManyIfTerminal,
  cancelIfUnchanged,
  cancelManyIfUnchanged,
  pauseQueue,
  resumeQueue,
  MAX_BULK_ACTION,
} from './operator';
export type { ActionResult, ActionRefusal, SingleActionOutcome, RefusalReason, QueueActionOutcome } from './operator';
export { removeExpiredHistory } from './retention';
export type { RetentionOptions, RetentionResult } from './retention';
export { heartbeatManyIfLeaseHeld } from './settle';
export { findReceipt, recordReceipt, removeOldReceipts } from './receipts';
export type { Receipt } from './receipts';
export { registerWorker, touchWorker, deregisterWorker, removeStaleWorkers, listWorkers } from './worker-registry';
export type { WorkerInfo } from './worker-registry';
export { withMaintenanceLock } from './maintenance';
export {
  registerKinds,
  setRedactedPaths,
  parseKindRegistrations,
  redactedPathSchema,
  redactedPathsSchema,
  MAX_REDACTED_PATHS,
} from './kinds';
export type { KindRegistration, SetRedactedPathsOutcome } from './kinds';
