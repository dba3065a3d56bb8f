-- leasehold:schema-version 18
-- leasehold:compatible-from 1
-- Uniqueness, snooze, per-job settings and tags (issue 39; docs/jobs.md; db/queue/unique.ts,
-- db/queue/job-options.ts). `unique_keys` names, per uniqueness key, the job that holds it; an
-- enqueue with `unique` goes through leasehold.take_unique_key (SECURITY DEFINER: the producer
-- has no write right on the table nor on jobs), which reads the holder's state and keeps it,
-- replaces a waiting holder's payload and run time, or pushes its run time (debounce), or hands
-- the key to the new job. `jobs.tags` (checked by the trigger jobs_extras_check, indexed by 0024
-- concurrently), `jobs.options` (a job's own timeout and back-off, its uniqueness key, its
-- snooze counters), `kinds.job_settings` (the bounds a kind's handler allows), and the attempt
-- outcome `snoozed`. Expanding: a worker of an older release claims these jobs with its
-- handler's own timeout and back-off, and never snoozes.
CREATE TABLE "leasehold"."unique_keys" (
	"key" text PRIMARY KEY NOT NULL,
	"job_id" uuid NOT NULL,
	"queue" text NOT NULL,
	"taken_at" timestamp with time zone DEFAULT now() NOT NULL,
	"kept" bigint DEFAULT 0 NOT NULL,
	"replaced" bigint DEFAULT 0 NOT NULL,
	"debounced" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "unique_keys_key_check" CHECK (length(key) BETWEEN 1 AND 512)
);
--> statement-breakpoint
ALTER TABLE "leasehold"."job_attempts" DROP CONSTRAINT "job_attempts_outcome_check";--> statement-breakpoint
ALTER TABLE "leasehold"."jobs" ADD COLUMN "tags" text[];--> statement-breakpoint
ALTER TABLE "leasehold"."jobs" ADD COLUMN "options" jsonb;--> statement-breakpoint
ALTER TABLE "leasehold"."kinds" ADD COLUMN "job_settings" jsonb;--> statement-breakpoint
CREATE INDEX "unique_keys_job_idx" ON "leasehold"."unique_keys" USING btree ("job_id");--> statement-breakpoint
-- NOT VALID: the old rows all pass the narrower check; 0024 validates it without blocking writes.
ALTER TABLE "leasehold"."job_attempts" ADD CONSTRAINT "job_attempts_outcome_check" CHECK (outcome IN ('completed', 'failed', 'lease_expired', 'released', 'cancelled', 'snoozed')) NOT VALID;
--> statement-breakpoint
-- Tags and options as the TypeScript enqueue refuses them (db/queue/enqueue-spec.ts), so a
-- producer's own INSERT cannot skip the checks. Fires only for a job with either (WHEN), so a
-- plain job pays one null test.
CREATE FUNCTION "leasehold"."jobs_extras_check"() RETURNS trigger
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
         -- `awaitable` (drizzle/0025's waitForJob): true or absent.
         OR (NEW.options ? 'awaitable' AND NEW.options->'awaitable' <> 'true'::jsonb)) THEN 'jobs_options_check'
  END;
  IF failed IS NOT NULL THEN
    RAISE EXCEPTION 'new row for relation "jobs" violates check constraint "%"', failed
      USING ERRCODE = 'check_violation', CONSTRAINT = failed, TABLE = 'jobs', SCHEMA = 'leasehold';
  END IF;
  RETURN NEW;
END
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."jobs_extras_check"() FROM PUBLIC;
--> statement-breakpoint
CREATE TRIGGER "jobs_extras_check" BEFORE INSERT ON "leasehold"."jobs"
  FOR EACH ROW WHEN (NEW.tags IS NOT NULL OR NEW.options IS NOT NULL)
  EXECUTE FUNCTION "leasehold"."jobs_extras_check"();
--> statement-breakpoint
-- Where a job stands for uniqueness (docs/jobs.md, "Uniqueness"): running; retrying (waiting
-- after a failed attempt: it has a failure class); scheduled (waiting for a run time still to
-- come); ready (due); NULL once it ended.
CREATE FUNCTION "leasehold"."unique_state"(p_state text, p_failure_class text, p_run_at timestamptz)
RETURNS text LANGUAGE sql STABLE SET search_path = pg_catalog AS $$
  SELECT CASE
    WHEN p_state = 'running' THEN 'running'
    WHEN p_state <> 'ready' THEN NULL
    WHEN p_failure_class IS NOT NULL THEN 'retrying'
    WHEN p_run_at > statement_timestamp() THEN 'scheduled'
    ELSE 'ready'
  END
$$;
--> statement-breakpoint
-- An enqueue's uniqueness key: returns the job that answers the call and whether it is the new
-- one (`created`: the caller inserts job p_job_id in the same transaction; until then the key
-- names a job that does not exist, which a later call treats as free). The key's row is locked
-- first, so concurrent calls of one key are served one at a time; then, for `replace` and
-- `debounce` on a waiting holder, its ready row and then the job (the lock order of
-- db/queue/transitions.ts). A running holder is never changed: the call gets it as `kept`.
CREATE FUNCTION "leasehold"."take_unique_key"(p_key text, p_while text[], p_mode text, p_job_id uuid, p_queue text,
                                              p_payload jsonb, p_run_at timestamptz, p_delay interval, p_debounce interval)
RETURNS TABLE (job_id uuid, created boolean, action text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
  problems text[] := ARRAY[]::text[];
  k record;
  j record;
  locked record;
  next_run timestamptz;
  written integer;
BEGIN
  IF p_key IS NULL OR length(p_key) NOT BETWEEN 1 AND 512 THEN
    problems := array_append(problems, format('the uniqueness key must be 1 to 512 characters, not %s', coalesce(length(p_key)::text, 'NULL')));
  END IF;
  IF p_while IS NULL OR cardinality(p_while) = 0 OR array_position(p_while, NULL) IS NOT NULL
     OR NOT p_while <@ ARRAY['ready', 'scheduled', 'retrying', 'running'] THEN
    problems := array_append(problems, format('while must list some of ready, scheduled, retrying, running, not %s', coalesce(p_while::text, 'NULL')));
  END IF;
  IF p_mode IS NULL OR p_mode NOT IN ('keep', 'replace', 'debounce') THEN
    problems := array_append(problems, format('on_conflict must be keep, replace or debounce, not %s', coalesce(p_mode, 'NULL')));
  END IF;
  IF p_mode = 'debounce' AND (p_debounce IS NULL OR p_debounce <= interval '0' OR p_debounce > interval '3650 days') THEN
    problems := array_append(problems, format('debounce must be more than 0 and at most 3650 days, not %s', coalesce(p_debounce::text, 'NULL')));
  END IF;
  IF p_job_id IS NULL OR p_queue IS NULL THEN
    problems := array_append(problems, 'the new job''s id and queue are required');
  END IF;
  IF cardinality(problems) > 0 THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = format('leasehold: the uniqueness key was refused: %s.', array_to_string(problems, '; ')),
      HINT = 'Nothing was written.';
  END IF;
  FOR try_number IN 1..5 LOOP
    INSERT INTO leasehold.unique_keys (key, job_id, queue, taken_at)
    VALUES (p_key, p_job_id, p_queue, statement_timestamp())
    ON CONFLICT ON CONSTRAINT unique_keys_pkey DO NOTHING;
    GET DIAGNOSTICS written = ROW_COUNT;
    IF written = 1 THEN
      job_id := p_job_id; created := true; action := 'created';
      RETURN NEXT; RETURN;
    END IF;
    SELECT u.key, u.job_id INTO k FROM leasehold.unique_keys u WHERE u.key = p_key FOR UPDATE;
    IF NOT FOUND THEN CONTINUE; END IF; -- removed between the two statements: insert again
    SELECT x.id, x.state, x.queue, x.kind, x.kind_version, x.group_key, x.claim_at, x.run_at, x.failure_class
    INTO j FROM leasehold.jobs x WHERE x.id = k.job_id;
    IF NOT FOUND OR NOT coalesce(leasehold.unique_state(j.state, j.failure_class, j.run_at) = ANY(p_while), false) THEN
      -- The holder ended, left the states named, or was never written: the key is the new job's.
      UPDATE leasehold.unique_keys u SET job_id = p_job_id, queue = p_queue, taken_at = statement_timestamp()
      WHERE u.key = p_key;
      job_id := p_job_id; created := true; action := 'created';
      RETURN NEXT; RETURN;
    END IF;
    IF p_mode = 'keep' OR j.state <> 'ready' THEN
      UPDATE leasehold.unique_keys u SET kept = u.kept + 1 WHERE u.key = p_key;
      job_id := j.id; created := false; action := 'kept';
      RETURN NEXT; RETURN;
    END IF;
    -- A waiting holder to change: its ready row, then the job (a claim takes them in that order).
    IF j.group_key IS NULL THEN
      PERFORM 1 FROM leasehold.ready_jobs r
      WHERE r.kind = j.kind AND r.kind_version = j.kind_version AND r.queue = j.queue AND r.claim_at = j.claim_at AND r.id = j.id
      FOR UPDATE;
    ELSE
      PERFORM 1 FROM leasehold.grouped_ready_jobs r
      WHERE r.queue = j.queue AND r.kind = j.kind AND r.kind_version = j.kind_version AND r.group_key = j.group_key
        AND r.claim_at = j.claim_at AND r.id = j.id
      FOR UPDATE;
    END IF;
    SELECT x.state, x.claim_at INTO locked FROM leasehold.jobs x WHERE x.id = j.id FOR UPDATE;
    IF NOT FOUND OR locked.state IS DISTINCT FROM 'ready' OR locked.claim_at IS DISTINCT FROM j.claim_at THEN
      CONTINUE; -- claimed, cancelled or moved meanwhile: read it again (the key row stays locked)
    END IF;
    IF p_mode = 'replace' THEN
      next_run := coalesce(p_run_at, clock_timestamp() + coalesce(p_delay, interval '0'));
      UPDATE leasehold.jobs x SET payload = p_payload, run_at = next_run, claim_at = next_run - (x.run_at - x.claim_at),
                                  updated_at = statement_timestamp()
      WHERE x.id = j.id;
      UPDATE leasehold.unique_keys u SET replaced = u.replaced + 1 WHERE u.key = p_key;
    ELSE
      -- The clock now, not the statement's start: a call that waited on the key's lock behind
      -- later ones must not move the run time back (and never earlier than it already is).
      next_run := greatest(j.run_at, clock_timestamp() + p_debounce);
      UPDATE leasehold.jobs x SET run_at = next_run, claim_at = next_run - (x.run_at - x.claim_at),
                                  updated_at = statement_timestamp()
      WHERE x.id = j.id;
      UPDATE leasehold.unique_keys u SET debounced = u.debounced + 1 WHERE u.key = p_key;
    END IF;
    job_id := j.id; created := false; action := CASE p_mode WHEN 'replace' THEN 'replaced' ELSE 'debounced' END;
    RETURN NEXT; RETURN;
  END LOOP;
  RAISE EXCEPTION USING ERRCODE = 'serialization_failure',
    MESSAGE = format('leasehold: uniqueness key %L kept changing holder; try again.', left(p_key, 140));
END
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."take_unique_key"(text, text[], text, uuid, text, jsonb, timestamptz, interval, interval) FROM PUBLIC;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."unique_state"(text, text, timestamptz) FROM PUBLIC;
--> statement-breakpoint
-- dead | cancelled -> ready (0011's body) with the uniqueness key: a retried job that took a key
-- takes it back, unless another job holds it now, waiting or running; that job is not retried
-- (a 'held' row names it, and the key). The keys' rows are locked first, in a statement of
-- their own, so the holders are read after any enqueue of those keys committed.
CREATE OR REPLACE FUNCTION "leasehold"."operator_retry"(p_action text, p_actor text, p_reason text, p_ids uuid[])
RETURNS TABLE (row_type text, id text, state text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
#variable_conflict use_column
BEGIN
  IF p_ids IS NULL THEN p_ids := ARRAY[]::uuid[]; END IF;
  PERFORM leasehold.check_operator_input(p_action, ARRAY['retry', 'bulk_retry'], p_actor, p_reason,
                                         CASE WHEN cardinality(p_ids) = 0 THEN ARRAY[NULL]::uuid[] ELSE p_ids END);
  PERFORM 1 FROM leasehold.unique_keys u
  WHERE u.key IN (SELECT j.options->>'uniqueKey' FROM leasehold.jobs j
                  WHERE j.id = ANY(p_ids) AND j.options ? 'uniqueKey' AND j.state IN ('dead', 'cancelled'))
  ORDER BY u.key FOR UPDATE;
  RETURN QUERY
  WITH input AS (SELECT unnest(p_ids::uuid[]) AS id),
      held AS (
        SELECT j.id, u.key FROM leasehold.jobs j JOIN input i ON i.id = j.id
        JOIN leasehold.unique_keys u ON u.key = j.options->>'uniqueKey'
        JOIN leasehold.jobs h ON h.id = u.job_id
        WHERE j.options ? 'uniqueKey' AND j.state IN ('dead', 'cancelled') AND u.job_id <> j.id
          AND h.state IN ('ready', 'running')
      ),
      changed_retry AS (
        UPDATE leasehold.jobs j SET state = 'ready', run_at = statement_timestamp(), claim_at = statement_timestamp() - (j.run_at - j.claim_at),
               max_attempts = greatest(j.max_attempts, j.attempts - j.released + 1),
               expires_at = CASE WHEN j.expires_at IS NULL THEN NULL ELSE statement_timestamp() + (j.expires_at - j.created_at) END,
               finished_at = NULL, updated_at = statement_timestamp()
        FROM input i
        WHERE j.id = i.id AND j.state IN ('dead', 'cancelled') AND j.attempts - j.released < 1000
          AND j.id NOT IN (SELECT id FROM held)
        RETURNING j.id, j.queue, j.options->>'uniqueKey' AS unique_key
      ),
      rekeyed AS (
        INSERT INTO leasehold.unique_keys AS u (key, job_id, queue, taken_at)
        SELECT c.unique_key, c.id, c.queue, statement_timestamp() FROM changed_retry c WHERE c.unique_key IS NOT NULL
        ON CONFLICT ON CONSTRAINT unique_keys_pkey DO UPDATE SET job_id = excluded.job_id, queue = excluded.queue, taken_at = excluded.taken_at
        RETURNING u.key
      ),
      changed AS (SELECT id, queue FROM changed_retry),
      audit AS (
        INSERT INTO leasehold.audit_log (actor, action, job_ids, queue, requested, affected, outcome, detail)
        SELECT p_actor, p_action, p_ids::uuid[],
               (SELECT CASE WHEN count(DISTINCT queue) = 1 THEN min(queue) END FROM changed),
               cardinality(p_ids)::int, (SELECT count(*) FROM changed)::int,
               CASE (SELECT count(*) FROM changed) WHEN 0 THEN 'refused' WHEN cardinality(p_ids)::int THEN 'applied' ELSE 'partial' END,
               jsonb_build_object('reason', p_reason::text,
                                  'applied', coalesce((SELECT jsonb_agg(id) FROM changed), '[]'::jsonb),
                                  'rekeyed', (SELECT count(*) FROM rekeyed))
        RETURNING id
      )
      SELECT 'audit'::text AS row_type, (SELECT id FROM audit)::text AS id, NULL::text AS state
      UNION ALL SELECT 'changed', id::text, NULL FROM changed
      UNION ALL SELECT 'held', h.id::text, h.key FROM held h
      UNION ALL SELECT 'seen', j.id::text, j.state FROM leasehold.jobs j JOIN input i ON i.id = j.id;
END
$$;
--> statement-breakpoint
-- leasehold.enqueue(…) with uniqueness and tags (0020's body otherwise): made beside the old one
-- (an argument cannot be added in place), given to whoever could execute the old one, which is
-- then dropped, all in this migration's transaction.
CREATE FUNCTION "leasehold"."enqueue"(
  kind text,
  payload jsonb DEFAULT '{}'::jsonb,
  queue text DEFAULT 'default',
  run_at timestamptz DEFAULT NULL,
  delay interval DEFAULT NULL,
  priority integer DEFAULT 0,
  max_attempts integer DEFAULT 10,
  idempotency_key text DEFAULT NULL,
  dedupe_window interval DEFAULT interval '30 days',
  trace_id text DEFAULT NULL,
  max_age interval DEFAULT NULL,
  kind_version integer DEFAULT 1,
  job_id uuid DEFAULT NULL,
  notify boolean DEFAULT true,
  group_key text DEFAULT NULL,
  unique_key text DEFAULT NULL,
  unique_while text[] DEFAULT ARRAY['ready', 'scheduled', 'retrying', 'running'],
  on_conflict text DEFAULT 'keep',
  debounce interval DEFAULT NULL,
  tags text[] DEFAULT NULL
) RETURNS TABLE (id uuid, created boolean)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
  -- The TypeScript NAME_PATTERN (db/queue/validate.ts).
  name_pattern CONSTANT text := '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$';
  names CONSTANT text := '1 to 128 of A-Z a-z 0-9 _ . : - (starting with a letter or digit)';
  ten_years CONSTANT interval := interval '3650 days';
  problems text[] := ARRAY[]::text[];
  payload_bytes bigint;
  micros bigint;
  fraction integer;
  bytes bytea;
  new_id uuid;
  key_owner uuid;
  written integer;
  answer record;
BEGIN
  -- Input: every problem named at once, as a sentence; nothing is written.
  IF enqueue.kind IS NULL THEN
    problems := array_append(problems, 'kind is required');
  ELSIF enqueue.kind !~ name_pattern THEN
    problems := array_append(problems, format('kind must be %s, not %L', names, left(enqueue.kind, 140)));
  END IF;
  IF enqueue.queue IS NULL OR enqueue.queue !~ name_pattern THEN
    problems := array_append(problems, format('queue must be %s, not %L', names, left(enqueue.queue, 140)));
  END IF;
  IF enqueue.payload IS NULL THEN
    problems := array_append(problems, 'payload must be a JSON value, not SQL NULL (pass ''{}'' for none)');
  ELSE
    payload_bytes := octet_length(enqueue.payload::text);
    IF payload_bytes > 262144 THEN
      problems := array_append(problems, format('payload is %s bytes of JSON, more than the 262144 allowed (store large data elsewhere and enqueue a reference)', payload_bytes));
    -- The TypeScript MAX_PAYLOAD_DEPTH (db/schema.ts): the payload is level 0, a value at 101 is too deep.
    ELSIF jsonb_path_exists(enqueue.payload, 'strict $.**{101}') THEN
      problems := array_append(problems, 'payload is nested deeper than 100 levels (flatten it, or store it elsewhere and enqueue a reference)');
    END IF;
  END IF;
  IF enqueue.kind_version IS NULL OR enqueue.kind_version NOT BETWEEN 1 AND 1000000 THEN
    problems := array_append(problems, format('kind_version must be an integer from 1 to 1000000, not %s', coalesce(enqueue.kind_version::text, 'NULL')));
  END IF;
  IF enqueue.priority IS NULL OR enqueue.priority NOT BETWEEN 0 AND 100 THEN
    problems := array_append(problems, format('priority must be an integer from 0 (the default, lowest) to 100, not %s', coalesce(enqueue.priority::text, 'NULL')));
  END IF;
  IF enqueue.run_at IS NOT NULL AND enqueue.delay IS NOT NULL THEN
    problems := array_append(problems, 'give run_at or delay, not both');
  END IF;
  IF enqueue.run_at IS NOT NULL AND NOT isfinite(enqueue.run_at) THEN
    problems := array_append(problems, format('run_at must be a finite time, not %s', enqueue.run_at));
  END IF;
  IF enqueue.delay IS NOT NULL AND (enqueue.delay < interval '0' OR enqueue.delay > ten_years) THEN
    problems := array_append(problems, format('delay must be from 0 to 3650 days, not %s', enqueue.delay));
  END IF;
  IF enqueue.max_attempts IS NULL OR enqueue.max_attempts NOT BETWEEN 1 AND 1000 THEN
    problems := array_append(problems, format('max_attempts must be an integer from 1 to 1000, not %s', coalesce(enqueue.max_attempts::text, 'NULL')));
  END IF;
  IF enqueue.max_age IS NOT NULL AND (enqueue.max_age <= interval '0' OR enqueue.max_age > ten_years) THEN
    problems := array_append(problems, format('max_age must be more than 0 and at most 3650 days, not %s', enqueue.max_age));
  END IF;
  IF enqueue.idempotency_key IS NOT NULL AND length(enqueue.idempotency_key) NOT BETWEEN 1 AND 512 THEN
    problems := array_append(problems, format('idempotency_key must be 1 to 512 characters, not %s', length(enqueue.idempotency_key)));
  END IF;
  IF enqueue.dedupe_window IS NULL OR enqueue.dedupe_window <= interval '0' OR enqueue.dedupe_window > ten_years THEN
    problems := array_append(problems, format('dedupe_window must be more than 0 and at most 3650 days, not %s', coalesce(enqueue.dedupe_window::text, 'NULL')));
  END IF;
  IF enqueue.trace_id IS NOT NULL AND length(enqueue.trace_id) NOT BETWEEN 1 AND 128 THEN
    problems := array_append(problems, format('trace_id must be 1 to 128 characters, not %s', length(enqueue.trace_id)));
  END IF;
  -- The TypeScript groupKeySchema (db/queue/validate.ts); text cannot hold NUL.
  IF enqueue.group_key IS NOT NULL AND length(enqueue.group_key) NOT BETWEEN 1 AND 256 THEN
    problems := array_append(problems, format('group_key must be 1 to 256 characters, not %s', length(enqueue.group_key)));
  END IF;
  -- Uniqueness and tags (drizzle/0023): the TypeScript uniqueSchema and tagsSchema
  -- (db/queue/enqueue-spec.ts); take_unique_key checks the rest of the uniqueness arguments.
  IF enqueue.unique_key IS NOT NULL AND length(enqueue.unique_key) NOT BETWEEN 1 AND 512 THEN
    problems := array_append(problems, format('unique_key must be 1 to 512 characters, not %s', length(enqueue.unique_key)));
  END IF;
  IF enqueue.unique_key IS NOT NULL AND enqueue.idempotency_key IS NOT NULL THEN
    problems := array_append(problems, 'give idempotency_key or unique_key, not both');
  END IF;
  IF enqueue.unique_key IS NOT NULL AND (enqueue.unique_while IS NULL OR cardinality(enqueue.unique_while) = 0
     OR array_position(enqueue.unique_while, NULL) IS NOT NULL
     OR NOT enqueue.unique_while <@ ARRAY['ready', 'scheduled', 'retrying', 'running']) THEN
    problems := array_append(problems, format('unique_while must list some of ready, scheduled, retrying, running, not %s', coalesce(enqueue.unique_while::text, 'NULL')));
  END IF;
  IF enqueue.unique_key IS NOT NULL AND (enqueue.on_conflict IS NULL OR enqueue.on_conflict NOT IN ('keep', 'replace', 'debounce')) THEN
    problems := array_append(problems, format('on_conflict must be keep, replace or debounce, not %s', coalesce(enqueue.on_conflict, 'NULL')));
  END IF;
  IF enqueue.unique_key IS NOT NULL AND enqueue.on_conflict = 'debounce' THEN
    IF enqueue.debounce IS NULL OR enqueue.debounce <= interval '0' OR enqueue.debounce > ten_years THEN
      problems := array_append(problems, format('debounce must be more than 0 and at most 3650 days, not %s', coalesce(enqueue.debounce::text, 'NULL')));
    END IF;
    IF enqueue.run_at IS NOT NULL OR enqueue.delay IS NOT NULL THEN
      problems := array_append(problems, 'on_conflict debounce sets the run time: give no run_at or delay');
    END IF;
  END IF;
  IF enqueue.debounce IS NOT NULL AND (enqueue.unique_key IS NULL OR enqueue.on_conflict IS DISTINCT FROM 'debounce') THEN
    problems := array_append(problems, 'debounce needs a unique_key and on_conflict debounce');
  END IF;
  IF enqueue.tags IS NOT NULL AND (array_ndims(enqueue.tags) IS DISTINCT FROM 1 OR cardinality(enqueue.tags) NOT BETWEEN 1 AND 16
     OR array_position(enqueue.tags, NULL) IS NOT NULL
     OR EXISTS (SELECT 1 FROM unnest(enqueue.tags) t WHERE length(t) NOT BETWEEN 1 AND 64 OR t ~ '[[:cntrl:]]')
     OR (SELECT count(DISTINCT t) FROM unnest(enqueue.tags) t) <> cardinality(enqueue.tags)) THEN
    problems := array_append(problems, 'tags must be 1 to 16 different strings of 1 to 64 characters without control characters (pass NULL for none)');
  END IF;
  IF enqueue.notify IS NULL THEN
    problems := array_append(problems, 'notify must be true or false, not NULL');
  END IF;
  IF cardinality(problems) > 0 THEN
    RAISE EXCEPTION USING
      ERRCODE = 'invalid_parameter_value',
      MESSAGE = format('leasehold.enqueue refused the job: %s.', array_to_string(problems, '; ')),
      HINT = 'Nothing was written. See docs/contract.md, Enqueue, for each argument''s rule.';
  END IF;

  IF enqueue.job_id IS NOT NULL THEN
    new_id := enqueue.job_id;
  ELSE
    micros := (extract(epoch FROM clock_timestamp()) * 1000000)::bigint;
    fraction := ((micros % 1000) * 4096 / 1000)::integer;
    bytes := uuid_send(gen_random_uuid()); -- version 4: its variant bits (10) are already right
    bytes := overlay(bytes PLACING substring(int8send(micros / 1000) FROM 3) FROM 1 FOR 6);
    bytes := set_byte(bytes, 6, 112 | (fraction >> 8)); -- version 7, then the fraction's high 4 bits
    bytes := set_byte(bytes, 7, fraction & 255);
    new_id := encode(bytes, 'hex')::uuid;
  END IF;

  -- A uniqueness key (drizzle/0023): the holder answers the call, or the key is this job's.
  IF enqueue.unique_key IS NOT NULL THEN
    SELECT t.job_id, t.created INTO answer
    FROM leasehold.take_unique_key(enqueue.unique_key, enqueue.unique_while, enqueue.on_conflict, new_id, enqueue.queue,
                                   enqueue.payload, enqueue.run_at, enqueue.delay, enqueue.debounce) t;
    IF NOT answer.created THEN
      id := answer.job_id;
      created := false;
      RETURN NEXT;
      RETURN;
    END IF;
  END IF;

  -- Three tries only for the rare race where a repeat's key was purged between statements.
  FOR try_number IN 1..3 LOOP
    IF enqueue.idempotency_key IS NOT NULL THEN
      -- A concurrent enqueue of the key waits here on the key's unique index: one inserts,
      -- the others return its job; if the first rolls back, a waiter inserts.
      INSERT INTO leasehold.dedupe_keys (key, job_id, queue, expires_at)
      VALUES (enqueue.idempotency_key, new_id, enqueue.queue, statement_timestamp() + enqueue.dedupe_window)
      ON CONFLICT ON CONSTRAINT dedupe_keys_pkey DO NOTHING;
      GET DIAGNOSTICS written = ROW_COUNT;
      IF written = 0 THEN
        -- A new snapshot (READ COMMITTED): it sees the key that committed after this
        -- statement began.
        SELECT d.job_id INTO key_owner FROM leasehold.dedupe_keys d WHERE d.key = enqueue.idempotency_key;
        IF FOUND THEN
          id := key_owner;
          created := false;
          RETURN NEXT;
          RETURN;
        END IF;
        CONTINUE;
      END IF;
    END IF;
    -- claim_at is the aging sort key: run_at moved earlier by priority × the queue's aging
    -- step (60 s for a queue without a row). The ready row comes from jobs_inserted_ready_rows.
    INSERT INTO leasehold.jobs (id, queue, kind, kind_version, payload, idempotency_key, priority, run_at,
                                claim_at, max_attempts, trace_id, expires_at, group_key, tags, options)
    SELECT new_id, enqueue.queue, enqueue.kind, enqueue.kind_version, enqueue.payload, enqueue.idempotency_key,
           enqueue.priority, s.run_at,
           s.run_at - make_interval(secs => enqueue.priority * coalesce(q.aging_seconds, 60)),
           enqueue.max_attempts, enqueue.trace_id, statement_timestamp() + enqueue.max_age, enqueue.group_key,
           enqueue.tags, CASE WHEN enqueue.unique_key IS NULL THEN NULL ELSE jsonb_build_object('uniqueKey', enqueue.unique_key) END
    FROM (SELECT coalesce(enqueue.run_at, statement_timestamp() + coalesce(enqueue.delay, enqueue.debounce, interval '0')) AS run_at) s
    LEFT JOIN leasehold.queues q ON q.name = enqueue.queue
    ON CONFLICT ON CONSTRAINT jobs_pkey DO NOTHING;
    GET DIAGNOSTICS written = ROW_COUNT;
    IF written = 0 THEN
      -- Raising also undoes the key taken above: the call wrote nothing.
      RAISE EXCEPTION USING
        ERRCODE = 'unique_violation',
        MESSAGE = format('leasehold.enqueue refused the job: a job with id %s already exists (ids must be unique; use idempotency_key to deduplicate).', new_id),
        HINT = 'Nothing was written.';
    END IF;
    -- Above half the NOTIFY queue in use, no wake-up: workers poll (db/queue/wake.ts).
    -- A grouped job's wake-up names its queue and ' grouped' (db/queue/groups.ts).
    IF enqueue.notify AND pg_catalog.pg_notification_queue_usage() < 0.5 THEN
      PERFORM pg_notify('leasehold_jobs', enqueue.queue || CASE WHEN enqueue.group_key IS NULL THEN '' ELSE ' grouped' END);
    END IF;
    id := new_id;
    created := true;
    RETURN NEXT;
    RETURN;
  END LOOP;
  RAISE EXCEPTION USING
    ERRCODE = 'serialization_failure',
    MESSAGE = format('leasehold.enqueue: idempotency key %L kept changing owner; try again.', left(enqueue.idempotency_key, 140));
END
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."enqueue"(text, jsonb, text, timestamptz, interval, integer, integer, text, interval, text, interval, integer, uuid, boolean, text, text, text[], text, interval, text[]) FROM PUBLIC;
--> statement-breakpoint
DO $$
DECLARE
  who text;
BEGIN
  FOR who IN
    SELECT a.grantee::regrole::text
    FROM pg_catalog.pg_proc p CROSS JOIN LATERAL aclexplode(p.proacl) a
    WHERE p.oid = '"leasehold"."enqueue"(text, jsonb, text, timestamptz, interval, integer, integer, text, interval, text, interval, integer, uuid, boolean, text)'::regprocedure
      AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner
  LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION "leasehold"."enqueue"(text, jsonb, text, timestamptz, interval, integer, integer, text, interval, text, interval, integer, uuid, boolean, text, text, text[], text, interval, text[]) TO %s', who);
  END LOOP;
END
$$;
--> statement-breakpoint
DROP FUNCTION "leasehold"."enqueue"(text, jsonb, text, timestamptz, interval, integer, integer, text, interval, text, interval, integer, uuid, boolean, text);
