-- leasehold:schema-version 19
-- leasehold:compatible-from 1
-- Results, progress and waiting (issue 40; docs/jobs.md, "Results, progress and waiting";
-- db/queue/results.ts). `job_results`: what a job's completing attempt returned, written by the
-- acknowledgement that completed it, in the same statement; `job_progress`: how far its latest
-- attempt got (the worker coalesces a handler's reports to one write a second). Both keyed by
-- job id, outside `jobs`, whose pages keep their free room for the claim's and the
-- acknowledgement's HOT versions. A job whose `options` say `awaitable` (checked by 0023's
-- trigger jobs_extras_check) wakes a waitForJob at its end.
-- Expanding: a worker of an older release stores no result and reports no progress.
CREATE TABLE "leasehold"."job_progress" (
	"job_id" uuid PRIMARY KEY NOT NULL,
	"attempt" integer NOT NULL,
	"fraction" real NOT NULL,
	"message" text,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "job_progress_fraction_check" CHECK (fraction BETWEEN 0 AND 1),
	CONSTRAINT "job_progress_message_check" CHECK (length(message) <= 200)
);
--> statement-breakpoint
CREATE TABLE "leasehold"."job_results" (
	"job_id" uuid PRIMARY KEY NOT NULL,
	"attempt" integer NOT NULL,
	"result" jsonb,
	"marker" text,
	"bytes" integer NOT NULL,
	"stored_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "job_results_marker_check" CHECK ((result IS NULL) = (marker IS NOT NULL) AND length(marker) <= 500),
	CONSTRAINT "job_results_bytes_check" CHECK (bytes >= 0)
);
