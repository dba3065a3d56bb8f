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
import { sql } from 'drizzle-orm';
import { v7 as uuidv7 } from 'uuid';
import { z } from 'zod';
import { DEFAULT_AGING_SECONDS, DEFAULT_MAX_ATTEMPTS, MAX_PRIORITY, MIN_PRIORITY } from '../schema';
import { LeaseholdInputError } from './errors';
import { autocommits, run, type Executor } from './executor';
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
    runAt: z.date().refine((d) => !Number.isNaN(d.getTime()), 'invalid date').optional(),
    /** Earliest start as a delay from the database's now(). */
    delayMs: z.number().min(0).max(10 * 365 * 24 * 3600 * 1000).optional(),
    maxAttempts: z.int().min(1).max(1000).default(DEFAULT_MAX_ATTEMPTS),
    /** After this many seconds from enqueue a failing job goes `dead` (expired) instead of retrying. */
    maxAgeSeconds: z.number().positive().max(10 * 365 * 24 * 3600).optional(),
    traceId: textSchema(128).pipe(z.string().min(1)).optional(),
    dedupeWindowSeconds: z.number().positive().max(10 * 365 * 24 * 3600).default(DEFAULT_DEDUPE_WINDOW_SECONDS),
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

function prepare(operation: string, specs: readonly unknown[]): PreparedSpec[] {
  const problems: string[] = [];
  const prepared: PreparedSpec[] = [];
  specs.forEach((input, index) => {
    const prefix = specs.length === 1 && operation === 'enqueue' ? '' : `jobs[${index}]`;
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
      id: spec.id ?? uuidv7(),
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
function planWake(executor: Executor, queues: string[], requested: boolean): { inStatement: boolean; afterCommit: () => void } {
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
          run(executor, sql`SELECT pg_notify(${WAKE_CHANNEL}, ${queue})`).catch(() => {});
        }, delay);
        state.trailing.unref();
      }
    },
  };
}

/**
 * One statement for one or many jobs: unnest the columns, claim the idempotency keys, insert
 * the jobs whose key was free (or that have none), wake the queues. Returns the inserted jobs
 * (or their ids) and the keys this statement took, as JSON aggregates in one row.
 */
async function insertJobs(executor: Executor, jobs: PreparedSpec[], returnJobs: boolean, notify: boolean) {
  const col = <T>(pick: (j: PreparedSpec) => T) => sql.param(jobs.map(pick));
  const returning = returnJobs ? sql.raw(JOB_COLUMNS) : sql.raw('id, queue');
  const inserted = returnJobs ? sql.raw('row_to_json(inserted)') : sql.raw('inserted.id');
  // claim_at is the aging sort key: run_at moved earlier by priority × the queue's aging step.
  const rows = await run<{ inserted: Record<string, unknown>[] | string[]; keys: { key: string; job_id: string }[] }>(
    executor,
    sql`
    WITH input AS (
      SELECT * FROM unnest(
        ${col((j) => j.id)}::uuid[], ${col((j) => j.queue)}::text[], ${col((j) => j.kind)}::text[],
        ${col((j) => j.kindVersion)}::int[], ${col((j) => j.payloadText)}::jsonb[],
        ${col((j) => j.idempotencyKey)}::text[], ${col((j) => j.priority)}::int[],
        ${col((j) => j.runAt)}::timestamptz[], ${col((j) => j.delaySeconds)}::float8[],
        ${col((j) => j.maxAttempts)}::int[], ${col((j) => j.maxAgeSeconds)}::float8[],
        ${col((j) => j.traceId)}::text[], ${col((j) => j.dedupeWindowSeconds)}::float8[]
      ) WITH ORDINALITY AS t(id, queue, kind, kind_version, payload, idempotency_key, priority,
                             run_at, delay_s, max_attempts, max_age_s, trace_id, window_s, ord)
    ),
    keyed AS (
      INSERT INTO dedupe_keys (key, job_id, queue, expires_at)
      SELECT idempotency_key, id, queue, statement_timestamp() + make_interval(secs => window_s)
      FROM input WHERE idempotency_key IS NOT NULL
      -- Keys are taken in key order, so two transactions enqueueing overlapping keys in
      -- different orders wait for each other instead of deadlocking. (Within a key, the first
      -- occurrence wins.)
      ORDER BY idempotency_key, ord
      ON CONFLICT (key) DO NOTHING
      RETURNING key, job_id
    ),
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
      WHERE i.idempotency_key IS NULL OR i.id IN (SELECT job_id FROM keyed)
      ORDER BY i.ord
      RETURNING ${returning}
    )
    SELECT (SELECT coalesce(json_agg(${inserted}), '[]'::json) FROM inserted) AS inserted,
           (SELECT coalesce(json_agg(json_build_object('key', key, 'job_id', job_id)), '[]'::json) FROM keyed) AS keys,
           ${
             notify
               ? sql`(SELECT count(pg_notify(${WAKE_CHANNEL}, queue)) FROM (SELECT DISTINCT queue FROM inserted) woken)`
               : sql`0`
           } AS woken
    `,
  );
  const row = rows[0];
  if (!row) throw new Error('Leasehold enqueue: the insert statement returned no row');
  return row;
}

/**
 * One job without an idempotency key: a plain INSERT … RETURNING, prepared once per connection.
 * (The general statement's planning costs more than running it for one row.)
 */
async function insertOne(executor: Executor, job: PreparedSpec, notify: boolean): Promise<Job> {
  const rows = await run(
    executor,
    sql`
    WITH inserted AS (
      INSERT INTO jobs (id, queue, kind, kind_version, payload, priority, run_at, claim_at, max_attempts, trace_id, expires_at)
      SELECT ${job.id}::uuid, ${job.queue}::text, ${job.kind}::text, ${job.kindVersion}::int, ${job.payloadText}::jsonb,
             ${job.priority}::int, s.run_at,
             s.run_at - make_interval(secs => ${job.priority}::int * coalesce(
               (SELECT aging_seconds FROM queues WHERE name = ${job.queue}::text), ${DEFAULT_AGING_SECONDS}::int)),
             ${job.maxAttempts}::int, ${job.traceId}::text,
             statement_timestamp() + make_interval(secs => ${job.maxAgeSeconds}::float8)
      FROM (SELECT coalesce(${job.runAt}::timestamptz, statement_timestamp() + make_interval(secs => ${job.delaySeconds}::float8)) AS run_at) s
      RETURNING ${sql.raw(JOB_COLUMNS)}
    )
    SELECT inserted.*, CASE WHEN ${notify}::boolean THEN pg_notify(${WAKE_CHANNEL}, inserted.queue) END AS woken FROM inserted`,
    'leasehold_enqueue_one',
  );
  return mapJob(rows[0]!);
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
      throw new LeaseholdInputError(operation, ['id: a job with this id already exists (ids must be unique; use idempotencyKey to deduplicate)']);
    }
    throw error;
  }
}

/**
 * Adds one job. Pass the caller's transaction as `executor` to commit the job with the
 * business write. With `idempotencyKey`, a repeat returns the first job and `created: false`.
 */
export async function enqueue(executor: Executor, spec: EnqueueSpec, options: EnqueueOptions = {}): Promise<EnqueueResult> {
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
      const { inserted } = await insertJobs(executor, [job], true, wake.inStatement);
      const row = inserted[0];
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

/**
 * Adds many jobs in one statement (up to 100,000). Results are in input order; repeated keys,
 * within the call or against earlier jobs, give `created: false` and the owning job's id.
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
  const jobs = prepare('enqueueMany', specs);
  return translateConflicts('enqueueMany', async () => {
    const wake = planWake(executor, [...new Set(jobs.map((j) => j.queue))], options.notify ?? true);
    const { inserted, keys } = await insertJobs(executor, jobs, false, wake.inStatement);
    if (inserted.length > 0) wake.afterCommit();
    const insertedIds = new Set(inserted as string[]);
    const owners = new Map<string, string>();
    for (const k of keys) owners.set(k.key, k.job_id);
    const missing = [...new Set(jobs.filter((j) => j.idempotencyKey && !owners.has(j.idempotencyKey)).map((j) => j.idempotencyKey!))];
    if (missing.length > 0) {
      for (const [key, row] of await lookupKeys(executor, missing, false)) owners.set(key, row.job_id as string);
    }
    return jobs.map((j) => {
      if (insertedIds.has(j.id)) return { id: j.id, created: true };
      const owner = j.idempotencyKey ? owners.get(j.idempotencyKey) : undefined;
      if (!owner) throw new Error(`Leasehold enqueueMany: idempotency key ${j.idempotencyKey} has no owner after insert; try again`);
      return { id: owner, created: false };
    });
  });
}
