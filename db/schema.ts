/**
 * Leasehold's tables. The queue's invariants live here as CHECK constraints so that no code
 * path, ours or an operator's psql session, can store a job that breaks them:
 *
 * - `running` ⇔ a lease token ⇔ a lease deadline (one attempt owns a running row, nobody else);
 * - terminal states (done, dead, cancelled) carry `finished_at`;
 * - `0 <= attempts - released <= max_attempts` (released attempts are not charged), and a
 *   `ready` job still has an attempt left;
 * - the payload is bounded (large data goes by reference).
 *
 * Invariants that span tables (every ready job has a `ready_jobs` row; every running job is
 * in a `leases` row whose deadline is not later than its own) are kept by the statements in
 * db/queue/transitions.ts and, for writes from outside the library, by the triggers in
 * drizzle/0001 and the repair sweep. Layout and reasons: docs/design/schema-v1.md.
 */
import { sql } from 'drizzle-orm';
import {
  bigserial,
  boolean,
  check,
  index,
  integer,
  jsonb,
  primaryKey,
  text,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';
import { ATTEMPT_OUTCOMES, FAILURE_CLASSES, JOB_STATES, TERMINAL_STATES } from './states.ts';
import { leasehold, quoted, tstz } from './schema-base.ts';

// The lists live in a module without imports (client bundles read them); exported here too,
// where db/ has always found them.
export {
  ATTEMPT_OUTCOMES,
  FAILURE_CLASSES,
  JOB_STATES,
  type AttemptOutcome,
  type FailureClass,
  type JobState,
} from './states.ts';

/** Largest payload stored inline, in bytes of its JSON text. Bigger data goes by reference. */
export const MAX_PAYLOAD_BYTES = 256 * 1024;
/**
 * How deep a payload may nest: the payload itself is level 0, each array element or object
 * member one level below its container; a value at level 101 is refused by both enqueues (the
 * TypeScript one and `leasehold.enqueue()`), and the dashboard shows anything below this level
 * of a row written otherwise as TOO_DEEP (db/queue/redaction-rules.ts).
 */
export const MAX_PAYLOAD_DEPTH = 100;
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

export { leasehold };
export * from './schema-limits.ts';
export * from './schema-groups.ts';
export * from './schema-schedules.ts';
export * from './schema-unique.ts';
export * from './schema-results.ts';
export * from './schema-alerts.ts';
export * from './schema-history.ts';
export * from './schema-search.ts';

/**
 * The jobs. Laid out for HOT updates (docs/design/schema-v1.md): no B-tree here names a column
 * that the claim, a heartbeat or the acknowledgement changes (state, attempts, the lease
 * columns, worker_id, started_at, finished_at, updated_at), neither as a key nor in a
 * predicate, and the table keeps room on each page (fillfactor 25, set in drizzle/0001), so
 * a job's whole life from claim to done writes no index entry and no new page. Columns that
 * never change come first and the mutable ones last, so a same-page update logs only the
 * changed tail. Claimable jobs are found through `ready_jobs`, running ones through `leases`,
 * finished ones by time through `finished_rollup`.
 */
export const jobs = leasehold.table(
  'jobs',
  {
    id: uuid('id').primaryKey(),
    queue: text('queue').notNull().default('default'),
    kind: text('kind').notNull(),
    kindVersion: integer('kind_version').notNull().default(1),
    idempotencyKey: text('idempotency_key'),
    /** The done job this one re-runs (an operator's re-run enqueues a copy: drizzle/0028). */
    rerunOf: uuid('rerun_of'),
    priority: integer('priority').notNull().default(0),
    traceId: text('trace_id'),
    /** After this moment a failed job is not retried again (the kind's max age). */
    expiresAt: tstz('expires_at'),
    createdAt: tstz('created_at').notNull().defaultNow(),
    payload: jsonb('payload').notNull().default({}),
    maxAttempts: integer('max_attempts').notNull().default(DEFAULT_MAX_ATTEMPTS),
    runAt: tstz('run_at').notNull().defaultNow(),
    /** Claim order: `run_at - priority × queue aging step` (earliest virtual deadline). */
    claimAt: tstz('claim_at').notNull().defaultNow(),
    failureClass: text('failure_class', { enum: FAILURE_CLASSES }),
    lastError: text('last_error'),
    state: text('state', { enum: JOB_STATES }).notNull().default('ready'),
    attempts: integer('attempts').notNull().default(0),
    /**
     * Attempts given back by their worker at shutdown (releaseIfLeaseHeld, drizzle/0006): the
     * claim still counts them in `attempts` (the fence only grows), but they are not charged,
     * so the budget compares `attempts - released` with the cap.
     */
    released: integer('released').notNull().default(0),
    workerId: text('worker_id'),
    startedAt: tstz('started_at'),
    leaseToken: uuid('lease_token'),
    leaseUntil: tstz('lease_until'),
    finishedAt: tstz('finished_at'),
    updatedAt: tstz('updated_at').notNull().defaultNow(),
    /**
     * The job's fair group (docs/flow-control.md, "Fair groups"), written once at enqueue: its
     * ready row is then in `grouped_ready_jobs`, and the grouped claim gives the groups of a
     * queue turns. NULL: no group (the ungrouped claim's `ready_jobs`). 1 to 256 characters
     * (the trigger jobs_group_key_check, drizzle/0020: a CHECK would run on every claim).
     */
    groupKey: text('group_key'),
    /** Tags (docs/jobs.md): written once at enqueue, NULL for none; jobs_tags_idx is partial (drizzle/0024). */
    tags: text('tags').array(),
    /** A job's own timeout, back-off, uniqueness key and snooze counters (db/queue/job-options.ts); NULL for none. */
    options: jsonb('options'),
  },
  (t) => [
    // Keys written once, at enqueue, and never changed: the dashboard's lists by queue and by
    // kind in id (creation) order, over every state.
    index('jobs_queue_idx').on(t.queue, t.id),
    index('jobs_kind_idx').on(t.kind, t.id),
    // Retention's walk in creation order, bounded by its cutoff (a job finished before the
    // cutoff was created before it), whatever ids the application chose.
    index('jobs_created_idx').on(t.createdAt),
    // Jobs that ever failed. Dead and cancelled jobs always carry a class; neither the claim
    // nor the acknowledgement writes the column, so this index costs the happy path nothing.
    index('jobs_failure_class_idx').on(t.failureClass, t.id).where(sql`failure_class IS NOT NULL`),
    index('jobs_failed_queue_idx').on(t.queue, t.id).where(sql`failure_class IS NOT NULL`),
    // Tagged jobs only (partial): written once at enqueue, never changed, so the claim and the
    // acknowledgement stay HOT, and a job without tags has no entry.
    index('jobs_tags_idx').using('gin', t.tags).where(sql`tags IS NOT NULL`),
    check('jobs_state_check', sql`state IN (${quoted(JOB_STATES)})`),
    check('jobs_failure_class_check', sql`failure_class IS NULL OR failure_class IN (${quoted(FAILURE_CLASSES)})`),
    check(
      'jobs_lease_check',
      sql`(state = 'running') = (lease_token IS NOT NULL) AND (lease_token IS NULL) = (lease_until IS NULL)`,
    ),
    check('jobs_finished_check', sql`(state IN (${quoted(TERMINAL_STATES)})) = (finished_at IS NOT NULL)`),
    check(
      'jobs_attempts_check',
      sql`released >= 0 AND attempts >= released AND attempts - released <= max_attempts AND (state <> 'ready' OR attempts - released < max_attempts)`,
    ),
    // Dead and cancelled jobs say why: the dashboard finds them through the class indexes.
    check('jobs_ended_class_check', sql`state NOT IN ('dead', 'cancelled') OR failure_class IS NOT NULL`),
    // The claim stops its index walk at claim_at <= now(); that is only right while every
    // job's sort key is at or before its run time (priority >= 0).
    check('jobs_claim_at_check', sql`claim_at <= run_at`),
    // A sort key no earlier than the longest aging step times the priority (drizzle/0013).
    check('jobs_claim_at_floor_check', sql`claim_at >= run_at - make_interval(secs => priority * 86400)`),
    // The checks of the columns written at enqueue and never changed by the queue's own
    // statements (the name bounds and patterns, the kind version, priority, max attempts, the
    // payload's size) are not CHECK constraints since drizzle/0017: PostgreSQL evaluates every
    // CHECK of a table on every UPDATE of a row, so the claim and the acknowledgement paid for
    // two regular expressions and six more checks a job, about 1 µs in each (docs/performance.md). The
    // trigger jobs_fixed_columns_check refuses the same rows with the same constraint names
    // and SQLSTATE, on INSERT and on an UPDATE that sets one of those columns.
  ],
);

/**
 * The claimable set: one narrow row per ready job, the only thing a claim walks. Written by
 * enqueue and, for every other way into `ready` (a retry, a release, the reaper, an
 * operator's retry, a plain SQL UPDATE from outside), by the trigger `jobs_ready_row`
 * (drizzle/0001). A claim deletes the rows it takes. A row whose job is no longer ready is
 * harmless (the claim's guard skips the job and deletes the row); a ready job without a row
 * would never be claimed, which the trigger and the repair sweep (db/queue/transitions.ts)
 * rule out.
 */
export const readyJobs = leasehold.table(
  'ready_jobs',
  {
    queue: text('queue').notNull(),
    claimAt: tstz('claim_at').notNull(),
    runAt: tstz('run_at').notNull(),
    id: uuid('id').notNull(),
    kind: text('kind').notNull(),
    /** The job's attempts so far: a ready job with attempts is retrying. */
    attempts: integer('attempts').notNull().default(0),
    /**
     * The job's kind version (drizzle/0003; NULL only on rows written before it, which it
     * fills in): a worker claims only the kind versions it runs.
     */
    kindVersion: integer('kind_version'),
  },
  (t) => [
    index('ready_jobs_claim_idx').on(t.queue, t.claimAt, t.id),
    // The claim by kind walks one (kind, version, queue) at a time in the aging order, so jobs
    // of kinds a worker does not run are never read by its claims (db/queue/transitions.ts).
    index('ready_jobs_kind_claim_idx').on(t.kind, t.kindVersion, t.queue, t.claimAt, t.id),
  ],
);

/**
 * One row per claim statement and queue: the jobs it leased (`job_ids`, all under `token`),
 * how many of them are still running, and a deadline that is never later than any of its
 * running jobs' own `lease_until` (set at the claim; a per-job heartbeat moves the job's
 * deadline, never this one; the reaper, reaching this one, moves it to the earliest still
 * running). The reaper walks `leases_until_idx`; settling a job counts `running` down, and the
 * reaper deletes a row when its deadline comes with nothing left running.
 *
 * A claim made by a worker after its worker lease started (`created_at >= worker_leases.since`)
 * is covered by that lease while it holds and the claim is not `detached`: the effective
 * deadline of each of its jobs is the latest of the job's own, this row's and the worker
 * lease's (drizzle/0015, db/queue/transitions/guards.ts). `created_at` is null on rows claimed
 * before 0015 (never covered).
 */
export const leases = leasehold.table(
  'leases',
  {
    token: uuid('token').notNull(),
    queue: text('queue').notNull(),
    workerId: text('worker_id').notNull(),
    leaseUntil: tstz('lease_until').notNull(),
    running: integer('running').notNull(),
    jobIds: uuid('job_ids').array().notNull(),
    createdAt: tstz('created_at').default(sql`statement_timestamp()`),
    /** The worker gave up an attempt of this claim unsettled: its worker lease no longer covers it. */
    detached: boolean('detached').notNull().default(false),
  },
  (t) => [
    primaryKey({ name: 'leases_pkey', columns: [t.token, t.queue] }),
    index('leases_until_idx').on(t.leaseUntil),
    check('leases_running_check', sql`running >= 0`),
  ],
);

/**
 * One row per worker process: its worker lease, which a heartbeat renews in one write however
 * many jobs the worker runs (drizzle/0015). It covers the claims the worker made since `since`
 * (the start of this lease: a lease that ran out is never renewed, the next heartbeat starts a
 * new one, so claims of an ended lease are never revived). The reaper locks the expired rows
 * before it ends their claims' jobs, so a renewal in flight is waited for, then seen.
 */
export const workerLeases = leasehold.table('worker_leases', {
  workerId: text('worker_id').primaryKey(),
  since: tstz('since').notNull(),
  leaseUntil: tstz('lease_until').notNull(),
});

/**
 * Finished jobs per minute, queue, kind, final state and attempts used: the dashboard's time
 * windows (throughput, done in the last hour, the attempts histogram) without an index on
 * `jobs.finished_at`. Each statement that finishes jobs adds its counts, in a row of its own
 * shard (backend pid mod 8) so that concurrent acknowledgements do not wait on one row.
 */
export const finishedRollup = leasehold.table(
  'finished_rollup',
  {
    minute: tstz('minute').notNull(),
    queue: text('queue').notNull(),
    kind: text('kind').notNull(),
    state: text('state', { enum: TERMINAL_STATES }).notNull(),
    attempts: integer('attempts').notNull(),
    shard: integer('shard').notNull(),
    jobs: integer('jobs').notNull(),
  },
  (t) => [
    primaryKey({
      name: 'finished_rollup_pkey',
      columns: [t.minute, t.queue, t.kind, t.state, t.attempts, t.shard],
    }),
  ],
);

/**
 * The kinds workers run, recorded by each worker at start (db/queue/kinds.ts): what the
 * dashboard shows of a kind without loading its handler. Per kind and version the redacted
 * payload paths only grow: a worker adds paths, never removes one (an admin action may).
 */
export const kinds = leasehold.table(
  'kinds',
  {
    kind: text('kind').notNull(),
    version: integer('version').notNull(),
    defaultQueue: text('default_queue').notNull(),
    displayName: text('display_name').notNull(),
    redactedPaths: text('redacted_paths').array().notNull().default(sql`'{}'::text[]`),
    rerunSafe: boolean('rerun_safe').notNull().default(false),
    /**
     * The payload paths (`orderId`, `customer.email`) the handler declares searchable: the
     * dashboard searches them, each through an index of its own on this kind's jobs
     * (drizzle/0028; docs/dashboard.md, "Search"). Only grows per kind and version, as
     * redacted_paths; an admin adds more at run time in kind_search_paths.
     */
    searchablePaths: text('searchable_paths').array().notNull().default(sql`'{}'::text[]`),
    firstSeenAt: tstz('first_seen_at').notNull().defaultNow(),
    lastSeenAt: tstz('last_seen_at').notNull().defaultNow(),
    /**
     * When maintenance last saw a live worker that runs this kind version (drizzle/0003): a
     * ready job of it ends `dead` only once no live worker has run it for the grace period.
     */
    liveAt: tstz('live_at'),
    /**
     * The handler's `maxAttempts` cap, as the last worker to register this kind version
     * declared it (drizzle/0006); null: no cap below the job's own. The reaper applies it, as
     * the worker's fail path does.
     */
    maxAttempts: integer('max_attempts'),
    /**
     * The JSON Schema of the payload the handler of this kind version takes, from its Standard
     * Schema (`~standard.jsonSchema`, zod 4.2+, valibot, arktype): a run-time schedule's payload is
     * checked against it (drizzle/0022; null: the handler's schema has none, or it was too large).
     */
    payloadSchema: jsonb('payload_schema'),
    /** The handler's bounds of a job's own timeout and back-off, and its snooze cap (KindSettings); null: none. */
    jobSettings: jsonb('job_settings'),
  },
  (t) => [
    primaryKey({ name: 'kinds_pkey', columns: [t.kind, t.version] }),
    check('kinds_version_check', sql`version >= 1`),
    check('kinds_max_attempts_check', sql`max_attempts IS NULL OR max_attempts BETWEEN 1 AND 1000`),
  ],
);

/**
 * Payload paths an admin masks for a kind on top of what its workers declared (drizzle/0008,
 * db/queue/kinds.ts `addRedactedPath`): for every version of the kind, present and future.
 * Separate from `kinds.redacted_paths` so that an admin's removal can only touch what an admin
 * added: what a worker declared is the floor.
 */
export const kindRedactions = leasehold.table(
  'kind_redactions',
  {
    kind: text('kind').notNull(),
    path: text('path').notNull(),
    addedBy: text('added_by').notNull(),
    addedAt: tstz('added_at').notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: 'kind_redactions_pkey', columns: [t.kind, t.path] }),
    check('kind_redactions_path_check', sql`length(path) BETWEEN 1 AND 200`),
  ],
);

/** One row per ended attempt: failed attempts are data, not only log lines. */
export const jobAttempts = leasehold.table(
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
    /**
     * A failed attempt's stack and cause chain, bounded and scrubbed of the payload's secrets
     * (db/queue/error-detail.ts, ErrorDetail); NULL for other outcomes and for errors without
     * either. Schema version 3 (drizzle/0005).
     */
    errorDetail: jsonb('error_detail'),
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

// The limit tables (limits, limit_claims, limit_starts): db/schema-limits.ts.

/**
 * A row per limit and lease row of a claim made with `limits` (db/queue/limits.ts): a limit's
 * running attempts are the `running` of the lease rows its rows name. Not a column of `leases`,
 * which made every lease row 8 bytes wider (9 bytes of WAL a job with one-job claims).
 */
export const limitClaims = leasehold.table(
  'limit_claims',
  {
    limitKey: text('limit_key').notNull(),
    token: uuid('token').notNull(),
    queue: text('queue').notNull(),
  },
  (t) => [primaryKey({ name: 'limit_claims_pkey', columns: [t.limitKey, t.token, t.queue] })],
);

export const queues = leasehold.table(
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
export const auditLog = leasehold.table(
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
  (t) => [
    index('audit_log_at_idx').on(t.at),
    index('audit_log_job_ids_idx').using('gin', t.jobIds),
    // The audit page's filters (/audit?actor=, ?action=), newest first (db/queries/jobs.ts listAudit).
    index('audit_log_actor_idx').on(t.actor, t.id),
    index('audit_log_action_idx').on(t.action, t.id),
  ],
);

// The idempotency and uniqueness keys (dedupe_keys, unique_keys): db/schema-unique.ts.

export type JobRow = typeof jobs.$inferSelect;
export type JobAttemptRow = typeof jobAttempts.$inferSelect;
export type QueueRow = typeof queues.$inferSelect;
export type AuditRow = typeof auditLog.$inferSelect;

/**
 * Live worker processes. Each records itself at start, refreshes `last_seen_at`, and removes
 * itself on a graceful stop; maintenance deletes entries that stopped refreshing.
 */
export const workers = leasehold.table(
  'workers',
  {
    id: text('id').primaryKey(),
    host: text('host').notNull(),
    pid: integer('pid').notNull(),
    queues: text('queues').array().notNull(),
    concurrency: integer('concurrency').notNull(),
    version: text('version'),
    /**
     * The schema version of the Leasehold code the worker runs (SCHEMA_VERSION; drizzle/0018),
     * NULL for code before 13: such a worker ignores concurrency limits, so setting one is refused
     * while it is live (db/queue/limits.ts).
     */
    codeVersion: integer('code_version'),
    /** The oldest schema version its code reads (SUPPORTED_SCHEMA.min; drizzle/0026), NULL before 20. */
    schemaFrom: integer('schema_from'),
    startedAt: tstz('started_at').notNull().defaultNow(),
    lastSeenAt: tstz('last_seen_at').notNull().defaultNow(),
  },
  (t) => [index('workers_last_seen_idx').on(t.lastSeenAt)],
);

/**
 * The kind versions each live worker runs (drizzle/0003), written with its registry entry and
 * removed with it: "a live worker runs kind K version V" is a row here whose worker is live.
 */
export const workerKinds = leasehold.table(
  'worker_kinds',
  {
    workerId: text('worker_id')
      .notNull()
      .references(() => workers.id, { onDelete: 'cascade' }),
    kind: text('kind').notNull(),
    version: integer('version').notNull(),
  },
  (t) => [
    primaryKey({ name: 'worker_kinds_pkey', columns: [t.workerId, t.kind, t.version] }),
    index('worker_kinds_kind_idx').on(t.kind, t.version),
  ],
);

/**
 * Idempotency receipts: the recorded result of a side effect, keyed by its delivery key. A
 * later attempt that finds the receipt returns the result instead of repeating the call.
 */
export const receipts = leasehold.table(
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

/**
 * Who is performing a receipt's side effect right now: claimed by an attempt (its job and lease
 * token) before the effect and removed when the receipt is recorded, so that two attempts on one
 * key run one effect (db/queue/receipts.ts). A claim whose attempt no longer holds its lease is
 * taken over by the next attempt.
 */
export const receiptClaims = leasehold.table('receipt_claims', {
  key: text('key').primaryKey(),
  jobId: uuid('job_id').notNull(),
  attempt: integer('attempt').notNull(),
  leaseToken: uuid('lease_token').notNull(),
  claimedAt: tstz('claimed_at').notNull().defaultNow(),
});

export type WorkerRow = typeof workers.$inferSelect;

export const ROLES = ['viewer', 'operator', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/** Dashboard users. Passwords are scrypt hashes (`scrypt$N$r$p$salt$hash`). */
export const users = leasehold.table(
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

/**
 * Failed sign-ins, kept in the database so the limit holds across dashboard processes
 * (lib/sign-in-throttle.ts). One row per (account, client address), and one per account with
 * `client = ''`: the higher ceiling every address together meets. `blocked_until` is when the
 * next guess is taken again; a success removes the pair's row (not the account's).
 */
export const signInThrottle = leasehold.table(
  'sign_in_throttle',
  {
    account: text('account').notNull(),
    client: text('client').notNull(),
    failures: integer('failures').notNull().default(0),
    firstFailureAt: tstz('first_failure_at').notNull().defaultNow(),
    lastFailureAt: tstz('last_failure_at').notNull().defaultNow(),
    blockedUntil: tstz('blocked_until'),
    /**
     * The audit cap's counts (db/sign-in.ts, recordSignIn), on the rows of account
     * AUDIT_ACCOUNT (upper case: never an account as counted, which is lower-cased): per
     * client address, and for every address together (`client = ''`), the minute counted,
     * how many sign-in audit rows it wrote and how many it left out.
     */
    auditMinute: tstz('audit_minute'),
    audited: integer('audited').notNull().default(0),
    unaudited: integer('unaudited').notNull().default(0),
  },
  (t) => [
    primaryKey({ name: 'sign_in_throttle_pkey', columns: [t.account, t.client] }),
    index('sign_in_throttle_last_failure_idx').on(t.lastFailureAt),
    check('sign_in_throttle_account_check', sql`length(account) BETWEEN 1 AND 254`),
    check('sign_in_throttle_client_check', sql`length(client) <= 100`),
  ],
);

/**
 * One row per maintenance task (reaper, unknown kinds, retention): a round holds its task's
 * row `FOR UPDATE SKIP LOCKED` for its transaction, so one process in the fleet runs it at a
 * time (db/queue/maintenance.ts). A row lock needs UPDATE on the table, which only the worker
 * role has: no other login can stop maintenance by holding the lock.
 */
export const maintenanceLocks = leasehold.table(
  'maintenance_locks',
  {
    task: text('task').primaryKey(),
  },
  () => [check('maintenance_locks_task_check', sql`length(task) BETWEEN 1 AND 200`)],
);

/**
 * A session version per signed-in identity (a built-in user's email, a single sign-on actor).
 * A session carries the version it was issued under and is refused once the row has moved on:
 * sign-out, a password change and disabling raise it (lib/dal/session.ts). No row: version 0.
 */
export const sessionVersions = leasehold.table('session_versions', {
  actor: text('actor').primaryKey(),
  version: integer('version').notNull().default(0),
  updatedAt: tstz('updated_at').notNull().defaultNow(),
});
