-- leasehold:no-transaction
-- The jobs' tags (drizzle/0023), for the filters of the jobs page, the API and `leasehold jobs`
-- (`tags @> ARRAY[…]`): a partial GIN index, so a job without tags has no entry and costs the
-- index nothing; the column is written once at enqueue, so the claim and the acknowledgement
-- stay HOT. Built without blocking writes; then 0023's widened outcome check is validated
-- (SHARE UPDATE EXCLUSIVE: writes go on). Each statement commits on its own and is safe to run
-- twice (docs/operations.md, Migrations).
CREATE INDEX CONCURRENTLY IF NOT EXISTS "jobs_tags_idx" ON "leasehold"."jobs" USING gin ("tags") WHERE tags IS NOT NULL;
--> statement-breakpoint
ALTER TABLE "leasehold"."job_attempts" VALIDATE CONSTRAINT "job_attempts_outcome_check";
