-- The table refuses what leasehold.enqueue() and the TypeScript enqueue refuse, so a producer's
-- own INSERT (its role keeps INSERT on jobs: both enqueues need it) cannot skip their checks:
-- queue and kind names of the name pattern (no newlines or HTML; the 128-character bound is
-- jobs_names_check, as a bounded repetition costs the regex 50 µs a row); a payload of at most
-- 384 KiB of PostgreSQL's JSON text, which spaces its separators (`[1, 2]`): 1.5 times the
-- 256 KiB of compact JSON the TypeScript enqueue counts, so all it accepts fits and a 3.8 MB
-- payload does not (the text is made only for a payload whose binary form passes 64 KiB: the
-- text is at most 6 times that, a string of control characters escaped as \u00XX); and a sort
-- key (claim_at) no earlier than run_at minus the priority times the longest aging step (86,400
-- s), not '0001-01-01' jumping every priority. No depth check: a CHECK applies to every UPDATE of
-- a row, and leasehold.enqueue accepted any depth before 0011, so an old deep job would fail its
-- claim (the enqueues refuse depth; the dashboard and workers walk any depth).
-- Added NOT VALID: new and changed rows are checked at once, old rows are not read here; 0014
-- reports the old rows that fail (until they are fixed, a change to one of them fails) and
-- validates. And a dedupe_keys row needs its job, with that key, by the end of its transaction
-- (a deferred constraint trigger): a key pointing at no job made a later real enqueue with it
-- answer created: false and never create the job.
ALTER TABLE "leasehold"."jobs" ADD CONSTRAINT "jobs_queue_pattern_check" CHECK (queue ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]*$') NOT VALID;
--> statement-breakpoint
ALTER TABLE "leasehold"."jobs" ADD CONSTRAINT "jobs_kind_pattern_check" CHECK (kind ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]*$') NOT VALID;
--> statement-breakpoint
ALTER TABLE "leasehold"."jobs" ADD CONSTRAINT "jobs_payload_text_check" CHECK ((pg_column_size(payload) <= 65536 OR octet_length(payload::text) <= 393216)) NOT VALID;
--> statement-breakpoint
ALTER TABLE "leasehold"."jobs" ADD CONSTRAINT "jobs_claim_at_floor_check" CHECK (claim_at >= run_at - make_interval(secs => priority * 86400)) NOT VALID;
--> statement-breakpoint
CREATE FUNCTION "leasehold"."dedupe_key_has_job"() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM leasehold.jobs j WHERE j.id = NEW.job_id AND j.idempotency_key = NEW.key) THEN
    RAISE EXCEPTION USING
      ERRCODE = 'foreign_key_violation',
      MESSAGE = format('leasehold: idempotency key %L names job %s, which does not exist with that key at the end of the transaction that wrote the key', left(NEW.key, 140), NEW.job_id),
      HINT = 'A key is written only with its job (leasehold.enqueue or the TypeScript enqueue); the transaction was rolled back.';
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE CONSTRAINT TRIGGER "dedupe_keys_need_their_job" AFTER INSERT ON "leasehold"."dedupe_keys"
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "leasehold"."dedupe_key_has_job"();
