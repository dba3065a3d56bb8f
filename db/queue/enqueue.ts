/**
 * Enqueue: jobs are rows written in the caller's transaction, so a job exists exactly when the
 * business write that asked for it committed.
 *
 * Idempotency keys live in `dedupe_keys` (primary key on the key). A second enqueue of a key
 * hits the unique index: while the first transaction is open it waits; after the first
 * commits it does nothing and we read the winner's job id; after the first rolls back it
 * inserts. So concurrent enqueues of one key give one row and no error. The follow-up read is
 * a separate statement because the conflicting row may have committed after our statement's
 * snapshot was taken (READ COMMITTED: the next statement sees it).
 */
import { sql, type SQL } from 'drizzle-orm';
import pg from 'pg';
import { z } from 'zod';
import { DEFAULT_AGING_SECONDS, DEFAULT_MAX_ATTEMPTS, MAX_PRIORITY, MIN_PRIORITY } from '../schema';
import { LeaseholdInputError } from './errors';
import { newJobId } from './ids';
import { autocommits, ownPool, run, runText, type Executor } from './executor';
import { JOB_COLUMNS, jobColumns, mapJob, type Job } from './job';
import { encodePayload, nameSchema, problemsOf, textSchema, uuidSchema } from './validate';

/** How long an idempotency key keeps deduplicating by default, job or no job: 30 days. */
export const DEFAULT_DEDUPE_WINDOW_SECONDS = 30 * 24 * 3600;
/** Most jobs accepted by one `enqueueMany` call. */
export const MAX_BULK_ENQUEUE = 100_000;

const enqueueSpecSchema = z
  .strictObject({
    /** Application-supplied id; a UUIDv7 is generated when absent. */
    id: uuidSchema.optional(),
    queue: nameSchema.default('default'),
    kind: nameSchema,
    kindVersion: z.int().min(1).max(1_000_000).default(1),
    payload: z.unknown().optional(),
    idempotencyKey: textSchema(512).pipe(z.string().min(1)).optional(),
    /** Higher runs first; waiting jobs age (see docs/contract.md §5). */
    priority: z.int().min(MIN_PRIORITY).max(MAX_PRIORITY).default(0),
    /** Earliest start. Give `runAt` or `delayMs`, not both. */
    runAt: z
      .date()
      .refine((d) => !Number.isNaN(d.getTime()), 'invalid date')
      .optional(),
    /** Earliest start as a delay from the database's now(). */
    delayMs: z
      .number()
      .min(0)
      .max(10 * 365 * 24 * 3600 * 1000)
      .optional(),
    maxAttempts: z.int().min(1).max(1000).default(DEFAULT_MAX_ATTEMPTS),
    /** After this many seconds from enqueue a failing job goes `dead` (expired) instead of retrying. */
    maxAgeSeconds: z
      .number()
      .positive()
      .max(10 * 365 * 24 * 3600)
      .optional(),
    traceId: textSchema(128).pipe(z.string().min(1)).optional(),
    dedupeWindowSeconds: z
      .number()
      .positive()
      .max(10 * 365 * 24 * 3600)
      .default(DEFAULT_DEDUPE_WINDOW_SECONDS),
  })
  .refine((spec) => !(spec.runAt && spec.delayMs !== undefined), {
    message: 'give runAt or delayMs, not both',
    path: ['runAt'],
  });

export type EnqueueSpec = z.input<typeof enqueueSpecSchema>;

export interface EnqueueResult {
  id: string;
  /** false when the idempotency key already named a job; `id` is then that job's. */
  created: boolean;
  /** The job as stored now; null only when retention removed a deduplicated job. */
  job: Job | null;
}

export interface BulkEnqueueResult {
  id: string;
  created: boolean;
}

interface PreparedSpec {
  id: string;
  queue: string;
  kind: string;
  kindVersion: number;
  payloadText: string;
  idempotencyKey: string | null;
  priority: number;
  runAt: Date | null;
  delaySeconds: number;
  maxAttempts: number;
  maxAgeSeconds: number | null;
  traceId: string | null;
  dedupeWindowSeconds: number;
}

/** Validates and encodes specs; `offset` is the index of specs[0] in the caller's whole list. */
function prepare(operation: string, specs: readonly unknown[], offset = 0): PreparedSpec[] {
  const problems: string[] = [];
  const prepared: PreparedSpec[] = [];
  specs.forEach((input, index) => {
    const prefix = specs.length === 1 && operation === 'enqueue' ? '' : `jobs[${offset + index}]`;
    const parsed = enqueueSpecSchema.safeParse(input);
    if (!parsed.success) {
      problems.push(...problemsOf(parsed.error, prefix));
      return;
    }
    const spec = parsed.data;
    const payload = encodePayload(spec.payload);
    if ('problems' in payload) {
      problems.push(...payload.problems.map((p) => (prefix ? `${prefix}.${p}` : p)));
      return;
    }
    prepared.push({
      id: spec.id ?? newJobId(),
      queue: spec.queue,
      kind: spec.kind,
      kindVersion: spec.kindVersion,
      payloadText: payload.text,
      idempotencyKey: spec.idempotencyKey ?? null,
      priority: spec.priority,
      runAt: spec.runAt ?? null,
      delaySeconds: (spec.delayMs ?? 0) / 1000,
      maxAttempts: spec.maxAttempts,
      maxAgeSeconds: spec.maxAgeSeconds ?? null,
      traceId: spec.traceId ?? null,
      dedupeWindowSeconds: spec.dedupeWindowSeconds,
    });
  });
  if (problems.length > 0) throw new LeaseholdInputError(operation, problems.slice(0, 20));
  return prepared;
}

/** The channel that enqueue NOTIFYs (payload: the queue name) and workers LISTEN on. */
export const WAKE_CHANNEL = 'leasehold_jobs';

export interface EnqueueOptions {
  /**
   * Send a wake-up NOTIFY for the queues that got jobs (default true). PostgreSQL delivers it
   * at commit and folds repeats within one transaction, so a transaction wakes each queue
   * once. Turn it off where nothing LISTENs (transaction-pooled PgBouncer).
   *
   * On an executor that commits each statement by itself (a pool), wake-ups are debounced per
   * queue and process: PostgreSQL serialises the commits of all notifying transactions, so a
   * NOTIFY per job would cut concurrent enqueue rates by more than half. The first enqueue in a
   * window of WAKE_DEBOUNCE_MS carries the NOTIFY; the others send none, and one bare NOTIFY
   * follows at the end of the window, after their commits. So every committed job is followed
   * by a wake-up within WAKE_DEBOUNCE_MS, with at most two notifying commits per window.
   */
  notify?: boolean;
}

/** Wake-ups through a pool are debounced per queue over this window. */
export const WAKE_DEBOUNCE_MS = 5;

interface WakeState {
  lastSent: number;
  trailing: NodeJS.Timeout | null;
}
const wakes = new Map<string, WakeState>();

/**
 * Whether this enqueue's statement should NOTIFY. For a pool, it does only as the first of its
 * window; `afterCommit` then schedules the trailing NOTIFY for the enqueues that did not.
 */
function planWake(
  executor: Executor,
  queues: string[],
  requested: boolean,
): { inStatement: boolean; afterCommit: () => void } {
  const nothing = () => {};
  if (!requested) return { inStatement: false, afterCommit: nothing };
  if (!autocommits(executor)) return { inStatement: true, afterCommit: nothing };
  const now = performance.now();
  const skipped: string[] = [];
  let inStatement = false;
  for (const queue of queues) {
    let state = wakes.get(queue);
    if (!state) {
      if (wakes.size >= 10_000) wakes.clear();
      wakes.set(queue, (state = { lastSent: Number.NEGATIVE_INFINITY, trailing: null }));
    }
    if (state.trailing === null && now - state.lastSent >= WAKE_DEBOUNCE_MS) {
      state.lastSent = now;
      inStatement = true;
    } else skipped.push(queue);
  }
  // Queues woken in the statement anyway need no trailing NOTIFY.
  const trailingFor = inStatement ? [] : skipped;
  return {
    inStatement,
    afterCommit: () => {
      for (const queue of trailingFor) {
        const state = wakes.get(queue);
        if (!state || state.trailing) continue;
        const delay = Math.max(0, state.lastSent + WAKE_DEBOUNCE_MS - performance.now());
        state.trailing = setTimeout(() => {
          state.trailing = null;
          state.lastSent = performance.now();
          // A lost wake-up only delays the job until the next poll.
          run(executor, wakeStatement([queue])).catch(() => {});
        }, delay);
        state.trailing.unref();
      }
    },
  };
}

/** A bare wake-up NOTIFY for each of `queues`. */
function wakeStatement(queues: string[]): SQL {
  return sql`SELECT count(pg_notify(${WAKE_CHANNEL}, q)) FROM unnest(${sql.param(queues)}::text[]) q`;
}

/**
 * One statement for one or many jobs: unnest the columns, claim the idempotency keys, insert
 * the jobs whose key was free (or that have none), wake the queues. Returns the inserted jobs
 * (or their ids) and the keys this statement took, as JSON aggregates in one row.
 *
 * Jobs without keys (`returns: 'count'`) skip the key step: the input is then read once, so
 * PostgreSQL streams it into the INSERT instead of materialising it (to disk, for 100,000
 * jobs), and needs no sort to keep input order (UUIDv7 ids already follow it).
 */
async function insertJobs(
  executor: Executor,
  jobs: PreparedSpec[],
  returns: 'jobs' | 'ids' | 'count',
  notify: boolean,
) {
  const rows = await run<InsertRow>(executor, insertStatement(jobs, returns, notify));
  const row = rows[0];
  if (!row) throw new Error('Leasehold enqueue: the insert statement returned no row');
  return row;
}

interface InsertRow {
  inserted: Record<string, unknown>[] | string[] | number;
  keys: { key: string; job_id: string }[];
}

/** insertJobs' statement, built without touching the database. */
function insertStatement(jobs: PreparedSpec[], returns: 'jobs' | 'ids' | 'count', notify: boolean): SQL {
  // A column every job has the same value in (most of them, in a bulk call: one queue, kind,
  // priority, no run time…) travels once, as one parameter; the others as arrays unnested in
  // step. Escaping 100,000 array elements per column was most of a bulk enqueue's client time
  // after validation, and parsing them a part of the server's.
  const column = <T>(pick: (j: PreparedSpec) => T, type: string) => {
    const same = (v: T) => (v instanceof Date ? v.getTime() : v);
    const first = pick(jobs[0]!);
    const uniform = jobs.every((j) => same(pick(j)) === same(first));
    return uniform
      ? sql`${sql.param(first)}::${sql.raw(type)}`
      : sql`unnest(${sql.param(jobs.map(pick))}::${sql.raw(`${type}[]`)})`;
  };
  const keyed = returns !== 'count';
  const returning = returns === 'jobs' ? sql.raw(JOB_COLUMNS) : sql.raw('id, queue');
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
             ${column((j) => j.dedupeWindowSeconds, 'float8')} AS window_s,
             generate_series(1, ${jobs.length}::int) AS ord
    ),
    ${
      keyed
        ? sql`keyed AS (
      INSERT INTO dedupe_keys (key, job_id, queue, expires_at)
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
      INSERT INTO jobs (id, queue, kind, kind_version, payload, idempotency_key, priority, run_at,
                        claim_at, max_attempts, trace_id, expires_at)
      SELECT i.id, i.queue, i.kind, i.kind_version, i.payload, i.idempotency_key, i.priority,
             s.run_at,
             s.run_at - make_interval(secs => i.priority * coalesce(q.aging_seconds, ${DEFAULT_AGING_SECONDS}::int)),
             i.max_attempts, i.trace_id,
             CASE WHEN i.max_age_s IS NULL THEN NULL ELSE statement_timestamp() + make_interval(secs => i.max_age_s) END
      FROM input i
      CROSS JOIN LATERAL (SELECT coalesce(i.run_at, statement_timestamp() + make_interval(secs => i.delay_s)) AS run_at) s
      LEFT JOIN queues q ON q.name = i.queue
      ${keyed ? sql`WHERE i.idempotency_key IS NULL OR i.id IN (SELECT job_id FROM keyed) ORDER BY i.ord` : sql``}
      RETURNING ${returning}
    )
    SELECT (SELECT ${inserted} FROM inserted) AS inserted,
           ${keyed ? sql`(SELECT coalesce(json_agg(json_build_object('key', key, 'job_id', job_id)), '[]'::json) FROM keyed)` : sql`'[]'::json`} AS keys,
           ${
             notify
               ? sql`(SELECT count(pg_notify(${WAKE_CHANNEL}, queue)) FROM (SELECT DISTINCT queue FROM inserted) woken)`
               : sql`0`
           } AS woken
    `;
}

/**
 * The statement of a single enqueue without an idempotency key: fixed text, prepared once per
 * connection. A job of priority 0 (most) needs no lookup of its queue's aging step. Only what
 * the database decides comes back; the rest of the job is what was sent.
 */
function insertOneText(aging: boolean): string {
  const claimAt = aging
    ? `s.run_at - make_interval(secs => $6::int * coalesce((SELECT aging_seconds FROM queues WHERE name = $2::text), ${DEFAULT_AGING_SECONDS}))`
    : 's.run_at';
  return `
    WITH inserted AS (
      INSERT INTO jobs (id, queue, kind, kind_version, payload, priority, run_at, claim_at, max_attempts, trace_id, expires_at)
      SELECT $1::uuid, $2::text, $3::text, $4::int, $5::jsonb, $6::int, s.run_at, ${claimAt},
             $7::int, $8::text, statement_timestamp() + make_interval(secs => $9::float8)
      FROM (SELECT coalesce($10::timestamptz, statement_timestamp() + make_interval(secs => $11::float8)) AS run_at) s
      RETURNING queue, run_at, expires_at, created_at
    )
    SELECT run_at, expires_at, created_at, CASE WHEN $12::boolean THEN pg_notify('${WAKE_CHANNEL}', queue) END AS woken FROM inserted`;
}
const INSERT_ONE = { aging: insertOneText(true), plain: insertOneText(false) };

async function insertOne(executor: Executor, job: PreparedSpec, notify: boolean): Promise<Job> {
  const aging = job.priority > 0;
  const [row] = await runText<{ run_at: unknown; expires_at: unknown; created_at: unknown }>(
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
  // The rest of the job is what was sent: map it as the stored row would read.
  return mapJob({
    ...row,
    id: job.id,
    queue: job.queue,
    kind: job.kind,
    kind_version: job.kindVersion,
    payload: JSON.parse(job.payloadText), // as stored: jsonb keeps what JSON keeps
    idempotency_key: null,
    state: 'ready',
    priority: job.priority,
    attempts: 0,
    max_attempts: job.maxAttempts,
    trace_id: job.traceId,
    updated_at: row!.created_at,
  });
}

/** The job ids that own `keys` now, with the jobs where they still exist. */
async function lookupKeys(executor: Executor, keys: string[], withJobs: boolean) {
  const rows = await run(
    executor,
    sql`SELECT d.key, d.job_id ${withJobs ? sql.raw(', ' + jobColumns('j')) : sql.raw('')}
        FROM dedupe_keys d ${withJobs ? sql.raw('LEFT JOIN jobs j ON j.id = d.job_id') : sql.raw('')}
        WHERE d.key = ANY(${sql.param(keys)}::text[])`,
  );
  return new Map(rows.map((r) => [r.key as string, r]));
}

async function translateConflicts<T>(operation: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const pgError = error as { code?: string; constraint?: string; cause?: { code?: string; constraint?: string } };
    const code = pgError.code ?? pgError.cause?.code;
    const constraint = pgError.constraint ?? pgError.cause?.constraint;
    if (code === '23505' && constraint === 'jobs_pkey') {
      throw new LeaseholdInputError(operation, [
        'id: a job with this id already exists (ids must be unique; use idempotencyKey to deduplicate)',
      ]);
    }
    throw error;
  }
}

/**
 * Adds one job. Pass the caller's transaction as `executor` to commit the job with the
 * business write. With `idempotencyKey`, a repeat returns the first job and `created: false`.
 */
export async function enqueue(
  executor: Executor,
  spec: EnqueueSpec,
  options: EnqueueOptions = {},
): Promise<EnqueueResult> {
  const [job] = prepare('enqueue', [spec]);
  if (!job) throw new Error('unreachable: prepare returned no job');
  return translateConflicts('enqueue', async () => {
    const wake = planWake(executor, [job.queue], options.notify ?? true);
    if (job.idempotencyKey === null) {
      const created = await insertOne(executor, job, wake.inStatement);
      wake.afterCommit();
      return { id: job.id, created: true, job: created };
    }
    // Loop only for the rare race where a duplicate's key was purged between our statements.
    for (let tries = 0; tries < 3; tries++) {
      const { inserted } = await insertJobs(executor, [job], 'jobs', wake.inStatement);
      const row = (inserted as Record<string, unknown>[])[0];
      if (row && typeof row === 'object') {
        wake.afterCommit();
        return { id: job.id, created: true, job: mapJob(row) };
      }
      const owner = (await lookupKeys(executor, [job.idempotencyKey!], true)).get(job.idempotencyKey!);
      if (owner) {
        return { id: owner.job_id as string, created: false, job: owner.id ? mapJob(owner) : null };
      }
    }
    throw new Error(`Leasehold enqueue: idempotency key ${job.idempotencyKey} kept changing owner; try again`);
  });
}

/** Jobs per statement when a large enqueueMany without idempotency keys is sent in parts. */
export const BULK_CHUNK = 20_000;

/**
 * Adds many jobs (up to 100,000), all or none. Results are in input order; repeated keys,
 * within the call or against earlier jobs, give `created: false` and the owning job's id.
 *
 * Through a pool (a `pg.Pool`, or a Drizzle database over one), more than BULK_CHUNK jobs
 * without idempotency keys go in parts of BULK_CHUNK within one transaction of this call's
 * own, so validating and encoding the next part overlaps the database's writing of this one:
 * about 1.2 × as fast for 100,000 jobs. A bad job anywhere rolls the whole call back; its error
 * names the problems of the first part that has any. Everything else goes as one statement:
 * jobs with keys (it takes the keys in key order, which keeps two overlapping calls from
 * deadlocking); calls in the caller's transaction (a refused call must leave nothing in it);
 * and calls on a client, which other code may share (its statements would run inside this
 * call's transaction).
 */
export async function enqueueMany(
  executor: Executor,
  specs: readonly EnqueueSpec[],
  options: EnqueueOptions = {},
): Promise<BulkEnqueueResult[]> {
  if (!Array.isArray(specs)) throw new LeaseholdInputError('enqueueMany', ['jobs: expected an array']);
  if (specs.length > MAX_BULK_ENQUEUE) {
    throw new LeaseholdInputError('enqueueMany', [`jobs: ${specs.length} given, at most ${MAX_BULK_ENQUEUE} per call`]);
  }
  if (specs.length === 0) return [];
  const pool = ownPool(executor);
  if (
    pool &&
    specs.length > BULK_CHUNK &&
    !specs.some((spec) => (spec as { idempotencyKey?: unknown } | null)?.idempotencyKey !== undefined)
  ) {
    const { ids, queues } = await translateConflicts('enqueueMany', () =>
      inPoolTransaction(pool, (tx) => insertInParts(tx, specs)),
    );
    // After the commit, debounced as any enqueue through a pool. A lost wake-up only delays the
    // jobs until the next poll; the jobs are committed, so it must not fail the call.
    const wake = planWake(executor, queues, options.notify ?? true);
    if (wake.inStatement) await run(executor, wakeStatement(queues)).catch(() => {});
    wake.afterCommit();
    return ids.map((id) => ({ id, created: true }));
  }
  const jobs = prepare('enqueueMany', specs);
  return translateConflicts('enqueueMany', async () => {
    const wake = planWake(executor, [...new Set(jobs.map((j) => j.queue))], options.notify ?? true);
    const keyed = jobs.some((j) => j.idempotencyKey !== null);
    const { inserted, keys } = await insertJobs(executor, jobs, keyed ? 'ids' : 'count', wake.inStatement);
    if (!keyed) {
      if (inserted !== jobs.length)
        throw new Error(`Leasehold enqueueMany: ${String(inserted)} of ${jobs.length} jobs inserted`);
      wake.afterCommit();
      return jobs.map((j) => ({ id: j.id, created: true }));
    }
    const insertedIds = new Set(inserted as string[]);
    if (insertedIds.size > 0) wake.afterCommit();
    const owners = new Map<string, string>();
    for (const k of keys) owners.set(k.key, k.job_id);
    const missing = [
      ...new Set(jobs.filter((j) => j.idempotencyKey && !owners.has(j.idempotencyKey)).map((j) => j.idempotencyKey!)),
    ];
    if (missing.length > 0) {
      for (const [key, row] of await lookupKeys(executor, missing, false)) owners.set(key, row.job_id as string);
    }
    return jobs.map((j) => {
      if (insertedIds.has(j.id)) return { id: j.id, created: true };
      const owner = j.idempotencyKey ? owners.get(j.idempotencyKey) : undefined;
      if (!owner)
        throw new Error(
          `Leasehold enqueueMany: idempotency key ${j.idempotencyKey} has no owner after insert; try again`,
        );
      return { id: owner, created: false };
    });
  });
}

/**
 * enqueueMany's parts (jobs without keys), in input order: each part is validated and its
 * statement built while the database writes the one before. Returns the ids and the queues.
 */
async function insertInParts(
  tx: Executor,
  specs: readonly EnqueueSpec[],
): Promise<{ ids: string[]; queues: string[] }> {
  const ids: string[] = [];
  const queues = new Set<string>();
  let writing: Promise<void> | null = null;
  try {
    for (let from = 0; from < specs.length; from += BULK_CHUNK) {
      const jobs = prepare('enqueueMany', specs.slice(from, from + BULK_CHUNK), from);
      const statement = insertStatement(jobs, 'count', false);
      await writing;
      writing = run<InsertRow>(tx, statement).then(([row]) => {
        if (row?.inserted !== jobs.length)
          throw new Error(`Leasehold enqueueMany: ${String(row?.inserted)} of ${jobs.length} jobs inserted`);
      });
      for (const j of jobs) {
        ids.push(j.id);
        queues.add(j.queue);
      }
    }
    await writing;
  } catch (error) {
    await writing?.catch(() => {}); // settle the part in flight before the transaction ends
    throw error;
  }
  return { ids, queues: [...queues] };
}

/**
 * BEGIN … COMMIT on a client of the pool: a transaction and a connection of this call's own. The
 * client goes back unless its connection broke.
 */
async function inPoolTransaction<T>(pool: pg.Pool, work: (tx: Executor) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  // A pool adds no error listener to a checked-out client: without one, a connection that dies
  // during the call (a server restart) would crash the process.
  let broken: Error | undefined;
  const onError = (error: Error) => (broken ??= error);
  client.on('error', onError);
  try {
    try {
      await client.query('BEGIN');
    } catch (error) {
      broken ??= error instanceof Error ? error : new Error(String(error));
      throw error;
    }
    try {
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch((rollbackError: unknown) => {
        broken ??= rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
      });
      throw error;
    }
  } finally {
    client.off('error', onError);
    client.release(broken); // a broken connection is closed, a sound one reused
  }
}
