/**
 * The fair-group tables (docs/flow-control.md, "Fair groups"; db/queue/transitions/claim-grouped.ts):
 * a part of db/schema.ts, which exports them too (drizzle-kit reads that one).
 */
import { sql } from 'drizzle-orm';
import { boolean, check, index, integer, primaryKey, text, uuid } from 'drizzle-orm/pg-core';
import { leasehold, tstz } from './schema-base.ts';

/**
 * The claimable set of grouped jobs (a job enqueued with a group key): `ready_jobs`'s columns
 * and the group. Kept apart from `ready_jobs` so that no walk of the ungrouped claim ever reads
 * a grouped job (its texts stay byte for byte the measured ones, and a worker of a release
 * before groups never takes one: it cannot keep their turns), and so that a group's oldest jobs
 * are one index descent away however many other groups wait. Written by the same triggers as
 * `ready_jobs` (drizzle/0020), by the job's group; the grouped claim deletes the rows it takes.
 */
export const groupedReadyJobs = leasehold.table(
  'grouped_ready_jobs',
  {
    queue: text('queue').notNull(),
    kind: text('kind').notNull(),
    kindVersion: integer('kind_version').notNull(),
    groupKey: text('group_key').notNull(),
    claimAt: tstz('claim_at').notNull(),
    runAt: tstz('run_at').notNull(),
    id: uuid('id').notNull(),
    attempts: integer('attempts').notNull().default(0),
  },
  (t) => [
    // One group's jobs of one kind version in the aging order: the grouped claim's walk.
    index('grouped_ready_jobs_claim_idx').on(t.queue, t.kind, t.kindVersion, t.groupKey, t.claimAt, t.id),
  ],
);

/**
 * One row per (queue, kind version, group) that may hold ready jobs: whose turn is next. The
 * grouped claim serves the groups whose `turn_at` has come, least recently served first, and
 * sets `turn_at` to its own time for each group it served (so it goes behind every group
 * waiting), or ahead to the group's next job's sort key when nothing of it was due. An enqueue
 * of a grouped job adds the row when missing and holds it FOR KEY SHARE until it commits (the
 * claim's update does not wait for that; the sweep's delete does), and brings `turn_at` down to
 * the job's run time when it was later. `idle_since`: the claim found nothing due in the group;
 * the maintenance sweep then deletes the row if the group has no ready job left, or brings its
 * turn back if one came meanwhile.
 */
export const readyGroups = leasehold.table(
  'ready_groups',
  {
    queue: text('queue').notNull(),
    kind: text('kind').notNull(),
    kindVersion: integer('kind_version').notNull(),
    groupKey: text('group_key').notNull(),
    turnAt: tstz('turn_at').notNull(),
    idleSince: tstz('idle_since'),
  },
  (t) => [
    primaryKey({ name: 'ready_groups_pkey', columns: [t.queue, t.kind, t.kindVersion, t.groupKey] }),
    index('ready_groups_turn_idx').on(t.queue, t.kind, t.kindVersion, t.turnAt, t.groupKey),
    index('ready_groups_idle_idx').on(t.idleSince).where(sql`idle_since IS NOT NULL`),
  ],
);

/**
 * Per-group limits (docs/flow-control.md, "Per-group limits"; db/queue/group-limits.ts): per
 * queue, the row of `group_key` '' holds the default maximum of running attempts for each of its
 * groups (`max`, null: none), and a row per named group its own maximum (null: the default
 * applies) or its pause. A queue has the '' row whenever it has any row (the grouped claim locks
 * it, through leasehold.lock_group_limits, so two claims of one queue never both take a group's
 * last slot); no group key is empty, so '' names no group. Written only by the SECURITY DEFINER
 * leasehold.set_group_limit, with its audit row.
 */
export const groupLimits = leasehold.table(
  'group_limits',
  {
    queue: text('queue').notNull(),
    groupKey: text('group_key').notNull(),
    max: integer('max'),
    paused: boolean('paused').notNull().default(false),
    pausedReason: text('paused_reason'),
    setAt: tstz('set_at').notNull(),
    setBy: text('set_by').notNull(),
  },
  (t) => [
    primaryKey({ name: 'group_limits_pkey', columns: [t.queue, t.groupKey] }),
    check('group_limits_max_check', sql`max BETWEEN 1 AND 1000000`),
    check('group_limits_key_check', sql`length(group_key) <= 256 AND (group_key <> '' OR NOT paused)`),
  ],
);

/**
 * A row per group and claim of a queue with group limits (the jobs of `group_key` that the claim
 * `token` took): a group's running attempts are those of its rows' jobs still `running` under
 * that token, so the count is the jobs' own state, whatever ended them (a settlement, the reaper,
 * an operator). The grouped claim adds them and deletes the rows of the groups it looks at that
 * run nothing any more; the maintenance sweep deletes the others'.
 */
export const groupClaims = leasehold.table(
  'group_claims',
  {
    queue: text('queue').notNull(),
    groupKey: text('group_key').notNull(),
    token: uuid('token').notNull(),
    jobIds: uuid('job_ids').array().notNull(),
  },
  (t) => [primaryKey({ name: 'group_claims_pkey', columns: [t.queue, t.groupKey, t.token] })],
);
