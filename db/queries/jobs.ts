/**
 * Read models for the jobs list, job detail, failure groups, bulk previews and the audit log.
 * Filters and sorts come from URLs: they are parsed here against allowlists, and lists page
 * by keyset (the last id seen), never by OFFSET.
 */
import { sql, type SQL } from 'drizzle-orm';
import { z } from 'zod';
import { CANCELLABLE_FROM, FAILURE_CLASSES, LIST_STATES, RETRYABLE_FROM, type JobState } from '../states.ts';
import { run, toDate, toDateOrNull, type Executor, type PgTimestamp } from '../queue/executor.ts';
import { attemptBudget, type AttemptBudget } from '../queue/attempt-cap.ts';
import { attemptHistory, type AttemptRow } from '../queue/history.ts';
import { JOB_COLUMNS, mapJob, type Job, type JobColumnsRow } from '../queue/job.ts';
import { MAX_TAG_LENGTH } from '../queue/enqueue-spec.ts';
import type { JobProgress, JobResult } from '../queue/results.ts';
import { nameSchema, uuidSchema } from '../queue/validate.ts';
import { SEARCH_PATH_PATTERN } from '../queue/kinds.ts';
import { searchExpression, searchKindCondition, searchScalarCondition } from '../migrate/search-indexes.ts';
import { inListState } from './sub-states.ts';

export { LIST_STATES };
export const LIST_SORTS = ['newest', 'oldest'] as const;

/** A control character (U+0000 to U+001F, U+007F): no tag holds one. */
const hasControl = (s: string) => {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
};

/** Characters as PostgreSQL's length() counts them: code points (a surrogate pair is one). */
const characters = (s: string) => {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xdc00 || c > 0xdfff) n++;
  }
  return n;
};

/**
 * One tag to filter by, checked as a job's tags are (db/queue/enqueue-spec.ts, tagSchema, and the
 * trigger jobs_extras_check): 1 to 64 characters (as PostgreSQL counts them), no control
 * characters. Matched exactly, case and spaces included.
 */
export const tagFilterSchema = z
  .string()
  .refine((s) => s.length > 0 && characters(s) <= MAX_TAG_LENGTH, `a tag is 1 to ${MAX_TAG_LENGTH} characters`)
  .refine((s) => !hasControl(s), 'a tag holds no control characters');

/** A time of the created-time range: ISO 8601 (`2026-05-01T09:30`, taken as UTC without a zone). */
export function filterTime(text: string): Date | null {
  if (!/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})?)?$/.test(text)) return null;
  const zoned = /(Z|[+-]\d{2}:\d{2})$/.test(text) || !text.includes('T') ? text : `${text}Z`;
  const at = new Date(text.includes('T') ? zoned : `${text}T00:00:00Z`);
  return Number.isNaN(at.getTime()) ? null : at;
}

const timeFilterSchema = z
  .string()
  .max(40)
  .refine((s) => filterTime(s) !== null, 'expected a time such as 2026-05-01T09:30 (UTC) or 2026-05-01T09:30+02:00');

export const jobFilterSchema = z.strictObject({
  state: z.enum(LIST_STATES).optional(),
  queue: nameSchema.optional(),
  kind: nameSchema.optional(),
  failureClass: z.enum(FAILURE_CLASSES).optional(),
  /** A job id, or an exact idempotency key. */
  search: z
    .string()
    .trim()
    .min(1)
    .max(512)
    .refine((s) => !s.includes('\u0000'), 'invalid character')
    .optional(),
  /** Jobs that carry this tag (among others). */
  tag: tagFilterSchema.optional(),
  /** A searchable payload path (`customer.email`), with `value`: jobs whose payload has it there (searchList). */
  path: z
    .string()
    .max(200, 'a payload path is at most 200 characters')
    .regex(SEARCH_PATH_PATTERN, 'a payload path is keys joined by dots, such as orderId or customer.email')
    .optional(),
  /** The value at `path`, as text (`42` finds the number 42 too). */
  value: z
    .string()
    .max(512, 'a value to search for is at most 512 characters')
    .refine((s) => !s.includes('\u0000'), 'invalid character')
    .optional(),
  /** Created at or after this time (ISO 8601; without a zone, UTC). */
  from: timeFilterSchema.optional(),
  /** Created at or before this time. */
  to: timeFilterSchema.optional(),
});
export type JobFilter = z.infer<typeof jobFilterSchema>;

/**
 * A payload search as the data-access layer resolved it: the path and value of the filter, and
 * the kinds it runs in (each has the path searchable and its index ready), at least one.
 */
export interface PayloadSearch {
  path: string;
  value: string;
  kinds: readonly string[];
  /**
   * Per kind, the versions whose jobs this viewer may find (the path is not masked in them);
   * undefined: every version (a role that sees payloads whole). Filtered in the statement, so a
   * page and its next cursor never count a job the viewer may not see.
   */
  versions?: Readonly<Record<string, readonly number[]>> | undefined;
}

export const jobListSchema = jobFilterSchema.extend({
  sort: z.enum(LIST_SORTS).default('newest'),
  /** Keyset cursor: the last id of the previous page. */
  after: uuidSchema.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});
export type JobListQuery = z.input<typeof jobListSchema>;

/** The job that owns idempotency key `key`: its id and its own key (not a later job reusing the id). */
const KEY_OWNER = (key: string) =>
  sql`SELECT d.job_id FROM leasehold.dedupe_keys d JOIN leasehold.jobs j ON j.id = d.job_id AND j.idempotency_key = d.key WHERE d.key = ${key}`;

/**
 * A job as the dashboard and `leasehold jobs` show it: with its attempt budget, counted against
 * the cap that applies (the handler's `maxAttempts` from the kinds registry, the job's own, or
 * the limit), as the fail path and the reaper count it.
 */
export type JobView = Job & { budget: AttemptBudget };

/** The handler's cap for the row's kind version (the kinds registry's), beside JOB_COLUMNS. */
const HANDLER_CAP_COLUMN = `(SELECT k.max_attempts FROM leasehold.kinds k WHERE k.kind = jobs.kind AND k.version = jobs.kind_version) AS handler_max_attempts`;
// The job's effective deadline in place of its own `lease_until` (sub-states.ts's
// effectiveLeaseUntil, as a column of this list).
const VIEW_COLUMNS = `${JOB_COLUMNS.replace('lease_until,', 'leasehold.effective_lease_until(lease_until, lease_token, queue) AS lease_until,')}, ${HANDLER_CAP_COLUMN}`;
type JobViewRow = JobColumnsRow & { handler_max_attempts: number | null };

function mapJobView(row: JobViewRow): JobView {
  const job = mapJob(row);
  return { ...job, budget: attemptBudget(job, row.handler_max_attempts) };
}

/** One kind's part of a payload search, as its partial index spells it (db/migrate/search-indexes.ts). */
const searchIn = (kind: string, search: PayloadSearch) => {
  const versions = search.versions?.[kind];
  return sql`${searchKindCondition(kind)} AND ${searchExpression(search.path)} = ${search.value}::text
    AND ${searchScalarCondition(search.path)} = ${search.value}::text${
      versions === undefined ? sql`` : sql` AND kind_version = ANY(${`{${versions.join(',')}}`}::int[])`
    }`;
};

/**
 * The filter's condition on jobs. A payload path in the filter matches through `search` alone
 * (the kinds the data-access layer resolved): without it, nothing.
 */
export function filterSql(filter: JobFilter, search?: PayloadSearch): SQL {
  const parts: SQL[] = [sql`true`];
  if (filter.path !== undefined) {
    parts.push(
      search && search.kinds.length > 0
        ? sql`(${sql.join(
            search.kinds.map((k) => sql`(${searchIn(k, search)})`),
            sql` OR `,
          )})`
        : sql`false`,
    );
  }
  const from = filter.from === undefined ? null : filterTime(filter.from);
  const to = filter.to === undefined ? null : filterTime(filter.to);
  if (from) parts.push(sql`created_at >= ${from.toISOString()}::timestamptz`);
  if (to) parts.push(sql`created_at <= ${to.toISOString()}::timestamptz`);
  if (filter.state) parts.push(inListState(filter.state));
  if (filter.queue) parts.push(sql`queue = ${filter.queue}`);
  if (filter.kind) parts.push(sql`kind = ${filter.kind}`);
  if (filter.failureClass) parts.push(sql`failure_class = ${filter.failureClass}`);
  // Containment, so the partial GIN index jobs_tags_idx (drizzle/0024) can answer it: the
  // operator is strict, so it implies the index's `tags IS NOT NULL`.
  if (filter.tag !== undefined) parts.push(sql`tags @> ARRAY[${filter.tag}]::text[]`);
  if (filter.search) {
    // `= ANY(ARRAY(subquery))` runs the lookups once, first, then probes the primary key: an
    // OR of the two would make the planner walk the whole table in id order.
    const ids = uuidSchema.safeParse(filter.search).success
      ? sql`SELECT ${filter.search}::uuid UNION ${KEY_OWNER(filter.search)}`
      : KEY_OWNER(filter.search);
    parts.push(sql`id = ANY(ARRAY(${ids}))`);
  }
  return sql.join(parts, sql` AND `);
}

export async function listJobs(
  executor: Executor,
  query: z.output<typeof jobListSchema>,
  search?: PayloadSearch,
): Promise<{ jobs: JobView[]; next: string | null }> {
  if (query.path !== undefined) return searchList(executor, query, search);
  const desc = query.sort === 'newest';
  const keyset = query.after ? (desc ? sql`AND id < ${query.after}::uuid` : sql`AND id > ${query.after}::uuid`) : sql``;
  const order = sql.raw(desc ? 'DESC' : 'ASC');
  const limit = query.limit + 1;
  // Live jobs (ready, running and their sub-states) are found where they live, not by a walk
  // of the whole table: ready ones through `ready_rows` (both ready tables), running ones through the lease rows
  // (no index on jobs names the state: docs/design/schema-v1.md). The candidates are
  // materialised first, then checked against the job rows (a ready row may be stale) and the
  // page cut: the cost grows with the live jobs that match, not with the history.
  const narrow = (column: string) =>
    sql.join(
      [
        sql`true`,
        ...(query.queue ? [sql`${sql.raw(column)}.queue = ${query.queue}`] : []),
        ...(query.kind && column === 'r' ? [sql`r.kind = ${query.kind}`] : []),
      ],
      sql` AND `,
    );
  const candidates =
    query.state === 'ready' || query.state === 'scheduled' || query.state === 'retrying'
      ? sql`SELECT DISTINCT r.id FROM leasehold.ready_rows r WHERE ${narrow('r')}`
      : query.state === 'running' || query.state === 'lease_expired'
        ? sql`SELECT u.id FROM leasehold.leases l CROSS JOIN unnest(l.job_ids) AS u(id) WHERE ${narrow('l')}`
        : null;
  // Finished jobs and lists without a state walk an index in id order: the primary key, or
  // (queue, id), (kind, id), (failure_class, id), each written once at enqueue or failure.
  const rows = await run<JobViewRow>(
    executor,
    candidates
      ? sql`WITH candidate AS MATERIALIZED (${candidates}),
                 matching AS MATERIALIZED (
                   SELECT id FROM leasehold.jobs WHERE id IN (SELECT id FROM candidate) AND ${filterSql(query)} ${keyset}
                 ),
                 page AS (SELECT id FROM matching ORDER BY id ${order} LIMIT ${limit})
            SELECT ${sql.raw(VIEW_COLUMNS)} FROM leasehold.jobs WHERE id IN (SELECT id FROM page) ORDER BY id ${order}`
      : sql`SELECT ${sql.raw(VIEW_COLUMNS)} FROM leasehold.jobs WHERE ${filterSql(query)} ${keyset}
            ORDER BY id ${order} LIMIT ${limit}`,
  );
  const jobs = rows.slice(0, query.limit).map(mapJobView);
  return { jobs, next: rows.length > query.limit ? jobs[jobs.length - 1]!.id : null };
}

/**
 * A payload search's page: per kind, the jobs whose payload has the value at the path, newest
 * (or oldest) by created time, each kind's part read from its own partial index
 * (`jobs_search_*`: the value, then created_at and id, so a value matching half the kind's jobs
 * reads one page of the index, not the half) and the parts merged. The keyset is the last
 * row's (created_at, id). No `search` (no kind may be searched): no jobs.
 */
async function searchList(
  executor: Executor,
  query: z.output<typeof jobListSchema>,
  search: PayloadSearch | undefined,
): Promise<{ jobs: JobView[]; next: string | null }> {
  if (!search || search.kinds.length === 0) return { jobs: [], next: null };
  const rows = await run<JobViewRow>(executor, searchListSql(query, search));
  const jobs = rows.slice(0, query.limit).map(mapJobView);
  return { jobs, next: rows.length > query.limit ? jobs[jobs.length - 1]!.id : null };
}

/** searchList's statement (one row more than the page: whether there is a next one). */
export function searchListSql(query: z.output<typeof jobListSchema>, search: PayloadSearch): SQL {
  const desc = query.sort === 'newest';
  const order = sql.raw(desc ? 'created_at DESC, id DESC' : 'created_at ASC, id ASC');
  const keyset = query.after
    ? sql`AND (created_at, id) ${sql.raw(desc ? '<' : '>')} (SELECT a.created_at, a.id FROM leasehold.jobs a WHERE a.id = ${query.after}::uuid)`
    : sql``;
  const limit = query.limit + 1;
  const { path: _path, ...rest } = query;
  const parts = search.kinds.map(
    (kind) =>
      sql`(SELECT id, created_at FROM leasehold.jobs WHERE ${searchIn(kind, search)} AND ${filterSql(rest)} ${keyset}
           ORDER BY ${order} LIMIT ${limit})`,
  );
  return sql`WITH found AS (${sql.join(parts, sql` UNION ALL `)}),
                  page AS (SELECT id FROM found ORDER BY ${order} LIMIT ${limit})
             SELECT ${sql.raw(VIEW_COLUMNS)} FROM leasehold.jobs WHERE id IN (SELECT id FROM page) ORDER BY ${order}`;
}

/** The most jobs `countNewerJobs` counts: the marker says "100+" past it. */
export const NEW_JOBS_CAP = 100;

/** The list's filter and its cursor: the newest job it shows, or (it shows none) when it was read. */
export const newJobsSchema = jobFilterSchema.extend({
  newerThan: uuidSchema.optional(),
  /** Milliseconds since the epoch. */
  since: z.coerce.number().int().min(0).optional(),
});

/**
 * How many jobs match `filter` above `newerThan` in the list's newest-first order (ids are
 * UUIDv7: newer), up to `cap` (`more` says there are others): what the job list's "n new jobs"
 * marker polls. The walk starts at the cursor's end of the primary key, so its cost grows with
 * the new jobs, not with the table; the cap stops it there.
 */
export async function countNewerJobs(
  executor: Executor,
  query: JobFilter & { newerThan: string },
  cap: number = NEW_JOBS_CAP,
): Promise<{ count: number; more: boolean }> {
  const [row] = await run<{ n: number }>(
    executor,
    sql`SELECT count(*)::int AS n FROM (
          SELECT 1 FROM leasehold.jobs WHERE ${filterSql(query)} AND id > ${query.newerThan}::uuid ORDER BY id LIMIT ${cap + 1}
        ) newer`,
  );
  const n = row?.n ?? 0;
  return { count: Math.min(n, cap), more: n > cap };
}

export type { AttemptRow } from '../queue/history.ts';

export interface AuditEntry {
  id: number;
  at: Date;
  actor: string;
  action: string;
  jobIds: string[];
  queue: string | null;
  requested: number;
  affected: number;
  outcome: string;
  detail: Record<string, unknown>;
}

/**
 * A job's stored result and its latest progress report (db/queue/results.ts, drizzle/0025), as
 * two JSON columns beside the job's: each a primary-key look-up, in the job's own statement.
 */
const RESULT_COLUMNS = `(SELECT json_build_object('attempt', r.attempt, 'value', r.result, 'marker', r.marker, 'bytes', r.bytes, 'storedAt', r.stored_at)
    FROM leasehold.job_results r WHERE r.job_id = jobs.id) AS result_json,
  (SELECT json_build_object('attempt', p.attempt, 'fraction', p.fraction, 'message', p.message, 'updatedAt', p.updated_at)
    FROM leasehold.job_progress p WHERE p.job_id = jobs.id) AS progress_json`;

/** RESULT_COLUMNS as they arrive (json: the times are ISO text). */
interface ResultColumnsRow {
  result_json: { attempt: number; value: unknown; marker: string | null; bytes: number; storedAt: string } | null;
  progress_json: { attempt: number; fraction: number; message: string | null; updatedAt: string } | null;
}

/** A job as its page shows it: with what its handler returned, and how far it got. */
export type JobWithOutcome = { job: JobView; result: JobResult | null; progress: JobProgress | null };

function mapJobWithOutcome(row: JobViewRow & ResultColumnsRow): JobWithOutcome {
  const r = row.result_json;
  const p = row.progress_json;
  return {
    job: mapJobView(row),
    result: r && { attempt: r.attempt, value: r.value, marker: r.marker, bytes: r.bytes, storedAt: toDate(r.storedAt) },
    progress: p && { attempt: p.attempt, fraction: p.fraction, message: p.message, updatedAt: toDate(p.updatedAt) },
  };
}

const JOB_WITH_OUTCOME = (id: string) =>
  sql`SELECT ${sql.raw(VIEW_COLUMNS)}, ${sql.raw(RESULT_COLUMNS)} FROM leasehold.jobs WHERE id = ${id}::uuid`;

/**
 * One job with its result and progress, without its history: what the job page polls while the
 * job runs (one statement, by primary key). Null when there is no such job.
 */
export async function jobWithOutcome(executor: Executor, id: string): Promise<JobWithOutcome | null> {
  const [row] = await run<JobViewRow & ResultColumnsRow>(executor, JOB_WITH_OUTCOME(id));
  return row ? mapJobWithOutcome(row) : null;
}

export async function jobDetail(
  executor: Executor,
  id: string,
): Promise<(JobWithOutcome & { attempts: AttemptRow[]; audit: AuditEntry[] }) | null> {
  const [jobs, attempts, audit] = await Promise.all([
    run<JobViewRow & ResultColumnsRow>(executor, JOB_WITH_OUTCOME(id)),
    attemptHistory(executor, id),
    run<AuditLogRow>(
      executor,
      sql`SELECT ${sql.raw(AUDIT_COLUMNS)} FROM leasehold.audit_log WHERE job_ids @> ARRAY[${id}::uuid] ORDER BY id DESC LIMIT 50`,
    ),
  ]);
  if (!jobs[0]) return null;
  return {
    ...mapJobWithOutcome(jobs[0]),
    attempts,
    audit: audit.map(mapAudit),
  };
}

const AUDIT_COLUMNS = 'id, at, actor, action, job_ids, queue, requested, affected, outcome, detail';

/** A row of AUDIT_COLUMNS. */
interface AuditLogRow {
  /** bigint: text from pg and Drizzle alike. */
  id: string;
  at: PgTimestamp;
  actor: string;
  action: string;
  job_ids: string[];
  queue: string | null;
  requested: number;
  affected: number;
  outcome: string;
  /** Every writer stores an object (jsonb_build_object, JSON.stringify of one). */
  detail: Record<string, unknown>;
}

function mapAudit(r: AuditLogRow): AuditEntry {
  return {
    id: Number(r.id),
    at: toDate(r.at),
    actor: r.actor,
    action: r.action,
    jobIds: r.job_ids,
    queue: r.queue,
    requested: r.requested,
    affected: r.affected,
    outcome: r.outcome,
    detail: r.detail,
  };
}

export const auditListSchema = z.strictObject({
  before: z.coerce.number().int().positive().optional(),
  actor: z
    .string()
    .max(256)
    .refine((s) => !s.includes('\u0000'), 'invalid character')
    .optional(),
  action: z
    .string()
    .regex(/^[a-z_]{1,40}$/)
    .optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

export async function listAudit(executor: Executor, query: z.output<typeof auditListSchema>) {
  const parts: SQL[] = [sql`true`];
  if (query.before) parts.push(sql`id < ${query.before}`);
  if (query.actor) parts.push(sql`actor = ${query.actor}`);
  if (query.action) parts.push(sql`action = ${query.action}`);
  const rows = await run<AuditLogRow>(
    executor,
    sql`SELECT ${sql.raw(AUDIT_COLUMNS)} FROM leasehold.audit_log WHERE ${sql.join(parts, sql` AND `)} ORDER BY id DESC LIMIT ${query.limit + 1}`,
  );
  const entries = rows.slice(0, query.limit).map(mapAudit);
  return { entries, next: rows.length > query.limit ? entries[entries.length - 1]!.id : null };
}

/**
 * An admin's payload reveal: its audit row (action `reveal_payload`, the job and its queue),
 * through the SECURITY DEFINER leasehold.record_payload_reveal (drizzle/0011): the dashboard's
 * role writes no audit row of its own. The row's id; null when the job is gone (nothing written).
 */
export async function recordPayloadReveal(
  executor: Executor,
  entry: { actor: string; jobId: string; role: string },
): Promise<number | null> {
  const rows = await run<{ id: string | null }>(
    executor,
    sql`SELECT leasehold.record_payload_reveal(${entry.actor}, ${entry.jobId}::uuid, ${entry.role}) AS id`,
  );
  const id = rows[0]?.id;
  return id === null || id === undefined ? null : Number(id);
}

/** Fingerprint of an error: numbers, ids and quoted values folded, so alike errors group. */
const FINGERPRINT = sql`left(regexp_replace(regexp_replace(coalesce(last_error, ''),
  '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}', '<id>', 'gi'), '[0-9]+', '<n>', 'g'), 200)`;

/** How many of the latest dead jobs the failure groups look at. */
export const FAILURE_SAMPLE = 10_000;

/**
 * The latest dead jobs (at most FAILURE_SAMPLE, within `days`) grouped by failure class and
 * error fingerprint, with counts per day for a trend. Index: the failure-class index (dead jobs
 * always have a class), so the cost grows with the jobs that ever failed, not with all of them.
 */
export async function failureGroups(executor: Executor, days = 7) {
  const rows = await run<{
    failure_class: string;
    fingerprint: string;
    queue: string;
    kind: string;
    n: number;
    last_seen: PgTimestamp | null;
    example: string | null;
    example_job_id: string;
    group_key: string;
    /** json: each day is ISO text. */
    trend: { day: string; count: number }[] | null;
  }>(
    executor,
    // The sample first, the fingerprints of its rows after: computed in the same SELECT as the
    // ORDER BY … LIMIT, PostgreSQL evaluates them for every dead job it sorts (30,000 of them in
    // the dashboard bench), not only for the sample (docs/performance.md, Dashboard).
    sql`WITH latest AS (
          SELECT id, failure_class, queue, kind, finished_at, last_error
          FROM leasehold.jobs WHERE state = 'dead' AND failure_class IS NOT NULL AND finished_at > now() - make_interval(days => ${days})
          ORDER BY finished_at DESC LIMIT ${FAILURE_SAMPLE}
        ), d AS (
          SELECT coalesce(failure_class, 'unknown') AS failure_class, ${FINGERPRINT} AS fingerprint,
                 id, queue, kind, finished_at, last_error
          FROM latest
        ), per_day AS (
          SELECT failure_class, fingerprint, date_trunc('day', finished_at, 'UTC') AS day, count(*)::int AS n FROM d GROUP BY 1, 2, 3
        )
        SELECT g.*, md5(g.fingerprint) AS group_key, (SELECT json_agg(json_build_object('day', p.day, 'count', p.n) ORDER BY p.day) FROM per_day p
                     WHERE p.failure_class = g.failure_class AND p.fingerprint = g.fingerprint) AS trend
        FROM (
          SELECT failure_class, fingerprint, min(queue) AS queue, min(kind) AS kind, count(*)::int AS n,
                 max(finished_at) AS last_seen, min(last_error) AS example,
                 -- The job the example is the error of (min orders as ORDER BY does), whose
                 -- payload the dashboard scrubs the example with: one payload, not the group's.
                 (array_agg(id ORDER BY last_error, id))[1] AS example_job_id
          FROM d GROUP BY 1, 2
        ) g
        ORDER BY g.n DESC LIMIT 100`,
  );
  return rows.map((r) => ({
    failureClass: r.failure_class,
    fingerprint: r.fingerprint,
    queue: r.queue,
    kind: r.kind,
    count: r.n,
    lastSeen: toDateOrNull(r.last_seen),
    example: r.example ?? '',
    exampleJobId: r.example_job_id,
    /** md5 of the fingerprint: names the group without quoting its error (failureGroupFilter takes either). */
    key: r.group_key,
    trend: (r.trend ?? []).map((p) => ({ day: toDate(p.day), count: p.count })),
  }));
}

/**
 * Ids (and lease tokens) of dead jobs in one failure group, for a bulk retry preview. The group
 * is named by its fingerprint or by its `key` (the md5 of it, what the dashboard hands out: a
 * fingerprint quotes the error, which can hold a secret).
 */
export function failureGroupFilter(failureClass: string, fingerprint: string, days = 7): SQL {
  return sql`state = 'dead' AND failure_class IS NOT NULL AND finished_at > now() - make_interval(days => ${days})
             AND coalesce(failure_class, 'unknown') = ${failureClass}
             AND (${FINGERPRINT} = ${fingerprint} OR md5(${FINGERPRINT}) = ${fingerprint})`;
}

/** The jobs with these ids (any order; ids that are gone are left out). */
export async function jobsByIds(executor: Executor, ids: readonly string[]): Promise<Job[]> {
  if (ids.length === 0) return [];
  const rows = await run<JobColumnsRow>(
    executor,
    sql`SELECT ${sql.raw(JOB_COLUMNS)} FROM leasehold.jobs WHERE id = ANY(${sql.param([...ids])}::uuid[])`,
  );
  return rows.map(mapJob);
}

/**
 * A bulk action's frozen id set: at most `cap` jobs matching `where`, oldest first, with the
 * lease tokens of running ones; `total` counts up to cap + 1 so "more than the cap" is known.
 */
export async function previewIds(executor: Executor, where: SQL, cap: number) {
  const rows = await run<{ id: string; lease_token: string | null; state: string }>(
    executor,
    sql`SELECT id, lease_token, state FROM leasehold.jobs WHERE ${where} ORDER BY id LIMIT ${cap + 1}`,
  );
  return {
    total: rows.length,
    overCap: rows.length > cap,
    jobs: rows.slice(0, cap).map((r) => ({ id: r.id, leaseToken: r.lease_token, state: r.state })),
  };
}

/** The bulk actions a list filter can preview, and the states each one accepts. */
export const BULK_ACTIONS = ['retry', 'cancel'] as const;
export type BulkAction = (typeof BULK_ACTIONS)[number];
const ACCEPTS: Record<BulkAction, readonly JobState[]> = { retry: RETRYABLE_FROM, cancel: CANCELLABLE_FROM };

/**
 * A bulk action's frozen id set for a list filter: the matching jobs in the states the action
 * accepts. The states are constants, never input, so they are spliced as literals: the planner
 * then sees `state IN ('dead', 'cancelled')` as the partial indexes spell it, as it did when the
 * data-access layer wrote this condition itself.
 */
export function previewForAction(
  executor: Executor,
  action: BulkAction,
  filter: JobFilter,
  cap: number,
  search?: PayloadSearch,
) {
  const states = sql.raw(`state IN (${ACCEPTS[action].map((s) => `'${s}'`).join(', ')})`);
  return previewIds(executor, sql`${filterSql(filter, search)} AND ${states}`, cap);
}
