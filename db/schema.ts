/**
 * Leasehold's tables. The queue's invariants live here as CHECK constraints so that no code
 * path, ours or an operator's psql session, can store a job that breaks them:
 *
 * - `running` ⇔ a lease token ⇔ a lease deadline (one attempt owns a running row, nobody else);
 * - terminal states (done, dead, cancelled) carry `finished_at`;
 * - `0 <= attempts <= max_attempts`, and a `ready` job still has an attempt left;
 * - the payload is bounded (large data goes by reference).
 *
 * The claim reads `jobs_claim_idx` (ready rows by queue, then the aging sort key `claim_at`);
 * the reaper reads `jobs_lease_idx` (running rows by lease deadline). Both are partial so that
 * millions of terminal rows kept for history cost the hot paths nothing.
 */
import { sql } from 'drizzle-orm';
import {
  bigserial,
  boolean,
  check,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';
import { ATTEMPT_OUTCOMES, FAILURE_CLASSES, JOB_STATES, TERMINAL_STATES } from './states';

// The lists live in a module without imports (client bundles read them); exported here too,
// where db/ has always found them.
export {
  ATTEMPT_OUTCOMES,
  FAILURE_CLASSES,
  JOB_STATES,
  type AttemptOutcome,
  type FailureClass,
  type JobState,
} from './states';

/** Largest payload stored inline, in bytes of its JSON text. Bigger data goes by reference. */
export const MAX_PAYLOAD_BYTES = 256 * 1024;
/**
 * The database's own backstop. jsonb's binary form can be several times larger than the JSON
 * text (an array of small numbers: about 6×), so the CHECK is far looser than the API's limit;
 * the API refuses first, with a clearer message.
 */
export const MAX_PAYLOAD_STORED_BYTES = 4 * 1024 * 1024;
/**
 * Priorities run from 0 (the default, lowest) to 100. No negative priorities: with them a job
 * could sort ahead of due work before it is due itself, and the claim could no longer stop its
 * index walk at `claim_at <= now()` (see db/queue/claim.ts).
 */
export const MIN_PRIORITY = 0;
export const MAX_PRIORITY = 100;
/** Seconds of waiting worth one priority step, for queues without a row in `queues`. */
export const DEFAULT_AGING_SECONDS = 60;
export const DEFAULT_MAX_ATTEMPTS = 10;

const quoted = (values: readonly string[]) => sql.raw(values.map((v) => `'${v}'`).join(', '));
const terminal = quoted(TERMINAL_STATES);
const tstz = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const jobs = pgTable(
  'jobs',
  {
    id: uuid('id').primaryKey(),
    queue: text('queue').notNull().default('default'),
    kind: text('kind').notNull(),
    kindVersion: integer('kind_version').notNull().default(1),
    payload: jsonb('payload').notNull().default({}),
    idempotencyKey: text('idempotency_key'),
    state: text('state', { enum: JOB_STATES }).notNull().default('ready'),
    priority: integer('priority').notNull().default(0),
    runAt: tstz('run_at').notNull().defaultNow(),
    /** Claim order: `run_at - priority × queue aging step` (earliest virtual deadline). */
    claimAt: tstz('claim_at').notNull().defaultNow(),
    attempts: integer('attempts').notNull().default(0),
    maxAttempts: integer('max_attempts').notNull().default(DEFAULT_MAX_ATTEMPTS),
    leaseToken: uuid('lease_token'),
    leaseUntil: tstz('lease_until'),
    workerId: text('worker_id'),
    failureClass: text('failure_class', { enum: FAILURE_CLASSES }),
    lastError: text('last_error'),
    traceId: text('trace_id'),
    /** After this moment a failed job is not retried again (the kind's max age). */
    expiresAt: tstz('expires_at'),
    createdAt: tstz('created_at').notNull().defaultNow(),
    startedAt: tstz('started_at'),
    finishedAt: tstz('finished_at'),
    updatedAt: tstz('updated_at').notNull().defaultNow(),
  },
  (t) => [
    index('jobs_claim_idx').on(t.queue, t.claimAt, t.id).where(sql`state = 'ready'`),
    index('jobs_lease_idx').on(t.leaseUntil).where(sql`state = 'running'`),
    // The dashboard's list filters over history: written once per job, when it finishes
    // (partial), so the claim/settle hot path pays nothing for them.
    index('jobs_terminal_queue_idx').on(t.queue, t.id).where(sql`state IN (${terminal})`),
    index('jobs_terminal_kind_idx').on(t.kind, t.id).where(sql`state IN (${terminal})`),
    // Only jobs that ever failed have a class: a plain completion adds no entry here.
    index('jobs_terminal_class_idx')
      .on(t.failureClass, t.id)
      .where(sql`failure_class IS NOT NULL AND state IN (${terminal})`),
    // jobs_terminal_idx (state, finished_at) INCLUDE (queue, kind, failure_class, attempts)
    // WHERE terminal: created in drizzle/0002 by hand (drizzle cannot declare INCLUDE). It
    // serves retention and the dashboard's terminal counts as index-only scans.
    check('jobs_state_check', sql`state IN (${quoted(JOB_STATES)})`),
    check('jobs_failure_class_check', sql`failure_class IS NULL OR failure_class IN (${quoted(FAILURE_CLASSES)})`),
    check(
      'jobs_lease_check',
      sql`(state = 'running') = (lease_token IS NOT NULL) AND (lease_token IS NULL) = (lease_until IS NULL)`,
    ),
    check('jobs_finished_check', sql`(state IN (${terminal})) = (finished_at IS NOT NULL)`),
    check(
      'jobs_attempts_check',
      sql`attempts >= 0 AND attempts <= max_attempts AND (state <> 'ready' OR attempts < max_attempts)`,
    ),
    check('jobs_max_attempts_check', sql`max_attempts BETWEEN 1 AND 1000`),
    // The claim stops its index walk at claim_at <= now(); that is only right while every
    // job's sort key is at or before its run time (priority >= 0).
    check('jobs_claim_at_check', sql`claim_at <= run_at`),
    check(
      'jobs_priority_check',
      sql`priority BETWEEN ${sql.raw(String(MIN_PRIORITY))} AND ${sql.raw(String(MAX_PRIORITY))}`,
    ),
    check('jobs_payload_size_check', sql`pg_column_size(payload) <= ${sql.raw(String(MAX_PAYLOAD_STORED_BYTES))}`),
    check('jobs_names_check', sql`length(queue) BETWEEN 1 AND 128 AND length(kind) BETWEEN 1 AND 128`),
    check('jobs_kind_version_check', sql`kind_version >= 1`),
  ],
);

/** One row per ended attempt: failed attempts are data, not only log lines. */
export const jobAttempts = pgTable(
  'job_attempts',
  {
    jobId: uuid('job_id').notNull(),
    attempt: integer('attempt').notNull(),
    queue: text('queue').notNull(),
    kind: text('kind').notNull(),
    workerId: text('worker_id'),
    leaseToken: uuid('lease_token').notNull(),
    startedAt: tstz('started_at').notNull(),
    endedAt: tstz('ended_at').notNull().defaultNow(),
    outcome: text('outcome', { enum: ATTEMPT_OUTCOMES }).notNull(),
    failureClass: text('failure_class', { enum: FAILURE_CLASSES }),
    error: text('error'),
    durationMs: integer('duration_ms').notNull(),
  },
  (t) => [
    // One index serves both the job detail (job_id, attempt) and uniqueness. The token is in
    // it because one claim statement leases its whole batch under one token, and because an
    // application may reuse a job id after retention removed the job (its old history stays
    // until its own window ends), so (job_id, attempt) alone could repeat.
    primaryKey({ name: 'job_attempts_pkey', columns: [t.jobId, t.attempt, t.leaseToken] }),
    // job_attempts_ended_idx (ended_at) INCLUDE (outcome, failure_class, queue): drizzle/0002.
    check('job_attempts_outcome_check', sql`outcome IN (${quoted(ATTEMPT_OUTCOMES)})`),
  ],
);

/** Per-queue settings. A queue needs no row: a missing row means the defaults. */
export const queues = pgTable(
  'queues',
  {
    name: text('name').primaryKey(),
    paused: boolean('paused').notNull().default(false),
    /** Seconds of waiting worth one priority step (CONTRACT §5). */
    agingSeconds: integer('aging_seconds').notNull().default(DEFAULT_AGING_SECONDS),
    pausedAt: tstz('paused_at'),
    pausedBy: text('paused_by'),
    createdAt: tstz('created_at').notNull().defaultNow(),
    updatedAt: tstz('updated_at').notNull().defaultNow(),
  },
  () => [check('queues_aging_check', sql`aging_seconds BETWEEN 1 AND 86400`)],
);

/** Operator actions, written in the same statement as the change they record. */
export const auditLog = pgTable(
  'audit_log',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    at: tstz('at').notNull().defaultNow(),
    actor: text('actor').notNull(),
    action: text('action').notNull(),
    jobIds: uuid('job_ids').array().notNull().default(sql`'{}'::uuid[]`),
    queue: text('queue'),
    requested: integer('requested').notNull(),
    affected: integer('affected').notNull(),
    outcome: text('outcome').notNull(),
    detail: jsonb('detail').notNull().default({}),
  },
  (t) => [index('audit_log_at_idx').on(t.at), index('audit_log_job_ids_idx').using('gin', t.jobIds)],
);

/**
 * Idempotency keys, kept apart from `jobs` so that a key still dedupes after retention has
 * removed its job. A key is dropped only after `expires_at` and once its job is gone.
 */
export const dedupeKeys = pgTable(
  'dedupe_keys',
  {
    key: text('key').primaryKey(),
    jobId: uuid('job_id').notNull(),
    queue: text('queue').notNull(),
    createdAt: tstz('created_at').notNull().defaultNow(),
    expiresAt: tstz('expires_at').notNull(),
  },
  (t) => [index('dedupe_keys_expires_idx').on(t.expiresAt)],
);

export type JobRow = typeof jobs.$inferSelect;
export type JobAttemptRow = typeof jobAttempts.$inferSelect;
export type QueueRow = typeof queues.$inferSelect;
export type AuditRow = typeof auditLog.$inferSelect;

/**
 * Live worker processes. Each records itself at start, refreshes `last_seen_at`, and removes
 * itself on a graceful stop; maintenance deletes entries that stopped refreshing.
 */
export const workers = pgTable(
  'workers',
  {
    id: text('id').primaryKey(),
    host: text('host').notNull(),
    pid: integer('pid').notNull(),
    queues: text('queues').array().notNull(),
    concurrency: integer('concurrency').notNull(),
    version: text('version'),
    startedAt: tstz('started_at').notNull().defaultNow(),
    lastSeenAt: tstz('last_seen_at').notNull().defaultNow(),
  },
  (t) => [index('workers_last_seen_idx').on(t.lastSeenAt)],
);

/**
 * Idempotency receipts: the recorded result of a side effect, keyed by its delivery key. A
 * later attempt that finds the receipt returns the result instead of repeating the call.
 */
export const receipts = pgTable(
  'receipts',
  {
    key: text('key').primaryKey(),
    jobId: uuid('job_id').notNull(),
    attempt: integer('attempt').notNull(),
    result: jsonb('result').notNull(),
    createdAt: tstz('created_at').notNull().defaultNow(),
  },
  (t) => [index('receipts_created_idx').on(t.createdAt)],
);

export type WorkerRow = typeof workers.$inferSelect;

export const ROLES = ['viewer', 'operator', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/** Dashboard users. Passwords are scrypt hashes (`scrypt$N$r$p$salt$hash`). */
export const users = pgTable(
  'users',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    email: text('email').notNull(),
    passwordHash: text('password_hash').notNull(),
    role: text('role', { enum: ROLES }).notNull(),
    disabled: boolean('disabled').notNull().default(false),
    createdAt: tstz('created_at').notNull().defaultNow(),
    updatedAt: tstz('updated_at').notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('users_email_idx').on(t.email),
    check('users_role_check', sql`role IN (${quoted(ROLES)})`),
    check('users_email_check', sql`email = lower(email) AND position('@' in email) > 1`),
  ],
);
