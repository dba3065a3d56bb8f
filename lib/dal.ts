import 'server-only';
/**
 * The data-access layer: every function authorizes on the server (requireRole), validates its
 * input, calls db/ and returns a DTO. Pages, route handlers and server actions call only this.
 */
import { z } from 'zod';
import {
  cancelIfUnchanged,
  cancelManyIfUnchanged,
  MAX_BULK_ACTION,
  pauseQueue as pauseQueueSql,
  resumeQueue as resumeQueueSql,
  retryIfTerminal,
  retryManyIfTerminal,
  type ActionResult,
  type Job,
} from '../db/queue';
import { nameSchema, uuidSchema } from '../db/queue/validate';
import { overview } from '../db/queries/overview';
import {
  auditListSchema,
  BULK_ACTIONS,
  failureGroupFilter,
  failureGroups,
  jobDetail,
  jobFilterSchema,
  jobListSchema,
  listAudit,
  listJobs,
  previewForAction,
  previewIds,
  recordAudit,
  type AuditEntry,
} from '../db/queries/jobs';
import { allows, requireRole } from './auth';
import { database } from './db';
import { InputError } from './errors';
import type {
  ActionResultDTO,
  AuditDTO,
  BulkPreviewDTO,
  FailureGroupDTO,
  JobDetailDTO,
  JobDTO,
  OverviewDTO,
  SubState,
} from './dto';
import {
  actionOutcomeMessage,
  bulkOutcomeMessage,
  invalidInputMessage,
  JOB_GONE,
  queuePauseMessage,
  retryPlan,
} from './present';
import { redact } from './redaction';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function parse<S extends z.ZodType>(schema: S, input: unknown, what: string): z.output<S> {
  const result = schema.safeParse(input);
  if (!result.success) {
    const problems = result.error.issues.map((i) => `${i.path.join('.') || what}: ${i.message}`);
    throw new InputError(invalidInputMessage(what, problems));
  }
  return result.data;
}

function subState(job: Job, now = Date.now()): SubState {
  // Disjoint: a ready job that has run before is retrying (waiting for its backoff or due);
  // one that never ran is scheduled while its run time is ahead.
  if (job.state === 'ready' && job.attempts > 0) return 'retrying';
  if (job.state === 'ready' && job.runAt.getTime() > now) return 'scheduled';
  if (job.state === 'running' && job.leaseUntil && job.leaseUntil.getTime() <= now) return 'lease_expired';
  return job.state;
}

function jobDto(job: Job, showToken: boolean): JobDTO {
  return {
    id: job.id,
    queue: job.queue,
    kind: job.kind,
    kindVersion: job.kindVersion,
    state: job.state,
    subState: subState(job),
    priority: job.priority,
    attempts: job.attempts,
    maxAttempts: job.maxAttempts,
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
  };
}

function auditDto(a: AuditEntry): AuditDTO {
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

export async function getOverview(): Promise<OverviewDTO> {
  const user = await requireRole('viewer');
  const o = await overview(database());
  return {
    generatedAt: o.generatedAt.toISOString(),
    queues: o.queues,
    attempts: o.attempts,
    failureClasses: o.failureClasses,
    throughput: o.throughput.map((t) => ({ ...t, minute: t.minute.toISOString() })),
    workers: o.workers.map((w) => ({
      ...w,
      startedAt: w.startedAt.toISOString(),
      lastSeenAt: w.lastSeenAt.toISOString(),
    })),
    can: { pause: allows(user, 'admin') },
  };
}

export async function getJobs(searchParams: Record<string, string | undefined>) {
  const user = await requireRole('viewer');
  const query = parse(jobListSchema, dropEmpty(searchParams), 'filter');
  const { jobs, next } = await listJobs(database(), query);
  return {
    query,
    jobs: jobs.map((j) => jobDto(j, allows(user, 'operator'))),
    next,
    can: { bulk: allows(user, 'admin') },
  };
}

/** URL parameters without the empty ones a form submits. */
export function dropEmpty(params: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(params)) {
    const value = Array.isArray(v) ? v[0] : v;
    if (value !== undefined && value !== '') out[k] = value;
  }
  return out;
}

/** Admin: the unredacted payload (a POST, so a link cannot do it), recorded in the audit log. */
export async function revealPayload(id: string): Promise<{ payload: unknown }> {
  const user = await requireRole('admin');
  const jobId = parse(uuidSchema, id, 'job id');
  const detail = await jobDetail(database(), jobId);
  if (!detail) throw new InputError(JOB_GONE);
  await recordAudit(database(), {
    actor: user.email,
    action: 'reveal_payload',
    jobIds: [jobId],
    queue: detail.job.queue,
    detail: { role: user.role },
  });
  return { payload: detail.job.payload };
}

export async function getJobDetail(id: string): Promise<JobDetailDTO | null> {
  const user = await requireRole('viewer');
  const jobId = parse(uuidSchema, id, 'job id');
  const detail = await jobDetail(database(), jobId);
  if (!detail) return null;
  const { job } = detail;
  const masked = redact(job.kind, job.payload);
  return {
    job: jobDto(job, allows(user, 'operator')),
    payload: masked.payload,
    redactedPaths: masked.redacted,
    attempts: detail.attempts.map((a) => ({
      attempt: a.attempt,
      workerId: a.workerId,
      startedAt: a.startedAt.toISOString(),
      endedAt: a.endedAt.toISOString(),
      outcome: a.outcome,
      failureClass: a.failureClass,
      error: a.error,
      durationMs: a.durationMs,
    })),
    audit: detail.audit.map(auditDto),
    retryPlan: retryPlan(job),
    can: {
      retry: allows(user, 'operator') && (job.state === 'dead' || job.state === 'cancelled'),
      cancel: allows(user, 'operator') && (job.state === 'ready' || job.state === 'running'),
      reveal: allows(user, 'admin') && masked.redacted.length > 0,
    },
  };
}

const reasonSchema = z
  .string()
  .max(500)
  .refine((s) => !s.includes('\u0000'), 'invalid character');
const retryInput = z.strictObject({ id: uuidSchema, reason: reasonSchema.optional() });
const cancelInput = z.strictObject({
  id: uuidSchema,
  leaseToken: uuidSchema.nullish(),
  reason: reasonSchema.optional(),
});

export async function retryJob(input: unknown): Promise<ActionResultDTO> {
  const user = await requireRole('operator');
  const { id, reason } = parse(retryInput, input, 'retry request');
  const outcome = await retryIfTerminal(database(), { id, actor: user.email, ...(reason ? { reason } : {}) });
  return { ok: outcome.applied, message: actionOutcomeMessage('retry', outcome) };
}

export async function cancelJob(input: unknown): Promise<ActionResultDTO> {
  const user = await requireRole('operator');
  const { id, leaseToken, reason } = parse(cancelInput, input, 'cancel request');
  const outcome = await cancelIfUnchanged(database(), {
    id,
    leaseToken: leaseToken ?? null,
    actor: user.email,
    ...(reason ? { reason } : {}),
  });
  return { ok: outcome.applied, message: actionOutcomeMessage('cancel', outcome) };
}

const bulkFilterInput = z.strictObject({ action: z.enum(BULK_ACTIONS), filter: jobFilterSchema });

/** Admin: how many jobs a bulk action by filter would touch, and the frozen id set (≤ 1,000). */
export async function previewBulk(input: unknown): Promise<BulkPreviewDTO> {
  await requireRole('admin');
  const { action, filter } = parse(bulkFilterInput, input, 'bulk request');
  const preview = await previewForAction(database(), action, filter, MAX_BULK_ACTION);
  return { action, matched: preview.total, overCap: preview.overCap, cap: MAX_BULK_ACTION, jobs: preview.jobs };
}

/** Admin: the failure group's dead jobs as a frozen retry set. */
export async function previewFailureGroup(input: unknown): Promise<BulkPreviewDTO> {
  await requireRole('admin');
  const { failureClass, fingerprint } = parse(
    z.strictObject({ failureClass: z.string().max(40), fingerprint: z.string().max(400) }),
    input,
    'group',
  );
  const preview = await previewIds(database(), failureGroupFilter(failureClass, fingerprint), MAX_BULK_ACTION);
  return {
    action: 'retry',
    matched: preview.total,
    overCap: preview.overCap,
    cap: MAX_BULK_ACTION,
    jobs: preview.jobs,
  };
}

const bulkApplyInput = z.strictObject({
  action: z.enum(['retry', 'cancel']),
  jobs: z
    .array(z.strictObject({ id: uuidSchema, leaseToken: uuidSchema.nullish() }))
    .min(1, 'no jobs selected')
    .max(MAX_BULK_ACTION, `at most ${MAX_BULK_ACTION} jobs in one bulk action`),
  confirm: z.literal(true, { error: 'confirm the bulk action first' }),
  reason: reasonSchema.optional(),
});

/** Admin: applies a bulk action to exactly the previewed jobs, each through the guarded SQL. */
export async function applyBulk(input: unknown): Promise<ActionResultDTO> {
  const user = await requireRole('admin');
  const { action, jobs, reason } = parse(bulkApplyInput, input, 'bulk request');
  // A LeaseholdInputError from the queue (a repeated id) reaches the caller as it is, as from
  // retryJob and cancelJob: lib/errors.ts toUserMessage words it.
  const result: ActionResult =
    action === 'retry'
      ? await retryManyIfTerminal(database(), {
          ids: jobs.map((j) => j.id),
          actor: user.email,
          ...(reason ? { reason } : {}),
        })
      : await cancelManyIfUnchanged(database(), { jobs, actor: user.email, ...(reason ? { reason } : {}) });
  return { ok: result.affected > 0, message: bulkOutcomeMessage(action, result) };
}

const queueInput = z.strictObject({ queue: nameSchema });

export async function setQueuePaused(input: unknown, paused: boolean): Promise<ActionResultDTO> {
  const user = await requireRole('admin');
  const { queue } = parse(queueInput, input, 'queue');
  const outcome = await (paused ? pauseQueueSql : resumeQueueSql)(database(), { queue, actor: user.email });
  return { ok: outcome.applied, message: queuePauseMessage(queue, paused, outcome.applied) };
}

export async function getAudit(searchParams: Record<string, string | undefined>) {
  await requireRole('viewer');
  const query = parse(auditListSchema, dropEmpty(searchParams), 'filter');
  const { entries, next } = await listAudit(database(), query);
  return { entries: entries.map(auditDto), next };
}

export async function getFailureGroups(): Promise<{ groups: FailureGroupDTO[]; can: { retry: boolean } }> {
  const user = await requireRole('viewer');
  const groups = await failureGroups(database());
  return {
    groups: groups.map((g) => ({
      ...g,
      lastSeen: iso(g.lastSeen),
      trend: g.trend.map((t) => ({ day: t.day.toISOString(), count: t.count })),
    })),
    can: { retry: allows(user, 'admin') },
  };
}
