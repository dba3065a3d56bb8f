import 'server-only';
/**
 * Reading jobs: the list, one job's detail (with its result and progress), its live progress,
 * its unredacted payload and result, the failure groups.
 */
import { redactedValues, scrubDetail } from '../../db/queue/error-detail.ts';
import { type Job, whyWaiting } from '../../db/queue/index.ts';
import { uuidSchema } from '../../db/queue/validate.ts';
import { jobIdFloor } from '../../db/queue/ids.ts';
import type { AttemptRow } from '../../db/queue/history.ts';
import { attemptHistory } from '../../db/queue/history.ts';
import {
  countNewerJobs,
  failureGroups,
  jobDetail,
  jobListSchema,
  jobWithOutcome,
  type JobWithOutcome,
  listJobs,
  NEW_JOBS_CAP,
  newJobsSchema,
  recordPayloadReveal,
} from '../../db/queries/jobs.ts';
import { rerunLinks, rerunSafe } from '../../db/queries/support.ts';
import { CANCELLABLE_FROM, RETRYABLE_FROM, TERMINAL_STATES } from '../../db/states.ts';
import { database } from '../db.ts';
import type { AttemptDTO, FailureGroupDTO, JobDetailDTO, JobDTO, JobLiveDTO, NewJobsDTO } from '../dto.ts';
import { InputError } from '../errors.ts';
import { liveQuery, type LiveRead } from '../live-cache.ts';
import {
  attemptOutcomeText,
  errorDetailSummary,
  errorDetailText,
  JOB_GONE,
  noResultText,
  payloadHiddenMessage,
  retryPlan,
  SEARCH_REFUSALS,
} from '../present.ts';
import { redact } from '../redaction.ts';
import { dropEmpty } from '../search-params.ts';
import { parse } from './input.ts';
import { redactionRulesFor } from './kinds.ts';
import { auditDto, iso, jobDto, jobLiveDto, resultDto, scrubAuditDto } from './mappers.ts';
import { type Scrub, scrubFor, scrubJobDto, scrubPatterns, scrubsFor, scrubsForIds } from './scrub.ts';
import { authorize, permits } from './policy.ts';
import { resolveSearch } from './search.ts';
import type { SessionUser } from './session.ts';

/**
 * Whether `job` may be listed to `user`: an exact key search must not tell a role that cannot
 * reveal payloads whether a key it guessed exists when the key quotes a masked value
 * (`welcome:alice@example.com`): a job found by such a key is left out, so a masked key and a
 * missing one answer the same. A tag filter likewise: a job is left out when the tag asked for
 * quotes a value its payload masks. The list and its "n new jobs" count leave out the same jobs.
 */
export function listableTo(
  user: SessionUser,
  query: { search?: string | undefined; tag?: string | undefined },
  scrubOf: (j: Job) => Scrub,
): (j: Job) => boolean {
  if (permits(user, 'revealPayload')) return () => true;
  const quotesMasked = (j: Job, text: string | undefined) => text !== undefined && scrubOf(j)(text) !== text;
  return (j) =>
    !(query.search !== undefined && j.idempotencyKey === query.search && quotesMasked(j, query.search)) &&
    !quotesMasked(j, query.tag);
}

export async function getJobs(searchParams: Record<string, string | undefined>): Promise<{
  jobs: JobDTO[];
  next: string | null;
  newest: string | null;
  can: { bulk: boolean; export: boolean };
}> {
  const user = await authorize('getJobs');
  const query = parse(jobListSchema, dropEmpty(searchParams), 'filter');
  const { search, hidden } = await resolveSearch(user, query);
  const { jobs: found, next } = await listJobs(database(), query, search);
  const scrubs = await scrubsFor(database(), found);
  const scrubOf = (j: Job) => scrubs.get(j.id) ?? scrubPatterns;
  const listable = listableTo(user, query, scrubOf);
  const jobs = found.filter((j) => listable(j) && !hidden(j));
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
    // The cursor of the list's "n new jobs" marker: its newest row (none shown: the page names
    // the time it read the list instead).
    newest: query.sort === 'newest' ? (jobs[0]?.id ?? null) : null,
    can: { bulk: permits(user, 'previewBulk') && permits(user, 'applyBulk'), export: permits(user, 'exportJobs') },
  };
}

/**
 * How many jobs matching the list's filter are newer than the newest it shows (`newerThan`):
 * the job list's marker polls it. A cheap capped count; for a role that cannot reveal payloads
 * with a key search or a tag filter, the new jobs themselves (as many as the cap) are checked
 * as the list checks its rows, so the count leaves out what the list would.
 */
export async function getNewJobCount(searchParams: Record<string, string | undefined>): Promise<NewJobsDTO> {
  const user = await authorize('getNewJobCount');
  const { since, newerThan: given, ...filter } = parse(newJobsSchema, dropEmpty(searchParams), 'filter');
  // A payload search lists by created time, not by id: the page offers no marker for it.
  if (filter.path !== undefined || filter.value !== undefined) throw new InputError(SEARCH_REFUSALS.newJobs);
  const newerThan = given ?? jobIdFloor(since ?? Date.now());
  const query = { ...filter, newerThan };
  if (permits(user, 'revealPayload') || (filter.search === undefined && filter.tag === undefined)) {
    return countNewerJobs(database(), query);
  }
  const { jobs: found, next } = await listJobs(database(), {
    ...filter,
    sort: 'oldest',
    after: newerThan,
    limit: NEW_JOBS_CAP,
  });
  const scrubs = await scrubsFor(database(), found);
  const count = found.filter(listableTo(user, filter, (j) => scrubs.get(j.id) ?? scrubPatterns)).length;
  return { count, more: next !== null };
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
  const waiting = job.state === 'ready' ? ((await whyWaiting(database(), [job.id])).get(job.id) ?? []) : [];
  // A re-run copies a done job of a re-run-safe kind version; both pages link the other.
  const [reruns, safe] = await Promise.all([
    rerunLinks(database(), job.id),
    job.state === 'done' && permits(user, 'rerunJob') ? rerunSafe(database(), job.kind, job.kindVersion) : false,
  ]);
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
    live: liveDto(user, { ...detail, paths }),
    attempts: detail.attempts.map((a) => attemptDto(a, scrubOne, secrets)),
    audit: detail.audit.map((a) => scrubAuditDto(auditDto(a), [scrubOne])),
    retryPlan: retryPlan({ ...job, idempotencyKey: dto.idempotencyKey }),
    reruns,
    can: {
      rerun: safe,
      retry: permits(user, 'retryJob') && RETRYABLE_FROM.includes(job.state),
      cancel: permits(user, 'cancelJob') && CANCELLABLE_FROM.includes(job.state),
      reveal:
        permits(user, 'revealPayload') &&
        (masked.hidden || masked.redacted.length > 0 || (result !== null && result.redactedPaths.length > 0)),
    },
  };
}

/** An ended attempt: its error scrubbed as the page's other error text, its detail of `secrets`. */
function attemptDto(a: AttemptRow, scrub: Scrub, secrets: readonly string[]): AttemptDTO {
  return {
    attempt: a.attempt,
    workerId: a.workerId,
    startedAt: a.startedAt.toISOString(),
    endedAt: a.endedAt.toISOString(),
    outcome: a.outcome,
    failureClass: a.failureClass,
    error: a.error === null ? null : scrub(a.error),
    errorDetail: a.errorDetail && scrubDetail(a.errorDetail, secrets),
    durationMs: a.durationMs,
  };
}

/** A ready job not yet due or attempted before: what run now and reschedule take. */
const waitingSubstate = (s: JobLiveDTO['subState']) => s === 'scheduled' || s === 'retrying';

/** What the live read holds: the same for every role (the per-viewer step is `liveDto`). */
type LiveRows = JobWithOutcome & { attempts: AttemptRow[]; paths: string[] | null };

/**
 * A job's live rows, shared by every viewer polling it within FRESHNESS.jobLive
 * (lib/live-cache.ts): the job with its result and progress (one statement by primary key),
 * its ended attempts, and its kind version's redaction rules. Null when there is no such job.
 */
const jobLiveRows = liveQuery(
  'jobLive',
  async (jobId: string): Promise<LiveRows | null> => {
    const [found, attempts] = await Promise.all([jobWithOutcome(database(), jobId), attemptHistory(database(), jobId)]);
    if (!found) return null;
    const paths = await redactionRulesFor(database(), found.job.kind, found.job.kindVersion);
    return { ...found, attempts, paths };
  },
  { maxEntries: 1_000 },
);

/**
 * The live part of a job's page for `user`: masked and scrubbed as the page is, for every role;
 * the lease token and the actions only as `user`'s role allows.
 */
function liveDto(user: SessionUser, rows: LiveRows): JobLiveDTO {
  const { job, paths } = rows;
  const scrub = scrubFor(job.payload, paths);
  const secrets = redactedValues(job.payload, paths);
  const base = jobLiveDto(job, rows.progress, scrub);
  return {
    ...base,
    finished: TERMINAL_STATES.some((s) => s === job.state),
    attemptRows: rows.attempts.map((row) => {
      const a = attemptDto(row, scrub, secrets);
      const shown = attemptOutcomeText(a);
      return {
        ...a,
        outcomeText: shown.outcome,
        errorText: shown.error,
        detailSummary: a.errorDetail && errorDetailSummary(a.errorDetail),
        detailText: a.errorDetail && errorDetailText(a.errorDetail),
      };
    }),
    result: rows.result && resultDto(rows.result, job, paths, scrub),
    noResult: noResultText(job.state),
    lastError: job.lastError === null ? null : scrub(job.lastError),
    leaseToken: permits(user, 'cancelJob') ? job.leaseToken : null,
    can: {
      retry: permits(user, 'retryJob') && RETRYABLE_FROM.includes(job.state),
      cancel: permits(user, 'cancelJob') && CANCELLABLE_FROM.includes(job.state),
      // What the functions of drizzle/0029 take: a scheduled or retrying job; any ready one.
      runNow: permits(user, 'runJobNow') && waitingSubstate(base.subState),
      reschedule: permits(user, 'rescheduleJob') && waitingSubstate(base.subState),
      priority: permits(user, 'setJobPriority') && job.state === 'ready',
    },
  };
}

/**
 * The job's state, progress, ended attempts and result, for the job page's poll while the job
 * is not finished (GET /api/jobs/[id]/progress), through the shared live cache: masked and
 * scrubbed as on the page.
 */
export async function getJobProgress(id: string): Promise<JobLiveDTO> {
  const user = await authorize('getJobProgress');
  const jobId = parse(uuidSchema, id, 'job id');
  const rows = await jobLiveRows.read(jobId);
  if (!rows) throw new InputError(JOB_GONE);
  return liveDto(user, rows);
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

/**
 * The failure groups, the same for every role (each example scrubbed with its job's payload, as
 * its page would be), shared by every viewer within FRESHNESS.failures.
 */
const failuresRead = liveQuery('failures', async (): Promise<FailureGroupDTO[]> => {
  const groups = await failureGroups(database());
  // Each example is one job's last error: scrubbed with that job's payload, as its page would be.
  const scrubs = await scrubsForIds(
    database(),
    groups.map((g) => g.exampleJobId),
  );
  return groups.map(({ exampleJobId, key, fingerprint: _text, ...g }) => ({
    ...g,
    // The fingerprint is the error's text with numbers folded: it can quote a secret as the
    // example can, so the page gets the group's key (its md5), which a preview accepts too.
    fingerprint: key,
    example: (scrubs.get(exampleJobId) ?? scrubPatterns)(g.example),
    lastSeen: iso(g.lastSeen),
    trend: g.trend.map((t) => ({ day: t.day.toISOString(), count: t.count })),
  }));
});

export async function getFailureGroups({ fresh = false }: LiveRead = {}): Promise<{
  groups: FailureGroupDTO[];
  can: { retry: boolean };
}> {
  const user = await authorize('getFailureGroups');
  return {
    groups: await (fresh ? failuresRead.refresh() : failuresRead.read()),
    can: { retry: permits(user, 'previewFailureGroup') && permits(user, 'applyBulk') },
  };
}
