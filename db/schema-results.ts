/**
 * Results and progress (docs/jobs.md, "Results, progress and waiting"; db/queue/results.ts): a
 * part of db/schema.ts, which exports them too (drizzle-kit reads that one). Kept out of `jobs`:
 * a result or a progress line written into a job's row would take the page room fillfactor 25
 * keeps for the claim's and the acknowledgement's HOT versions.
 */
import { sql } from 'drizzle-orm';
import { check, integer, jsonb, real, text, uuid } from 'drizzle-orm/pg-core';
import { leasehold, tstz } from './schema-base.ts';

/**
 * What a job's completing attempt returned: written by the acknowledgement that completed it,
 * in the same statement (so a job is done with its result or not done). `result` is the JSON
 * value, or NULL with `marker` saying why it was not kept (not JSON, over the kind's cap).
 */
export const jobResults = leasehold.table(
  'job_results',
  {
    jobId: uuid('job_id').primaryKey(),
    attempt: integer('attempt').notNull(),
    result: jsonb('result'),
    marker: text('marker'),
    bytes: integer('bytes').notNull(),
    storedAt: tstz('stored_at').notNull().defaultNow(),
  },
  () => [
    check('job_results_marker_check', sql`(result IS NULL) = (marker IS NOT NULL) AND length(marker) <= 500`),
    check('job_results_bytes_check', sql`bytes >= 0`),
  ],
);

/** How far a job's latest attempt got, as its handler last said (coalesced: at most one write a second). */
export const jobProgress = leasehold.table(
  'job_progress',
  {
    jobId: uuid('job_id').primaryKey(),
    attempt: integer('attempt').notNull(),
    fraction: real('fraction').notNull(),
    message: text('message'),
    updatedAt: tstz('updated_at').notNull().defaultNow(),
  },
  () => [
    check('job_progress_fraction_check', sql`fraction BETWEEN 0 AND 1`),
    check('job_progress_message_check', sql`length(message) <= 200`),
  ],
);
