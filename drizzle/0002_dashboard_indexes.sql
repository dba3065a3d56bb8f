-- Indexes drizzle-kit cannot declare (INCLUDE columns), written by hand; see db/schema.ts.
-- The dashboard's aggregates over history read these as index-only scans, so they stay fast
-- with millions of finished jobs; retention walks jobs_terminal_idx by age.
CREATE INDEX IF NOT EXISTS "jobs_terminal_idx" ON "jobs" USING btree ("state", "finished_at")
  INCLUDE ("queue", "kind", "failure_class", "attempts")
  WHERE state IN ('done', 'dead', 'cancelled');
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "job_attempts_ended_idx" ON "job_attempts" USING btree ("ended_at")
  INCLUDE ("outcome", "failure_class", "queue");
