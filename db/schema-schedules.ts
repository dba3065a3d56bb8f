/**
 * The recurring-job tables (docs/scheduling.md; db/queue/schedules.ts): a part of db/schema.ts,
 * which exports them too (drizzle-kit reads that one).
 */
import { sql } from 'drizzle-orm';
import { bigint, boolean, check, integer, jsonb, primaryKey, text, uuid } from 'drizzle-orm/pg-core';
import { leasehold, tstz } from './schema-base.ts';

/**
 * One row per schedule: what its ticks enqueue (queue, kind, payload…), when (cron, time zone),
 * what happens to missed and overlapping ticks, and where its ticks stand (`ticks_after`: every
 * tick at or before it has been handled, enqueued or passed over; `next_tick_at`: when a worker
 * looks at it next). Code declares schedules (`declared`, through leasehold.declare_schedules);
 * admins create, change, pause, resume, reset and delete them at run time (set_schedule, with
 * its audit row). `overridden`: changed at run time, so the code's declaration does not apply
 * until a reset. Workers move the ticks only through leasehold.run_schedule_ticks.
 */
export const schedules = leasehold.table(
  'schedules',
  {
    name: text('name').primaryKey(),
    queue: text('queue').notNull(),
    kind: text('kind').notNull(),
    kindVersion: integer('kind_version').notNull(),
    payload: jsonb('payload').notNull(),
    groupKey: text('group_key'),
    priority: integer('priority').notNull().default(0),
    maxAttempts: integer('max_attempts').notNull(),
    cron: text('cron').notNull(),
    timezone: text('timezone').notNull(),
    missed: text('missed').notNull(),
    missedEach: integer('missed_each'),
    missedAfterMs: integer('missed_after_ms').notNull(),
    horizonMs: bigint('horizon_ms', { mode: 'number' }).notNull(),
    overlap: text('overlap').notNull(),
    jitterMs: integer('jitter_ms').notNull().default(0),
    startWithinMs: integer('start_within_ms'),
    paused: boolean('paused').notNull().default(false),
    pausedReason: text('paused_reason'),
    source: text('source').notNull(),
    declared: jsonb('declared'),
    declaredAt: tstz('declared_at'),
    overridden: boolean('overridden').notNull().default(false),
    ticksAfter: tstz('ticks_after').notNull(),
    nextTickAt: tstz('next_tick_at'),
    lastTickAt: tstz('last_tick_at'),
    lastJobId: uuid('last_job_id'),
    createdAt: tstz('created_at').notNull(),
    updatedAt: tstz('updated_at').notNull(),
  },
  () => [
    check('schedules_name_check', sql`name ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$'`),
    check(
      'schedules_missed_check',
      sql`missed IN ('skip', 'once', 'each') AND (missed = 'each') = (missed_each IS NOT NULL)`,
    ),
    check('schedules_missed_each_check', sql`missed_each BETWEEN 1 AND 1000`),
    check('schedules_missed_after_check', sql`missed_after_ms BETWEEN 1000 AND 86400000`),
    check('schedules_horizon_check', sql`horizon_ms BETWEEN 1000 AND 31536000000 AND horizon_ms >= missed_after_ms`),
    check('schedules_overlap_check', sql`overlap IN ('allow', 'skip')`),
    check('schedules_jitter_check', sql`jitter_ms BETWEEN 0 AND 3600000`),
    check('schedules_start_within_check', sql`start_within_ms BETWEEN 1000 AND 604800000`),
    check('schedules_source_check', sql`source IN ('code', 'runtime')`),
    check('schedules_cron_check', sql`length(cron) BETWEEN 1 AND 256 AND length(timezone) BETWEEN 1 AND 64`),
  ],
);

/**
 * What became of a schedule's ticks: `enqueued` (its job, on time), `late` (its job, enqueued
 * after `missed_after_ms` because the missed-tick policy chose it), `overlap` (passed over: the
 * previous tick's job had not ended), `missed` (one row per run of missed ticks the policy passed
 * over: `missed_count` of them, the newest at `tick_at`), `discarded` (late past the schedule's
 * start deadline, `start_within_ms`: not enqueued). Kept for the schedule's horizon, and its newest 100 rows always (the schedule's page).
 * The primary key makes a tick's second row impossible.
 */
export const scheduleTicks = leasehold.table(
  'schedule_ticks',
  {
    schedule: text('schedule').notNull(),
    tickAt: tstz('tick_at').notNull(),
    outcome: text('outcome').notNull(),
    jobId: uuid('job_id'),
    missedCount: integer('missed_count'),
    at: tstz('at').notNull(),
  },
  (t) => [
    primaryKey({ name: 'schedule_ticks_pkey', columns: [t.schedule, t.tickAt] }),
    check('schedule_ticks_outcome_check', sql`outcome IN ('enqueued', 'late', 'overlap', 'missed', 'discarded')`),
  ],
);
