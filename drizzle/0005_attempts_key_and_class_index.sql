DROP INDEX "job_attempts_job_idx";--> statement-breakpoint
DROP INDEX "jobs_terminal_class_idx";--> statement-breakpoint
CREATE INDEX "jobs_terminal_class_idx" ON "jobs" USING btree ("failure_class","id") WHERE failure_class IS NOT NULL AND state IN ('done', 'dead', 'cancelled');--> statement-breakpoint
ALTER TABLE "job_attempts" DROP CONSTRAINT "job_attempts_pkey";
--> statement-breakpoint
ALTER TABLE "job_attempts" ADD CONSTRAINT "job_attempts_pkey" PRIMARY KEY("job_id","attempt","lease_token");