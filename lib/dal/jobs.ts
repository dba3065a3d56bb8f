import 'server-only';
/** Reading jobs: the list, one job's detail, its unredacted payload, the failure groups. */
import { redactedValues, scrubDetail, scrubText } from '../../db/queue/error-detail.ts';
import { uuidSchema } from '../../db/queue/validate.ts';
import { failureGroups, jobDetail, jobListSchema, listJobs, recordAudit } from '../../db/queries/jobs.ts';
import { CANCELLABLE_FROM, RETRYABLE_FROM } from '../../db/states.ts';
import { database } from '../db.ts';
import type { FailureGroupDTO, JobDetailDTO, JobDTO } from '../dto.ts';
import { InputError } from '../errors.ts';
import { JOB_GONE, payloadHiddenMessage, retryPlan } from '../present.ts';
import { redact } from '../redaction.ts';
import { dropEmpty } from '../search-params.ts';
import { parse } from './input.ts';
import { redactionRulesFor } from './kinds.ts';
import { auditDto, iso, jobDto } from './mappers.ts';
import { authorize, permits } from './policy.ts';

export async function getJobs(
  searchParams: Record<string, string | undefined>,
): Promise<{ jobs: JobDTO[]; next: string | null; can: { bulk: boolean } }> {
  const user = await authorize('getJobs');
  const query = parse(jobListSchema, dropEmpty(searchParams), 'filter');
  const { jobs, next } = await listJobs(database(), query);
  return {
    jobs: jobs.map((j) => jobDto(j, permits(user, 'cancelJob'))),
    next,
    can: { bulk: permits(user, 'previewBulk') && permits(user, 'applyBulk') },
  };
}

export async function getJobDetail(id: string): Promise<JobDetailDTO | null> {
  const user = await authorize('getJobDetail');
  const jobId = parse(uuidSchema, id, 'job id');
  const detail = await jobDetail(database(), jobId);
  if (!detail) return null;
  const { job } = detail;
  // The paths the workers registered for this kind version, the admins' and the configured
  // defaults; a version no worker registered hides it whole.
  const paths = await redactionRulesFor(database(), job.kind, job.kindVersion);
  const masked = redact(job.payload, paths);
  // Error text gets the payload's redaction too, for every role: the worker scrubbed it with its
  // handler's paths when it wrote; this pass adds the registry's and the admins' (paths added since, rows
  // written by other clients), and every value when the kind version is not registered.
  const secrets = redactedValues(job.payload, paths);
  const scrub = (text: string | null) => (text === null ? null : scrubText(text, secrets));
  const dto = jobDto(job, permits(user, 'cancelJob'));
  return {
    job: { ...dto, lastError: scrub(dto.lastError) },
    payload: masked.payload,
    redactedPaths: masked.redacted,
    payloadHidden: masked.hidden ? payloadHiddenMessage(job.kind, job.kindVersion) : null,
    attempts: detail.attempts.map((a) => ({
      attempt: a.attempt,
      workerId: a.workerId,
      startedAt: a.startedAt.toISOString(),
      endedAt: a.endedAt.toISOString(),
      outcome: a.outcome,
      failureClass: a.failureClass,
      error: scrub(a.error),
      errorDetail: a.errorDetail && scrubDetail(a.errorDetail, secrets),
      durationMs: a.durationMs,
    })),
    audit: detail.audit.map(auditDto),
    retryPlan: retryPlan(job),
    can: {
      retry: permits(user, 'retryJob') && RETRYABLE_FROM.includes(job.state),
      cancel: permits(user, 'cancelJob') && CANCELLABLE_FROM.includes(job.state),
      reveal: permits(user, 'revealPayload') && (masked.hidden || masked.redacted.length > 0),
    },
  };
}

/** Admin: the unredacted payload (a POST, so a link cannot do it), recorded in the audit log. */
export async function revealPayload(id: string): Promise<{ payload: unknown }> {
  const user = await authorize('revealPayload');
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

export async function getFailureGroups(): Promise<{ groups: FailureGroupDTO[]; can: { retry: boolean } }> {
  const user = await authorize('getFailureGroups');
  const groups = await failureGroups(database());
  return {
    groups: groups.map((g) => ({
      ...g,
      lastSeen: iso(g.lastSeen),
      trend: g.trend.map((t) => ({ day: t.day.toISOString(), count: t.count })),
    })),
    can: { retry: permits(user, 'previewFailureGroup') && permits(user, 'applyBulk') },
  };
}
