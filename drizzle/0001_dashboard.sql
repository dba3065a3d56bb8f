CREATE TABLE "users" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"email" text NOT NULL,
	"password_hash" text NOT NULL,
	"role" text NOT NULL,
	"disabled" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "users_role_check" CHECK (role IN ('viewer', 'operator', 'admin')),
	CONSTRAINT "users_email_check" CHECK (email = lower(email) AND position('@' in email) > 1)
);
--> statement-breakpoint
DROP INDEX "job_attempts_ended_idx";--> statement-breakpoint
DROP INDEX "jobs_terminal_idx";--> statement-breakpoint
CREATE UNIQUE INDEX "users_email_idx" ON "users" USING btree ("email");--> statement-breakpoint
CREATE INDEX "audit_log_job_ids_idx" ON "audit_log" USING gin ("job_ids");