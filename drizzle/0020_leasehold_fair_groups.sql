-- leasehold:schema-version 15
-- leasehold:compatible-from 1
-- Fair groups (issue 37; docs/flow-control.md, "Fair groups"; db/queue/transitions/claim-grouped.ts).
-- A job may name a group (`jobs.group_key`, a tenant, an account): its ready row then goes to
-- `grouped_ready_jobs` instead of `ready_jobs`, and `ready_groups` keeps, per queue, kind
-- version and group, whose turn is next. The grouped claim serves the groups in turns, least
-- recently served first, so one group's flood does not hold another's job back.
-- Expanding: code before 15 never reads the new tables, so a worker of an earlier release never
-- takes a grouped job (it could not keep the turns); ungrouped jobs are stored, claimed and
-- settled as before, by every release. leasehold.enqueue(…) gains `group_key` (a new last
-- argument with a default: every earlier call still resolves; the new function is granted to
-- whoever could execute the old one, so SQL producers keep working before db/roles.sql runs).
CREATE TABLE "leasehold"."grouped_ready_jobs" (
	"queue" text NOT NULL,
	"kind" text NOT NULL,
	"kind_version" integer NOT NULL,
	"group_key" text NOT NULL,
	"claim_at" timestamp with time zone NOT NULL,
	"run_at" timestamp with time zone NOT NULL,
	"id" uuid NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "leasehold"."ready_groups" (
	"queue" text NOT NULL,
	"kind" text NOT NULL,
	"kind_version" integer NOT NULL,
	"group_key" text NOT NULL,
	"turn_at" timestamp with time zone NOT NULL,
	"idle_since" timestamp with time zone,
	CONSTRAINT "ready_groups_pkey" PRIMARY KEY("queue","kind","kind_version","group_key")
);
--> statement-breakpoint
ALTER TABLE "leasehold"."jobs" ADD COLUMN "group_key" text;--> statement-breakpoint
CREATE INDEX "grouped_ready_jobs_claim_idx" ON "leasehold"."grouped_ready_jobs" USING btree ("queue","kind","kind_version","group_key","claim_at","id");--> statement-breakpoint
CREATE INDEX "ready_groups_turn_idx" ON "leasehold"."ready_groups" USING btree ("queue","kind","kind_version","turn_at","group_key");--> statement-breakpoint
CREATE INDEX "ready_groups_idle_idx" ON "leasehold"."ready_groups" USING btree ("idle_since") WHERE idle_since IS NOT NULL;
--> statement-breakpoint
-- Every ready row, grouped or not, for the readers that count or list ready jobs (the
-- dashboard, limits' waiting counts, the testing kit): the claims read their own table.
CREATE VIEW "leasehold"."ready_rows" AS
  SELECT r.queue, r.claim_at, r.run_at, r.id, r.kind, r.attempts, r.kind_version, NULL::text AS group_key
  FROM "leasehold"."ready_jobs" r
  UNION ALL
  SELECT g.queue, g.claim_at, g.run_at, g.id, g.kind, g.attempts, g.kind_version, g.group_key
  FROM "leasehold"."grouped_ready_jobs" g;
--> statement-breakpoint
-- A group key is 1 to 256 characters (the TypeScript groupKeySchema), written once. A trigger,
-- not a CHECK: PostgreSQL evaluates every CHECK of a table on every UPDATE of a row, the claim's
-- and the acknowledgement's too (drizzle/0017). Its WHEN clause is the check; the function runs
-- for a row that fails it.
CREATE FUNCTION "leasehold"."jobs_group_key_check"() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND NEW.group_key IS DISTINCT FROM OLD.group_key THEN
    RAISE EXCEPTION 'leasehold: a job''s group_key is written once, at enqueue (job %)', OLD.id
      USING ERRCODE = 'check_violation', CONSTRAINT = 'jobs_group_key_check', TABLE = 'jobs', SCHEMA = 'leasehold';
  END IF;
  RAISE EXCEPTION 'new row for relation "jobs" violates check constraint "jobs_group_key_check"'
    USING ERRCODE = 'check_violation', CONSTRAINT = 'jobs_group_key_check', TABLE = 'jobs', SCHEMA = 'leasehold',
          DETAIL = format('group_key must be 1 to 256 characters, not %s', length(NEW.group_key));
END
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."jobs_group_key_check"() FROM PUBLIC;
--> statement-breakpoint
CREATE TRIGGER "jobs_group_key_check" BEFORE INSERT ON "leasehold"."jobs"
  FOR EACH ROW WHEN (NEW.group_key IS NOT NULL AND length(NEW.group_key) NOT BETWEEN 1 AND 256)
  EXECUTE FUNCTION "leasehold"."jobs_group_key_check"();
--> statement-breakpoint
CREATE TRIGGER "jobs_group_key_changed" AFTER UPDATE OF group_key ON "leasehold"."jobs"
  FOR EACH ROW WHEN (NEW.group_key IS DISTINCT FROM OLD.group_key)
  EXECUTE FUNCTION "leasehold"."jobs_group_key_check"();
--> statement-breakpoint
-- The groups of new ready rows, each (queue, kind version, group) once with its earliest run
-- time: each gets its ready_groups row when missing (its first turn at that run time), and is
-- then held FOR KEY SHARE until the caller commits, so the maintenance sweep, which deletes a
-- group's row only after locking it FOR UPDATE and finding no ready job with a snapshot taken
-- after the lock, cannot delete it under a job not yet committed. A claim's update of the row
-- (FOR NO KEY UPDATE) does not wait for that lock, nor it for the claim. When the row's turn is
-- later than the job's run time (the group was idle, or held only later jobs), it is brought
-- down to it. Rows in key order, so two callers holding overlapping groups do not deadlock.
CREATE FUNCTION "leasehold"."hold_ready_groups"(p_queue text[], p_kind text[], p_version int[], p_group text[], p_run_at timestamptz[])
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
  held int;
BEGIN
  FOR try_number IN 1..10 LOOP
    INSERT INTO leasehold.ready_groups (queue, kind, kind_version, group_key, turn_at)
    SELECT * FROM unnest(p_queue, p_kind, p_version, p_group, p_run_at)
    ORDER BY 1, 2, 3, 4
    ON CONFLICT ON CONSTRAINT ready_groups_pkey DO NOTHING;
    SELECT count(*) INTO held FROM (
      SELECT 1 FROM leasehold.ready_groups g
      JOIN unnest(p_queue, p_kind, p_version, p_group) AS w(queue, kind, kind_version, group_key)
        ON g.queue = w.queue AND g.kind = w.kind AND g.kind_version = w.kind_version AND g.group_key = w.group_key
      ORDER BY g.queue, g.kind, g.kind_version, g.group_key
      FOR KEY SHARE OF g
    ) locked;
    -- A row the sweep deleted between the two statements: insert it again.
    IF held = cardinality(p_group) THEN
      UPDATE leasehold.ready_groups g SET turn_at = w.run_at
      FROM unnest(p_queue, p_kind, p_version, p_group, p_run_at) AS w(queue, kind, kind_version, group_key, run_at)
      WHERE g.queue = w.queue AND g.kind = w.kind AND g.kind_version = w.kind_version AND g.group_key = w.group_key
        AND g.turn_at > w.run_at;
      RETURN;
    END IF;
  END LOOP;
  RAISE EXCEPTION 'leasehold: the ready groups of this enqueue kept being removed; try again'
    USING ERRCODE = 'serialization_failure';
END
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."hold_ready_groups"(text[], text[], int[], text[], timestamptz[]) FROM PUBLIC;
--> statement-breakpoint
-- The ready-row triggers (0003's and 0016's bodies), now by group: a job without one keeps its
-- ready_jobs row exactly as before; a grouped job's row goes to grouped_ready_jobs and its
-- group is held (hold_ready_groups). CREATE OR REPLACE keeps the owner, SECURITY DEFINER, the
-- grants and the triggers.
CREATE OR REPLACE FUNCTION "leasehold"."jobs_inserted_ready_rows"() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
DECLARE
  q text[]; k text[]; v int[]; g text[]; t timestamptz[];
BEGIN
  INSERT INTO leasehold.ready_jobs (queue, claim_at, run_at, id, kind, attempts, kind_version)
  SELECT n.queue, n.claim_at, n.run_at, n.id, n.kind, n.attempts, n.kind_version FROM new_jobs n
  WHERE n.state = 'ready' AND n.group_key IS NULL;
  INSERT INTO leasehold.grouped_ready_jobs (queue, kind, kind_version, group_key, claim_at, run_at, id, attempts)
  SELECT n.queue, n.kind, n.kind_version, n.group_key, n.claim_at, n.run_at, n.id, n.attempts FROM new_jobs n
  WHERE n.state = 'ready' AND n.group_key IS NOT NULL;
  IF FOUND THEN
    SELECT array_agg(s.queue), array_agg(s.kind), array_agg(s.kind_version), array_agg(s.group_key), array_agg(s.run_at)
    INTO q, k, v, g, t
    FROM (SELECT n.queue, n.kind, n.kind_version, n.group_key, min(n.run_at) AS run_at FROM new_jobs n
          WHERE n.state = 'ready' AND n.group_key IS NOT NULL GROUP BY 1, 2, 3, 4) s;
    PERFORM leasehold.hold_ready_groups(q, k, v, g, t);
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION "leasehold"."jobs_ready_row"() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
  IF OLD.state = 'ready' THEN
    IF OLD.group_key IS NULL THEN
      DELETE FROM leasehold.ready_jobs
      WHERE kind = OLD.kind AND kind_version = OLD.kind_version
        AND queue = OLD.queue AND claim_at = OLD.claim_at AND id = OLD.id;
    ELSE
      DELETE FROM leasehold.grouped_ready_jobs
      WHERE queue = OLD.queue AND kind = OLD.kind AND kind_version = OLD.kind_version
        AND group_key = OLD.group_key AND claim_at = OLD.claim_at AND id = OLD.id;
    END IF;
  END IF;
  IF NEW.state = 'ready' THEN
    IF NEW.group_key IS NULL THEN
      INSERT INTO leasehold.ready_jobs (queue, claim_at, run_at, id, kind, attempts, kind_version)
      VALUES (NEW.queue, NEW.claim_at, NEW.run_at, NEW.id, NEW.kind, NEW.attempts, NEW.kind_version);
    ELSE
      INSERT INTO leasehold.grouped_ready_jobs (queue, kind, kind_version, group_key, claim_at, run_at, id, attempts)
      VALUES (NEW.queue, NEW.kind, NEW.kind_version, NEW.group_key, NEW.claim_at, NEW.run_at, NEW.id, NEW.attempts);
      PERFORM leasehold.hold_ready_groups(ARRAY[NEW.queue], ARRAY[NEW.kind], ARRAY[NEW.kind_version],
                                          ARRAY[NEW.group_key], ARRAY[NEW.run_at]);
    END IF;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
-- leasehold.enqueue(…) with `group_key` (0011's body otherwise): made beside the old one (an
-- argument cannot be added in place), given to whoever could execute the old one, which is then
-- dropped, all in this migration's transaction, so no caller sees both or neither.
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
  group_key text DEFAULT NULL
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
                                claim_at, max_attempts, trace_id, expires_at, group_key)
    SELECT new_id, enqueue.queue, enqueue.kind, enqueue.kind_version, enqueue.payload, enqueue.idempotency_key,
           enqueue.priority, s.run_at,
           s.run_at - make_interval(secs => enqueue.priority * coalesce(q.aging_seconds, 60)),
           enqueue.max_attempts, enqueue.trace_id, statement_timestamp() + enqueue.max_age, enqueue.group_key
    FROM (SELECT coalesce(enqueue.run_at, statement_timestamp() + coalesce(enqueue.delay, interval '0')) AS run_at) s
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
REVOKE ALL ON FUNCTION "leasehold"."enqueue"(text, jsonb, text, timestamptz, interval, integer, integer, text, interval, text, interval, integer, uuid, boolean, text) FROM PUBLIC;
--> statement-breakpoint
DO $$
DECLARE
  who text;
BEGIN
  FOR who IN
    SELECT a.grantee::regrole::text
    FROM pg_catalog.pg_proc p CROSS JOIN LATERAL aclexplode(p.proacl) a
    WHERE p.oid = '"leasehold"."enqueue"(text, jsonb, text, timestamptz, interval, integer, integer, text, interval, text, interval, integer, uuid, boolean)'::regprocedure
      AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner
  LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION "leasehold"."enqueue"(text, jsonb, text, timestamptz, interval, integer, integer, text, interval, text, interval, integer, uuid, boolean, text) TO %s', who);
  END LOOP;
END
$$;
--> statement-breakpoint
DROP FUNCTION "leasehold"."enqueue"(text, jsonb, text, timestamptz, interval, integer, integer, text, interval, text, interval, integer, uuid, boolean);
