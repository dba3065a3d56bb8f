/**
 * Enqueue's statements: the one statement for many jobs (keys, inserts and wake-ups together),
 * the fixed-text insert of one job without a key, and the look-up of the jobs that own keys.
 * Building a statement touches no database; the callers choose when and on what it runs.
 */
import { sql, type SQL } from 'drizzle-orm';
import { DEFAULT_AGING_SECONDS } from '../schema.ts';
import type { PreparedSpec, UniqueAction } from './enqueue-spec.ts';
import { run, runText, type Executor, type PgTimestamp } from './executor.ts';
import { mapJob, producerJobColumns, type Job, type JobColumnsRow } from './job.ts';
import { readKindSettings, settingsProblems } from './job-options.ts';
import { LeaseholdInputError } from './errors.ts';
import { GROUPED_WAKE_SUFFIX } from './groups.ts';
import { NOTIFY_QUEUE_HAS_ROOM, WAKE_CHANNEL } from './wake.ts';

/**
 * One statement for one or many jobs: unnest the columns, claim the idempotency keys, insert
 * the jobs whose key was free (or that have none), wake the queues (unless the NOTIFY queue is
 * past NOTIFY_QUEUE_LIMIT: wake.ts). Returns the inserted jobs
 * (or their ids) and the keys this statement took, as JSON aggregates in one row.
 *
 * Jobs without keys (`returns: 'count'`) skip the key step: the input is then read once, so
 * PostgreSQL streams it into the INSERT instead of materialising it (to disk, for 100,000
 * jobs), and needs no sort to keep input order (UUIDv7 ids already follow it).
 */
export async function insertJobs<R extends InsertReturns>(
  executor: Executor,
  jobs: PreparedSpec[],
  returns: R,
  notify: boolean,
): Promise<InsertRow<R>> {
  const rows = await run<InsertRow<R>>(executor, insertStatement(jobs, returns, notify));
  const row = rows[0];
  if (!row) throw new Error('Leasehold enqueue: the insert statement returned no row');
  return row;
}

/** What `inserted` holds for each `returns`: the jobs (as JSON: timestamps are ISO text), their ids, a count. */
interface Inserted {
  jobs: JobColumnsRow[];
  ids: string[];
  count: number;
}
export type InsertReturns = keyof Inserted;

/** The one row of insertStatement(jobs, `R`, …). */
export interface InsertRow<R extends InsertReturns> {
  inserted: Inserted[R];
  keys: { key: string; job_id: string }[];
  /** With uniqueness keys: what take_unique_key answered for each keyed job (`ord` from 1). */
  uniques?: UniqueAnswer[] | null | undefined;
}

/** What leasehold.take_unique_key answered for the job at input position `ord` (from 1). */
export interface UniqueAnswer {
  ord: number;
  job_id: string;
  created: boolean;
  action: UniqueAction;
}

/** A column of insertStatement's input: one parameter when every job has the same value, else an array. */
type Column = <T>(pick: (j: PreparedSpec) => T, type: string) => SQL;

/** The input's tags (a JSON array of arrays or nulls, in step) and options (drizzle/0023). */
function extrasColumns(jobs: PreparedSpec[], column: Column): SQL {
  return sql`
             jsonb_array_elements(${sql.param(JSON.stringify(jobs.map((j) => j.tags)))}::jsonb) AS tags_j, ${column((j) => j.optionsText, 'jsonb')} AS options,`;
}

/** The input's uniqueness keys, their states (comma-joined), modes and debounce windows. */
function uniqueColumns(column: Column): SQL {
  return sql`
             ${column((j) => j.unique?.key ?? null, 'text')} AS unique_key, ${column((j) => j.unique?.while.join(',') ?? null, 'text')} AS unique_while,
             ${column((j) => j.unique?.mode ?? null, 'text')} AS on_conflict, ${column((j) => j.unique?.debounceSeconds ?? null, 'float8')} AS debounce_s,`;
}

/**
 * Each uniqueness key through leasehold.take_unique_key (SECURITY DEFINER), in key order (as
 * the idempotency keys: two calls of overlapping keys wait, never deadlock). A volatile
 * function: each of its statements sees what committed before it ran.
 */
const TAKEN = sql`
    taken AS (
      SELECT u.ord, t.job_id, t.created, t.action
      FROM (SELECT * FROM input WHERE unique_key IS NOT NULL ORDER BY unique_key, ord) u
      CROSS JOIN LATERAL leasehold.take_unique_key(u.unique_key, string_to_array(u.unique_while, ','), u.on_conflict, u.id, u.queue,
        u.payload, u.run_at, make_interval(secs => u.delay_s), make_interval(secs => u.debounce_s)) t
    ),`;

/** insertJobs' statement, built without touching the database. */
export function insertStatement(jobs: PreparedSpec[], returns: InsertReturns, notify: boolean): SQL {
  // A column every job has the same value in (most of them, in a bulk call: one queue, kind,
  // priority, no run time…) travels once, as one parameter; the others as arrays unnested in
  // step. Escaping 100,000 array elements per column was most of a bulk enqueue's client time
  // after validation, and parsing them a part of the server's.
  // Only a call with a grouped job names the column: an ungrouped enqueue's text is the measured one.
  const grouped = jobs.some((j) => j.groupKey !== null);
  const column: Column = <T>(pick: (j: PreparedSpec) => T, type: string) => {
    const same = (v: T) => (v instanceof Date ? v.getTime() : v);
    const first = pick(jobs[0]!);
    const uniform = jobs.every((j) => same(pick(j)) === same(first));
    return uniform
      ? sql`${sql.param(first)}::${sql.raw(type)}`
      : sql`unnest(${sql.param(jobs.map(pick))}::${sql.raw(`${type}[]`)})`;
  };
  const keyed = returns !== 'count';
  // Tags and options (drizzle/0023) and uniqueness keys: named only by a call that has them.
  const extras = jobs.some((j) => j.tags !== null || j.optionsText !== null);
  const uniq = jobs.some((j) => j.unique !== null);
  const returning =
    returns === 'jobs' ? sql.raw(producerJobColumns()) : sql.raw(grouped ? 'id, queue, group_key' : 'id, queue');
  // Without idempotency keys every job is inserted or the statement fails: a count says it all,
  // and 100,000 ids need not travel back as JSON.
  const inserted =
    returns === 'jobs'
      ? sql.raw(`coalesce(json_agg(row_to_json(inserted)), '[]'::json)`)
      : returns === 'ids'
        ? sql.raw(`coalesce(json_agg(inserted.id), '[]'::json)`)
        : sql.raw('to_json(count(*))');
  // claim_at is the aging sort key: run_at moved earlier by priority × the queue's aging step.
  return sql`
    WITH input AS (
      -- Set-returning functions side by side in the select list run in step and stream their
      -- rows; unnest(a, b, …) in FROM would first store all of them (on disk, for 100,000).
      -- Ids and payloads go as one literal each, built by joining: the driver's escaping of
      -- 100,000 array elements one by one was a tenth of a bulk enqueue's client time. A UUID
      -- needs no quoting, and the payloads are already JSON texts, so they make a JSON array.
      SELECT unnest(${sql.param(`{${jobs.map((j) => j.id).join(',')}}`)}::uuid[]) AS id, ${column((j) => j.queue, 'text')} AS queue,
             ${column((j) => j.kind, 'text')} AS kind, ${column((j) => j.kindVersion, 'int')} AS kind_version,
             jsonb_array_elements(${sql.param(`[${jobs.map((j) => j.payloadText).join(',')}]`)}::jsonb) AS payload, ${column((j) => j.idempotencyKey, 'text')} AS idempotency_key,
             ${column((j) => j.priority, 'int')} AS priority, ${column((j) => j.runAt, 'timestamptz')} AS run_at,
             ${column((j) => j.delaySeconds, 'float8')} AS delay_s, ${column((j) => j.maxAttempts, 'int')} AS max_attempts,
             ${column((j) => j.maxAgeSeconds, 'float8')} AS max_age_s, ${column((j) => j.traceId, 'text')} AS trace_id,
             ${column((j) => j.dedupeWindowSeconds, 'float8')} AS window_s,${grouped ? sql` ${column((j) => j.groupKey, 'text')} AS group_key,` : sql``}${extras ? extrasColumns(jobs, column) : sql``}${uniq ? uniqueColumns(column) : sql``}
             generate_series(1, ${jobs.length}::int) AS ord
    ),${uniq ? TAKEN : sql``}
    ${
      keyed
        ? sql`keyed AS (
      INSERT INTO leasehold.dedupe_keys (key, job_id, queue, expires_at)
      SELECT idempotency_key, id, queue, statement_timestamp() + make_interval(secs => window_s)
      FROM input WHERE idempotency_key IS NOT NULL
      -- Keys are taken in key order, so two transactions enqueueing overlapping keys in
      -- different orders wait for each other instead of deadlocking. (Within a key, the first
      -- occurrence wins.)
      ORDER BY idempotency_key, ord
      ON CONFLICT (key) DO NOTHING
      RETURNING key, job_id
    ),`
        : sql``
    }
    inserted AS (
      INSERT INTO leasehold.jobs (id, queue, kind, kind_version, payload, idempotency_key, priority, run_at,
                        claim_at, max_attempts, trace_id, expires_at${grouped ? sql`, group_key` : sql``}${extras ? sql`, tags, options` : sql``})
      SELECT i.id, i.queue, i.kind, i.kind_version, i.payload, i.idempotency_key, i.priority,
             s.run_at,
             s.run_at - make_interval(secs => i.priority * coalesce(q.aging_seconds, ${DEFAULT_AGING_SECONDS}::int)),
             i.max_attempts, i.trace_id,
             CASE WHEN i.max_age_s IS NULL THEN NULL ELSE statement_timestamp() + make_interval(secs => i.max_age_s) END${
               grouped
                 ? sql`,
             i.group_key`
                 : sql``
             }${
               extras
                 ? sql`,
             CASE WHEN jsonb_typeof(i.tags_j) = 'array' THEN ARRAY(SELECT jsonb_array_elements_text(i.tags_j)) END, i.options`
                 : sql``
             }
      FROM input i
      CROSS JOIN LATERAL (SELECT coalesce(i.run_at, statement_timestamp() + make_interval(secs => i.delay_s)) AS run_at) s
      LEFT JOIN leasehold.queues q ON q.name = i.queue
      ${keyed ? sql`WHERE (i.idempotency_key IS NULL OR i.id IN (SELECT job_id FROM keyed))${uniq ? sql` AND (i.unique_key IS NULL OR i.id IN (SELECT job_id FROM taken WHERE created))` : sql``} ORDER BY i.ord` : sql``}
      RETURNING ${returning}
    )
    SELECT (SELECT ${inserted} FROM inserted) AS inserted,
           ${keyed ? sql`(SELECT coalesce(json_agg(json_build_object('key', key, 'job_id', job_id)), '[]'::json) FROM keyed)` : sql`'[]'::json`} AS keys,${
             uniq
               ? sql`
           (SELECT json_agg(json_build_object('ord', ord, 'job_id', job_id, 'created', created, 'action', action)) FROM taken) AS uniques,`
               : sql``
           }
           ${
             notify
               ? grouped
                 ? sql`(SELECT count(pg_notify(${WAKE_CHANNEL}, payload))
                        FROM (SELECT DISTINCT queue || CASE WHEN group_key IS NULL THEN '' ELSE ${GROUPED_WAKE_SUFFIX} END AS payload
                              FROM inserted) woken
                        WHERE ${sql.raw(NOTIFY_QUEUE_HAS_ROOM)})`
                 : sql`(SELECT count(pg_notify(${WAKE_CHANNEL}, queue)) FROM (SELECT DISTINCT queue FROM inserted) woken
                      WHERE ${sql.raw(NOTIFY_QUEUE_HAS_ROOM)})`
               : sql`0`
           } AS woken
    `;
}

/**
 * Why enqueue exists twice, here (TypeScript, this text and insertStatement) and as the plpgsql
 * function leasehold.enqueue() (drizzle/0011), held equal by db/surface.test.ts: SQL callers
 * (triggers, outboxes, producers in other languages) have no TypeScript, so they need the
 * function; TypeScript callers get their errors named per field before any round trip, and
 * their single enqueue is this constant text prepared once per connection, the path the bench
 * measured (docs/performance.md: "A single enqueue is one prepared INSERT", about 400 to
 * 900–1,000 jobs/s on one connection; "Single enqueue: a fixed statement", about 1,700 to
 * 2,100; the eleventh run 2,135 jobs/s on one connection, 1.81 × the best anchor and 0.79 × the
 * bare INSERT's 2,713, and 5,131 on eight). Routing it through the function would put a
 * plpgsql call and its own checks on each of those commits, unmeasured against these figures.
 * So both stay (issue 34 does not merge them); a change to one is a change to both.
 *
 * The statement of a single enqueue without an idempotency key: fixed text, prepared once per
 * connection. A job of priority 0 (most) needs no lookup of its queue's aging step. Only what
 * the database decides comes back; the rest of the job is what was sent.
 */
function insertOneText(aging: boolean): string {
  const claimAt = aging
    ? `s.run_at - make_interval(secs => $6::int * coalesce((SELECT aging_seconds FROM leasehold.queues WHERE name = $2::text), ${DEFAULT_AGING_SECONDS}))`
    : 's.run_at';
  return `
    WITH inserted AS (
      INSERT INTO leasehold.jobs (id, queue, kind, kind_version, payload, priority, run_at, claim_at, max_attempts, trace_id, expires_at)
      SELECT $1::uuid, $2::text, $3::text, $4::int, $5::jsonb, $6::int, s.run_at, ${claimAt},
             $7::int, $8::text, statement_timestamp() + make_interval(secs => $9::float8)
      FROM (SELECT coalesce($10::timestamptz, statement_timestamp() + make_interval(secs => $11::float8)) AS run_at) s
      RETURNING queue, run_at, expires_at, created_at
    )
    SELECT run_at, expires_at, created_at, CASE WHEN $12::boolean AND ${NOTIFY_QUEUE_HAS_ROOM} THEN pg_notify('${WAKE_CHANNEL}', queue) END AS woken FROM inserted`;
}
const INSERT_ONE = { aging: insertOneText(true), plain: insertOneText(false) };

export async function insertOne(executor: Executor, job: PreparedSpec, notify: boolean): Promise<Job> {
  const aging = job.priority > 0;
  const [row] = await runText<{ run_at: PgTimestamp; expires_at: PgTimestamp | null; created_at: PgTimestamp }>(
    executor,
    aging ? INSERT_ONE.aging : INSERT_ONE.plain,
    [
      job.id,
      job.queue,
      job.kind,
      job.kindVersion,
      job.payloadText,
      job.priority,
      job.maxAttempts,
      job.traceId,
      job.maxAgeSeconds,
      job.runAt,
      job.delaySeconds,
      notify,
    ],
    aging ? 'leasehold_enqueue_one_aging' : 'leasehold_enqueue_one',
  );
  if (!row) throw new Error('Leasehold enqueue: the insert statement returned no row');
  // The rest of the job is what was sent: map it as the stored row would read.
  return mapJob({
    id: job.id,
    queue: job.queue,
    kind: job.kind,
    kind_version: job.kindVersion,
    payload: JSON.parse(job.payloadText), // as stored: jsonb keeps what JSON keeps
    idempotency_key: null,
    state: 'ready',
    priority: job.priority,
    run_at: row.run_at,
    attempts: 0,
    released: 0,
    max_attempts: job.maxAttempts,
    lease_token: null,
    lease_until: null,
    worker_id: null,
    failure_class: null,
    last_error: null,
    trace_id: job.traceId,
    expires_at: row.expires_at,
    created_at: row.created_at,
    started_at: null,
    finished_at: null,
    updated_at: row.created_at,
    group_key: null,
  });
}

/**
 * A row of lookupKeys: the key, its job's id and, with `withJobs`, that job's columns (all null
 * when retention removed it, absent without `withJobs`).
 */
export type KeyOwnerRow = { key: string; job_id: string } & (JobColumnsRow | { id?: null });

/** The job ids that own `keys` now, with the jobs where they still exist. */
export async function lookupKeys(
  executor: Executor,
  keys: string[],
  withJobs: boolean,
): Promise<Map<string, KeyOwnerRow>> {
  const rows = await run<KeyOwnerRow>(
    executor,
    sql`SELECT d.key, d.job_id ${withJobs ? sql.raw(', ' + producerJobColumns('j')) : sql.raw('')}
        FROM leasehold.dedupe_keys d ${withJobs ? sql.raw('LEFT JOIN leasehold.jobs j ON j.id = d.job_id AND j.idempotency_key = d.key') : sql.raw('')}
        WHERE d.key = ANY(${sql.param(keys)}::text[])`,
  );
  return new Map(rows.map((r) => [r.key, r]));
}

/** The job `id` as the producer reads it, or null when there is none. */
export async function jobById(executor: Executor, id: string): Promise<Job | null> {
  const rows = await run<JobColumnsRow>(
    executor,
    sql`SELECT ${sql.raw(producerJobColumns())} FROM leasehold.jobs WHERE id = ${id}::uuid`,
  );
  return rows[0] ? mapJob(rows[0]) : null;
}

/**
 * Refuses jobs whose own timeout or back-off lies outside their kind's bounds (the handler's
 * `jobSettings`, registered in `kinds.job_settings`): one read, before anything is written, so a
 * refusal leaves a caller's transaction as it was. Jobs without such settings read nothing.
 */
export async function checkKindSettings(
  executor: Executor,
  operation: string,
  jobs: readonly PreparedSpec[],
): Promise<void> {
  const asking = jobs.filter((j) => j.settings !== null);
  if (asking.length === 0) return;
  const pairs = [...new Set(asking.map((j) => `${j.kind}\u0000${j.kindVersion}`))];
  const rows = await run<{ kind: string; version: number; job_settings: unknown }>(
    executor,
    sql`SELECT kind, version, job_settings FROM leasehold.kinds
        WHERE (kind, version) IN (SELECT * FROM unnest(${sql.param(pairs.map((p) => p.split('\u0000')[0]))}::text[],
                                                       ${sql.param(pairs.map((p) => Number(p.split('\u0000')[1])))}::int[]))`,
  );
  const registered = new Map(rows.map((r) => [`${r.kind}\u0000${r.version}`, readKindSettings(r.job_settings)]));
  const problems: string[] = [];
  jobs.forEach((job, index) => {
    if (job.settings === null) return;
    const label = jobs.length === 1 && operation === 'enqueue' ? '' : `jobs[${index}].`;
    problems.push(
      ...settingsProblems(label, job.settings, registered.get(`${job.kind}\u0000${job.kindVersion}`) ?? null),
    );
  });
  if (problems.length > 0) throw new LeaseholdInputError(operation, problems.slice(0, 20));
}
