/**
 * A queue's history (db/queue/queue-history.ts; docs/dashboard.md, "History"): a part of
 * db/schema.ts, which exports it too (drizzle-kit reads that one). The maintenance loop writes
 * a row per queue and minute (kept 7 days) and folds the minutes into a row per queue and hour
 * (kept 90 days): outcomes (done, dead, cancelled) and failed attempts summed, live work
 * (ready, scheduled, retrying, running, lease expired) and the oldest due ready job's age as
 * sampled (a minute's last sample; an hour's highest). Buckets are whole UTC minutes and hours
 * (date_bin from 2000-01-01 UTC: immutable, whatever the session's zone).
 */
import { sql } from 'drizzle-orm';
import { check, doublePrecision, integer, primaryKey, text } from 'drizzle-orm/pg-core';
import { leasehold, tstz } from './schema-base.ts';

const figures = () => ({
  queue: text('queue').notNull(),
  done: integer('done').notNull().default(0),
  dead: integer('dead').notNull().default(0),
  cancelled: integer('cancelled').notNull().default(0),
  /** Attempts that ended failed or with their lease expired (a completion writes no attempt row). */
  failedAttempts: integer('failed_attempts').notNull().default(0),
  /** Live work as sampled; NULL where no sample was taken (no worker ran the maintenance). */
  ready: integer('ready'),
  scheduled: integer('scheduled'),
  retrying: integer('retrying'),
  running: integer('running'),
  leaseExpired: integer('lease_expired'),
  /** The oldest due ready job's age in seconds; NULL when none was due or nothing was sampled. */
  oldestReadySeconds: doublePrecision('oldest_ready_seconds'),
});

export const queueMinutes = leasehold.table(
  'queue_minutes',
  { minute: tstz('minute').notNull(), ...figures() },
  (t) => [
    primaryKey({ name: 'queue_minutes_pkey', columns: [t.minute, t.queue] }),
    check('queue_minutes_minute_check', sql`minute = date_bin('1 minute', minute, '2000-01-01 00:00:00+00')`),
  ],
);

export const queueHours = leasehold.table('queue_hours', { hour: tstz('hour').notNull(), ...figures() }, (t) => [
  primaryKey({ name: 'queue_hours_pkey', columns: [t.hour, t.queue] }),
  check('queue_hours_hour_check', sql`hour = date_bin('1 hour', hour, '2000-01-01 00:00:00+00')`),
]);
