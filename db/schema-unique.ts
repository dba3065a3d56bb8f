/**
 * The keys beside `jobs`: idempotency keys (docs/contract.md §3) and uniqueness keys
 * (docs/jobs.md, "Uniqueness"): a part of db/schema.ts, which exports them too (drizzle-kit
 * reads that one).
 */
import { sql } from 'drizzle-orm';
import { bigint, check, index, text, uuid } from 'drizzle-orm/pg-core';
import { leasehold, tstz } from './schema-base.ts';

/**
 * Idempotency keys, kept apart from `jobs` so that a key still dedupes after retention has
 * removed its job. A key is dropped only after `expires_at` and once its job is gone. A key
 * names its job by id and by the job's own `idempotency_key`: an application may reuse an id
 * once retention removed the job, and the key must not resolve to that newcomer.
 */
export const dedupeKeys = leasehold.table(
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

/**
 * One row per uniqueness key: the job that holds it now. Whether it still holds it is the
 * job's own state, read at enqueue (leasehold.take_unique_key, drizzle/0023): no index on
 * `jobs` names a state, so the claim and the acknowledgement stay HOT. Written only through
 * that SECURITY DEFINER function; `conflicts` counts the enqueues it answered with the holder
 * (kept, replaced or debounced), the evidence the chaos scenario `unique` reads.
 */
export const uniqueKeys = leasehold.table(
  'unique_keys',
  {
    key: text('key').primaryKey(),
    jobId: uuid('job_id').notNull(),
    queue: text('queue').notNull(),
    takenAt: tstz('taken_at').notNull().defaultNow(),
    kept: bigint('kept', { mode: 'number' }).notNull().default(0),
    replaced: bigint('replaced', { mode: 'number' }).notNull().default(0),
    debounced: bigint('debounced', { mode: 'number' }).notNull().default(0),
  },
  (t) => [
    // Retention removes the keys of the jobs it removes.
    index('unique_keys_job_idx').on(t.jobId),
    check('unique_keys_key_check', sql`length(key) BETWEEN 1 AND 512`),
  ],
);
