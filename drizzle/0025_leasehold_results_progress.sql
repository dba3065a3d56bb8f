-- leasehold:schema-version 19
-- leasehold:compatible-from 1
-- Results, progress and waiting (issue 40; docs/jobs.md, "Results, progress and waiting";
-- db/queue/results.ts). `job_results`: what a job's completing attempt returned, written by the
-- acknowledgement that completed it, in the same statement; `job_progress`: how far its latest
-- attempt got (the worker coalesces a handler's reports to one write a second). Both keyed by
-- job id, outside `jobs`, whose pages keep their free room for the claim's and the
-- acknowledgement's HOT versions. `jobs.options` may now say `awaitable` (the trigger
-- jobs_extras_check, 0023's body otherwise): only such jobs wake a waitForJob at their end.
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

--> statement-breakpoint
CREATE OR REPLACE FUNCTION "leasehold"."jobs_extras_check"() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
  failed text;
BEGIN
  failed := CASE
    WHEN NEW.tags IS NOT NULL AND (array_ndims(NEW.tags) IS DISTINCT FROM 1 OR cardinality(NEW.tags) NOT BETWEEN 1 AND 16
         OR array_position(NEW.tags, NULL) IS NOT NULL
         OR EXISTS (SELECT 1 FROM unnest(NEW.tags) t WHERE length(t) NOT BETWEEN 1 AND 64 OR t ~ '[[:cntrl:]]')
         OR (SELECT count(DISTINCT t) FROM unnest(NEW.tags) t) <> cardinality(NEW.tags)) THEN 'jobs_tags_check'
    WHEN NEW.options IS NOT NULL AND (jsonb_typeof(NEW.options) <> 'object'
         OR EXISTS (SELECT 1 FROM jsonb_object_keys(NEW.options) k WHERE k NOT IN ('timeoutMs', 'backoff', 'uniqueKey', 'awaitable'))
         OR (NEW.options ? 'timeoutMs' AND (jsonb_typeof(NEW.options->'timeoutMs') <> 'number'
             OR (NEW.options->>'timeoutMs')::numeric NOT BETWEEN 1 AND 86400000))
         OR (NEW.options ? 'backoff' AND (jsonb_typeof(NEW.options->'backoff') <> 'object'
             OR jsonb_typeof(NEW.options->'backoff'->'baseMs') IS DISTINCT FROM 'number'
             OR jsonb_typeof(NEW.options->'backoff'->'maxMs') IS DISTINCT FROM 'number'
             OR (NEW.options->'backoff'->>'baseMs')::numeric NOT BETWEEN 1 AND 86400000
             OR (NEW.options->'backoff'->>'maxMs')::numeric NOT BETWEEN (NEW.options->'backoff'->>'baseMs')::numeric AND 604800000))
         OR (NEW.options ? 'uniqueKey' AND (jsonb_typeof(NEW.options->'uniqueKey') <> 'string'
             OR length(NEW.options->>'uniqueKey') NOT BETWEEN 1 AND 512))
         OR (NEW.options ? 'awaitable' AND NEW.options->'awaitable' <> 'true'::jsonb)) THEN 'jobs_options_check'
  END;
  IF failed IS NOT NULL THEN
    RAISE EXCEPTION 'new row for relation "jobs" violates check constraint "%"', failed
      USING ERRCODE = 'check_violation', CONSTRAINT = failed, TABLE = 'jobs', SCHEMA = 'leasehold';
  END IF;
  RETURN NEW;
END
$$;
