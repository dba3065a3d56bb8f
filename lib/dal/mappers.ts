import 'server-only';
/** Row-model → DTO mappers: every Date becomes an ISO string, lease tokens only when asked. */
import type { AuditEntry, JobView } from '../../db/queries/jobs.ts';
import type { JobProgress, JobResult } from '../../db/queue/index.ts';
import { attemptLine, resultHiddenMessage } from '../present.ts';
import { subStateOf } from '../../db/states.ts';
import type { AuditDTO, JobDTO, JobLiveDTO, JobResultDTO } from '../dto.ts';
import { redact } from '../redaction.ts';
import { scrubByAll, scrubValue, type Scrub } from './scrub.ts';

export const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** `showToken`: the viewer may cancel, and a cancel of a running job must present the token. */
export function jobDto(job: JobView, showToken: boolean): JobDTO {
  return {
    id: job.id,
    queue: job.queue,
    kind: job.kind,
    kindVersion: job.kindVersion,
    state: job.state,
    subState: subStateOf(job, Date.now()),
    waiting: [],
    priority: job.priority,
    attempts: job.attempts,
    maxAttempts: job.maxAttempts,
    budget: job.budget,
    attemptLine: attemptLine(job.budget),
    runAt: job.runAt.toISOString(),
    createdAt: job.createdAt.toISOString(),
    startedAt: iso(job.startedAt),
    finishedAt: iso(job.finishedAt),
    updatedAt: job.updatedAt.toISOString(),
    leaseUntil: iso(job.leaseUntil),
    leaseToken: showToken ? job.leaseToken : null,
    workerId: job.workerId,
    failureClass: job.failureClass,
    lastError: job.lastError,
    traceId: job.traceId,
    idempotencyKey: job.idempotencyKey,
    tags: [...job.tags],
    snoozes: job.snoozes,
    snoozedMs: job.snoozedMs,
  };
}

export function auditDto(a: AuditEntry): AuditDTO {
  return {
    id: a.id,
    at: a.at.toISOString(),
    actor: a.actor,
    action: a.action,
    jobIds: a.jobIds,
    queue: a.queue,
    requested: a.requested,
    affected: a.affected,
    outcome: a.outcome,
    reason: typeof a.detail.reason === 'string' ? a.detail.reason : null,
  };
}

/** An audit row with its reason scrubbed by its jobs' payloads (lib/dal/scrub.ts) and the secret-looking pairs. */
export function scrubAuditDto(a: AuditDTO, scrubs: readonly Scrub[]): AuditDTO {
  return { ...a, reason: a.reason === null ? null : scrubByAll(a.reason, scrubs) };
}

/**
 * A stored result as the job page shows it: masked by the kind version's `paths` as the payload
 * is (null: not registered, hidden whole), then every string in it (keys too) scrubbed with the
 * job's `scrub`; a marker scrubbed likewise.
 */
export function resultDto(
  result: JobResult,
  job: Pick<JobView, 'kind' | 'kindVersion'>,
  paths: string[] | null,
  scrub: Scrub,
): JobResultDTO {
  const masked = result.marker === null ? redact(result.value, paths) : null;
  return {
    attempt: result.attempt,
    value: masked ? scrubValue(masked.payload, scrub) : null,
    marker: result.marker === null ? null : scrub(result.marker),
    // A path names the keys on the way, which a handler's result can make of its payload's values.
    redactedPaths: masked ? masked.redacted.map(scrub) : [],
    hidden: masked?.hidden ? resultHiddenMessage(job.kind, job.kindVersion) : null,
    bytes: result.bytes,
    storedAt: result.storedAt.toISOString(),
  };
}

/** The job's state and latest progress report, its message scrubbed with the job's `scrub`. */
export function jobLiveDto(
  job: JobView,
  progress: JobProgress | null,
  scrub: Scrub,
): Pick<JobLiveDTO, 'state' | 'subState' | 'attempts' | 'progress' | 'readAt' | 'updatedAt' | 'runAt' | 'priority'> {
  const now = new Date();
  return {
    state: job.state,
    subState: subStateOf(job, now),
    attempts: job.attempts,
    updatedAt: job.updatedAt.toISOString(),
    runAt: job.runAt.toISOString(),
    priority: job.priority,
    progress: progress && {
      attempt: progress.attempt,
      fraction: progress.fraction,
      percent: Math.round(progress.fraction * 100),
      message: progress.message === null ? null : scrub(progress.message),
      updatedAt: progress.updatedAt.toISOString(),
    },
    readAt: now.toISOString(),
  };
}
