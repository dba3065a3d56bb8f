import 'server-only';
/**
 * Reading jobs: the list, one job's detail (with its result and progress), its live progress,
 * its unredacted payload and result, the failure groups.
 */
import { redactedValues, scrubDetail } from '../../db/queue/error-detail.ts';
import { type Job, whyWaiting } from '../../db/queue/index.ts';
import { uuidSchema } from '../../db/queue/validate.ts';
import {
  failureGroups,
  jobDetail,
  jobListSchema,
  jobWithOutcome,
  listJobs,
  recordPayloadReveal,
} from '../../db/queries/jobs.ts';
import { CANCELLABLE_FROM, RETRYABLE_FROM } from '../../db/states.ts';
import { database } from '../db.ts';
import type { FailureGroupDTO, JobDetailDTO, JobDTO, JobLiveDTO } from '../dto.ts';
import { InputError } from '../errors.ts';
import { JOB_GONE, noResultText, payloadHiddenMessage, retryPlan } from '../present.ts';
import { redact } from '../redaction.ts';
import { dropEmpty } from '../search-params.ts';
import { parse } from './input.ts';
import { redactionRulesFor } from './kinds.ts';
import { auditDto, iso, jobDto, jobLiveDto, resultDto, scrubAuditDto } from './mappers.ts';
import { scrubFor, scrubJobDto, scrubPatterns, scrubsFor, scrubsForIds } from './scrub.ts';
import { authorize, permits } from './policy.ts';

export async function getJobs(
  searchParams: Record<string, string | undefined>,
): Promise<{ jobs: JobDTO[]; next: string | null; can: { bulk: boolean } }> {
  const user = await authorize('getJobs');
  const query = parse(jobListSchema, dropEmpty(searchParams), 'filter');
  const { jobs: found, next } = await listJobs(database(), query);
  const scrubs = await scrubsFor(database(), found);
  const scrubOf = (j: Job) => scrubs.get(j.id) ?? scrubPatterns;
  // An exact key search must not tell a role that cannot reveal payloads whether a key it
  // guessed exists when the key quotes a masked value (`welcome:alice@example.com`): a job
  // found by such a key is left out, so a masked key and a missing one answer the same. A tag
  // filter likewise: a job is left out when the tag asked for quotes a value its payload masks.
  const quotesMasked = (j: Job, text: string | undefined) => text !== undefined && scrubOf(j)(text) !== text;
  const jobs = permits(user, 'revealPayload')
    ? found
    : found.filter(
        (j) =>
          !(query.search !== undefined && j.idempotencyKey === query.search && quotesMasked(j, query.search)) &&
          !quotesMasked(j, query.tag),
      );
  const waiting = await whyWaiting(
    database(),
    jobs.filter((j) => j.state === 'ready').map((j) => j.id),
  );
  return {
    jobs: jobs.map((j) => ({
      ...scrubJobDto(jobDto(j, permits(user, 'cancelJob')), scrubOf(j)),
      // A pause's reason is a handler's error message: scrubbed as the Limits page scrubs it.
      waiting: (waiting.get(j.id) ?? []).map((r) => scrubPatterns(r.text)),
    })),
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
  // The same values, and the secret-looking pairs, leave the key, the trace id and the audit reasons.
  const secrets = redactedValues(job.payload, paths);
  const scrubOne = scrubFor(job.payload, paths);
  const scrub = (text: string | null) => (text === null ? null : scrubOne(text));
  const waiting = job.state === 'ready' ? ((await whyWaiting(database(), [job.id])).get(job.id) ?? []) : [];
  // The result is masked as the payload is (the same paths, for every role: admins reveal it
  // with the payload), and its text scrubbed of the payload's masked values, which a handler
  // can echo into what it returns; a progress message is scrubbed as error text is.
  const result = detail.result && resultDto(detail.result, job, paths, scrubOne);
  const dto = {
    ...scrubJobDto(jobDto(job, permits(user, 'cancelJob')), scrubOne),
    waiting: waiting.map((r) => scrubPatterns(r.text)),
  };
  return {
    job: dto,
    payload: masked.payload,
    redactedPaths: masked.redacted,
    payloadHidden: masked.hidden ? payloadHiddenMessage(job.kind, job.kindVersion) : null,
    result,
    noResult: noResultText(job.state),
    live: jobLiveDto(job, detail.progress, scrubOne),
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
    audit: detail.audit.map((a) => scrubAuditDto(auditDto(a), [scrubOne])),
    retryPlan: retryPlan({ ...job, idempotencyKey: dto.idempotencyKey }),
    can: {
      retry: permits(user, 'retryJob') && RETRYABLE_FROM.includes(job.state),
      cancel: permits(user, 'cancelJob') && CANCELLABLE_FROM.includes(job.state),
      reveal:
        permits(user, 'revealPayload') &&
        (masked.hidden || masked.redacted.length > 0 || (result !== null && result.redactedPaths.length > 0)),
    },
  };
}

/**
 * The job's state and progress, for the job page's poll while the job runs (GET
 * /api/jobs/[id]/progress): one statement by primary key, the message scrubbed as on the page.
 */
export async function getJobProgress(id: string): Promise<JobLiveDTO> {
  await authorize('getJobProgress');
  const jobId = parse(uuidSchema, id, 'job id');
  const found = await jobWithOutcome(database(), jobId);
  if (!found) throw new InputError(JOB_GONE);
  const paths = await redactionRulesFor(database(), found.job.kind, found.job.kindVersion);
  return jobLiveDto(found.job, found.progress, scrubFor(found.job.payload, paths));
}

/**
 * Admin: the unredacted payload, and the stored result when there is one (a POST, so a link
 * cannot do it), recorded in the audit log as the payload's reveal.
 */
export async function revealPayload(id: string): Promise<{ payload: unknown; result?: unknown }> {
  const user = await authorize('revealPayload');
  const jobId = parse(uuidSchema, id, 'job id');
  const detail = await jobDetail(database(), jobId);
  if (!detail) throw new InputError(JOB_GONE);
  const auditId = await recordPayloadReveal(database(), { actor: user.email, jobId, role: user.role });
  // Gone between the read and the audit row: nothing is shown unaudited.
  if (auditId === null) throw new InputError(JOB_GONE);
  const { result } = detail;
  return { payload: detail.job.payload, ...(result && result.marker === null ? { result: result.value } : {}) };
}

export async function getFailureGroups(): Promise<{ groups: FailureGroupDTO[]; can: { retry: boolean } }> {
  const user = await authorize('getFailureGroups');
  const groups = await failureGroups(database());
  // Each example is one job's last error: scrubbed with that job's payload, as its page would be.
  const scrubs = await scrubsForIds(
    database(),
    groups.map((g) => g.exampleJobId),
  );
  return {
    groups: groups.map(({ exampleJobId, key, fingerprint: _text, ...g }) => ({
      ...g,
      // The fingerprint is the error's text with numbers folded: it can quote a secret as the
      // example can, so the page gets the group's key (its md5), which a preview accepts too.
      fingerprint: key,
      example: (scrubs.get(exampleJobId) ?? scrubPatterns)(g.example),
      lastSeen: iso(g.lastSeen),
      trend: g.trend.map((t) => ({ day: t.day.toISOString(), count: t.count })),
    })),
    can: { retry: permits(user, 'previewFailureGroup') && permits(user, 'applyBulk') },
  };
}
