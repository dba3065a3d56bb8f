/**
 * The limit tables (docs/flow-control.md, db/queue/limits.ts): a part of db/schema.ts, which
 * exports them too (drizzle-kit reads that one).
 */
import { sql } from 'drizzle-orm';
import { check, integer, primaryKey, text } from 'drizzle-orm/pg-core';
import { leasehold, quoted, tstz } from './schema-base.ts';
import { LIMIT_SCOPES } from './states.ts';

/**
 * Limits (docs/flow-control.md), keyed `scope:name`: the handlers' declared concurrency
 * (`declared_max`) and rate (`declared_rate` starts per `declared_per_ms`), each overridden by a
 * run-time value (`set_*`, setLimit, audited) until cleared; `paused_until` (a handler's
 * RateLimitedError); `kinds`, the kinds declared to count toward it. A limited claim locks its
 * limits' rows, so two claimers of one limit never both take the last slot.
 */
export const limits = leasehold.table(
  'limits',
  {
    key: text('key').primaryKey(),
    scope: text('scope', { enum: LIMIT_SCOPES }).notNull(),
    name: text('name').notNull(),
    declaredMax: integer('declared_max'),
    declaredAt: tstz('declared_at'),
    setMax: integer('set_max'),
    setAt: tstz('set_at'),
    setBy: text('set_by'),
    declaredRate: integer('declared_rate'),
    declaredPerMs: integer('declared_per_ms'),
    setRate: integer('set_rate'),
    setPerMs: integer('set_per_ms'),
    pausedUntil: tstz('paused_until'),
    pausedReason: text('paused_reason'),
    kinds: text('kinds').array(),
  },
  () => [
    check('limits_scope_check', sql`scope IN (${quoted(LIMIT_SCOPES)})`),
    check('limits_key_check', sql`key = scope || ':' || name`),
    check('limits_name_check', sql`length(name) BETWEEN 1 AND 128`),
    check('limits_max_check', sql`declared_max >= 1 AND set_max >= 1`),
    check(
      'limits_rate_check',
      sql`declared_rate >= 1 AND declared_per_ms >= 1 AND set_rate >= 1 AND set_per_ms >= 1
          AND (declared_rate IS NULL) = (declared_per_ms IS NULL) AND (set_rate IS NULL) = (set_per_ms IS NULL)`,
    ),
  ],
);

/** A rate-limited claim's starts (`n` jobs at `at`), kept one interval: the sliding window's log. */
export const limitStarts = leasehold.table(
  'limit_starts',
  { limitKey: text('limit_key').notNull(), at: tstz('at').notNull(), n: integer('n').notNull() },
  (t) => [primaryKey({ name: 'limit_starts_pkey', columns: [t.limitKey, t.at] })],
);
