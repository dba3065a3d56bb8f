-- Validates the producer checks 0013 added NOT VALID (SELECT and ALTER only: no row is changed), after reporting the old rows that fail
-- them: if any does, nothing is validated and the migration stops with a sentence giving, per
-- check, how many rows fail and the first ids, and what to do (the checks already refuse new
-- bad rows meanwhile). Fix or remove those rows (they were written past leasehold.enqueue and
-- the TypeScript enqueue), then migrate again. One walk of jobs for the report; VALIDATE takes
-- SHARE UPDATE EXCLUSIVE (reads and writes go on) and walks it again per check.
DO $validate$
DECLARE
  report text;
BEGIN
  SELECT string_agg(format('%s: %s rows (%s)', c.name, c.n, array_to_string(c.ids, ', ')), '; ')
  INTO report
  FROM (
    SELECT v.name, v.n, v.ids FROM (
      SELECT count(*) FILTER (WHERE NOT (queue ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]*$')) AS q_n,
             (array_agg(id ORDER BY id) FILTER (WHERE NOT (queue ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]*$')))[1:5] AS q_ids,
             count(*) FILTER (WHERE NOT (kind ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]*$')) AS k_n,
             (array_agg(id ORDER BY id) FILTER (WHERE NOT (kind ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]*$')))[1:5] AS k_ids,
             count(*) FILTER (WHERE NOT (pg_column_size(payload) <= 65536 OR octet_length(payload::text) <= 393216)) AS s_n,
             (array_agg(id ORDER BY id) FILTER (WHERE NOT (pg_column_size(payload) <= 65536 OR octet_length(payload::text) <= 393216)))[1:5] AS s_ids,
             count(*) FILTER (WHERE claim_at < run_at - make_interval(secs => priority * 86400)) AS c_n,
             (array_agg(id ORDER BY id) FILTER (WHERE claim_at < run_at - make_interval(secs => priority * 86400)))[1:5] AS c_ids
      FROM leasehold.jobs
    ) f
    CROSS JOIN LATERAL (VALUES
      ('jobs_queue_pattern_check', f.q_n, f.q_ids), ('jobs_kind_pattern_check', f.k_n, f.k_ids),
      ('jobs_payload_text_check', f.s_n, f.s_ids),
      ('jobs_claim_at_floor_check', f.c_n, f.c_ids)
    ) AS v (name, n, ids)
    WHERE v.n > 0
  ) c;
  IF report IS NOT NULL THEN
    RAISE EXCEPTION USING
      ERRCODE = 'check_violation',
      MESSAGE = format('leasehold: jobs written before the producer checks fail them: %s', report),
      HINT = 'Fix or delete those jobs (they were written past leasehold.enqueue and the TypeScript enqueue), then migrate again; the checks already refuse new rows like them.';
  END IF;
END
$validate$;
--> statement-breakpoint
ALTER TABLE "leasehold"."jobs" VALIDATE CONSTRAINT "jobs_queue_pattern_check";
--> statement-breakpoint
ALTER TABLE "leasehold"."jobs" VALIDATE CONSTRAINT "jobs_kind_pattern_check";
--> statement-breakpoint
ALTER TABLE "leasehold"."jobs" VALIDATE CONSTRAINT "jobs_payload_text_check";
--> statement-breakpoint
ALTER TABLE "leasehold"."jobs" VALIDATE CONSTRAINT "jobs_claim_at_floor_check";
