/**
 * Backlog alerts (docs/operations.md, "Reading the health page"; db/queue/alerts.ts): a part of
 * db/schema.ts, which exports it too (drizzle-kit reads that one). An admin's run-time threshold
 * per queue and figure, written only through the audited `set_queue_alert` function; the
 * configuration's (LEASEHOLD_QUEUE_ALERTS) are read from the environment and never stored.
 */
import { sql } from 'drizzle-orm';
import { check, doublePrecision, primaryKey, text } from 'drizzle-orm/pg-core';
import { leasehold, tstz } from './schema-base.ts';

export const queueAlerts = leasehold.table(
  'queue_alerts',
  {
    queue: text('queue').notNull(),
    alert: text('alert').notNull(),
    /** The alert fires while the queue's figure is at or over it. */
    threshold: doublePrecision('threshold').notNull(),
    setAt: tstz('set_at').notNull().defaultNow(),
    setBy: text('set_by').notNull(),
  },
  (t) => [
    primaryKey({ name: 'queue_alerts_pkey', columns: [t.queue, t.alert] }),
    // The figures of db/queue/alerts.ts's ALERT_FIGURES.
    check('queue_alerts_alert_check', sql`alert IN ('oldest_ready_age_seconds', 'dead', 'waiting_for_kind')`),
    check('queue_alerts_threshold_check', sql`threshold > 0 AND threshold <= 1e12`),
  ],
);
