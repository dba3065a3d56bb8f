-- leasehold:schema-version 12
-- leasehold:compatible-from 1
-- The checks of a job's fixed columns move from CHECK constraints to a trigger (issue 35, item
-- 4). PostgreSQL evaluates every CHECK constraint of a table on every UPDATE of a row, whatever
-- columns it sets, so each claim and each acknowledgement re-checked, per job, the name
-- patterns (two regular expressions), the name lengths, the kind version, the priority, the
-- attempt cap and the payload's size: columns written at enqueue that the queue's own
-- statements never change. That was about 1 µs a job in the claim and 1 µs in the
-- acknowledgement, a sixth to a fifth of each (docs/performance.md, "Server CPU per job with four
-- processes").
--
-- Two triggers refuse the same rows, with the same constraint names, SQLSTATE 23514
-- (check_violation) and the message a CHECK gives:
-- - jobs_fixed_columns_check, BEFORE INSERT: every new row, as the CHECKs did. Its WHEN clause is
--   the checks themselves (a row passes when each is true or null, as with a CHECK), evaluated in
--   the executor; the function runs only for a row that fails. Before the row is stored, as a
--   CHECK sees it, so `pg_column_size` is the payload's uncompressed size.
-- - jobs_fixed_columns_changed and jobs_payload_changed, AFTER UPDATE OF those columns: only an
--   UPDATE whose SET list names one (a producer's or an operator's own SQL, an operator retry's
--   max_attempts; no statement of a worker's lifecycle does). Not a
--   BEFORE UPDATE trigger: PostgreSQL locks every row an UPDATE changes before it looks at any
--   BEFORE UPDATE row trigger's columns, one more WAL record per row for every claim and
--   acknowledgement (113 bytes a job, measured). After the row is stored its payload may be
--   compressed, so the sizes are measured on the payload made again from its text.
-- The claim, the acknowledgement, a failure, a release and the heartbeat set none of these
-- columns, so they no longer evaluate them (a release by code older than schema version 6 raises
-- max_attempts, and pays for the six cheap checks). The state checks (state, lease, finished, attempts,
-- ended class, sort key, failure class) stay CHECK constraints: the lifecycle changes their
-- columns.
--
-- Expanding: code of every version keeps running on it (the rows it writes were already held to
-- these bounds). Dropping a CHECK takes the table's ACCESS EXCLUSIVE lock for an instant (no
-- scan); the runner's lock_timeout bounds the wait.
CREATE FUNCTION "leasehold"."jobs_fixed_columns_check"() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
  stored_bytes int := CASE WHEN TG_WHEN = 'BEFORE' THEN pg_column_size(NEW.payload)
                           ELSE pg_column_size(NEW.payload::text::jsonb) END;
  failed text;
BEGIN
  failed := CASE
    WHEN (length(NEW.queue) BETWEEN 1 AND 128 AND length(NEW.kind) BETWEEN 1 AND 128) IS FALSE THEN 'jobs_names_check'
    WHEN (NEW.queue ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]*$') IS FALSE THEN 'jobs_queue_pattern_check'
    WHEN (NEW.kind ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]*$') IS FALSE THEN 'jobs_kind_pattern_check'
    WHEN (NEW.kind_version >= 1) IS FALSE THEN 'jobs_kind_version_check'
    WHEN (NEW.priority BETWEEN 0 AND 100) IS FALSE THEN 'jobs_priority_check'
    WHEN (NEW.max_attempts BETWEEN 1 AND 1000) IS FALSE THEN 'jobs_max_attempts_check'
    WHEN (stored_bytes <= 4194304) IS FALSE THEN 'jobs_payload_size_check'
    WHEN (stored_bytes <= 65536 OR octet_length(NEW.payload::text) <= 393216) IS FALSE THEN 'jobs_payload_text_check'
  END;
  IF failed IS NOT NULL THEN
    RAISE EXCEPTION 'new row for relation "jobs" violates check constraint "%"', failed
      USING ERRCODE = 'check_violation', CONSTRAINT = failed, TABLE = 'jobs', SCHEMA = 'leasehold';
  END IF;
  RETURN NEW;
END
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."jobs_fixed_columns_check"() FROM PUBLIC;
--> statement-breakpoint
-- The names come first, in the WHEN clauses as in the function: a bounded name keeps the
-- regular expressions cheap (drizzle/0013).
CREATE TRIGGER "jobs_fixed_columns_check" BEFORE INSERT ON "leasehold"."jobs"
  FOR EACH ROW WHEN (
    (length(NEW.queue) BETWEEN 1 AND 128 AND length(NEW.kind) BETWEEN 1 AND 128) IS FALSE
    OR (NEW.queue ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]*$') IS FALSE
    OR (NEW.kind ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]*$') IS FALSE
    OR (NEW.kind_version >= 1) IS FALSE
    OR (NEW.priority BETWEEN 0 AND 100) IS FALSE
    OR (NEW.max_attempts BETWEEN 1 AND 1000) IS FALSE
    OR (pg_column_size(NEW.payload) <= 4194304) IS FALSE
    OR (pg_column_size(NEW.payload) <= 65536 OR octet_length(NEW.payload::text) <= 393216) IS FALSE)
  EXECUTE FUNCTION "leasehold"."jobs_fixed_columns_check"();
--> statement-breakpoint
-- An operator retry raises max_attempts (0011), so the payload, whose checks read its text, has
-- a trigger of its own: a retry does not make the payload's text.
CREATE TRIGGER "jobs_fixed_columns_changed"
  AFTER UPDATE OF queue, kind, kind_version, priority, max_attempts ON "leasehold"."jobs"
  FOR EACH ROW WHEN (
    (length(NEW.queue) BETWEEN 1 AND 128 AND length(NEW.kind) BETWEEN 1 AND 128) IS FALSE
    OR (NEW.queue ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]*$') IS FALSE
    OR (NEW.kind ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]*$') IS FALSE
    OR (NEW.kind_version >= 1) IS FALSE
    OR (NEW.priority BETWEEN 0 AND 100) IS FALSE
    OR (NEW.max_attempts BETWEEN 1 AND 1000) IS FALSE)
  EXECUTE FUNCTION "leasehold"."jobs_fixed_columns_check"();
--> statement-breakpoint
CREATE TRIGGER "jobs_payload_changed" AFTER UPDATE OF payload ON "leasehold"."jobs"
  FOR EACH ROW WHEN (
    (pg_column_size(NEW.payload::text::jsonb) <= 4194304) IS FALSE
    OR (octet_length(NEW.payload::text) <= 393216) IS FALSE)
  EXECUTE FUNCTION "leasehold"."jobs_fixed_columns_check"();
--> statement-breakpoint
ALTER TABLE "leasehold"."jobs" DROP CONSTRAINT "jobs_max_attempts_check";--> statement-breakpoint
ALTER TABLE "leasehold"."jobs" DROP CONSTRAINT "jobs_priority_check";--> statement-breakpoint
ALTER TABLE "leasehold"."jobs" DROP CONSTRAINT "jobs_payload_size_check";--> statement-breakpoint
ALTER TABLE "leasehold"."jobs" DROP CONSTRAINT "jobs_names_check";--> statement-breakpoint
ALTER TABLE "leasehold"."jobs" DROP CONSTRAINT "jobs_kind_version_check";--> statement-breakpoint
ALTER TABLE "leasehold"."jobs" DROP CONSTRAINT "jobs_queue_pattern_check";--> statement-breakpoint
ALTER TABLE "leasehold"."jobs" DROP CONSTRAINT "jobs_kind_pattern_check";--> statement-breakpoint
ALTER TABLE "leasehold"."jobs" DROP CONSTRAINT "jobs_payload_text_check";