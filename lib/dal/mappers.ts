import 'server-only';
/** Row-model → DTO mappers: every Date becomes an ISO string, lease tokens only when asked. */
import type { AuditEntry, JobView } from '../../db/queries/jobs.ts';
import { attemptLine } from '../present.ts';
import { subStateOf } from '../../db/states.ts';
import type { AuditDTO, JobDTO } from '../dto.ts';
import { scrubByAll, type Scrub } from './scrub.ts';

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
