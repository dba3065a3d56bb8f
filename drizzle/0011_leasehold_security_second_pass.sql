-- leasehold:schema-version 9
-- leasehold:compatible-from 1
-- Security, second pass (issue 33). Expanding: code of versions 1 to 8 keeps running on it
-- (nothing it reads or writes changed), except as db/roles.sql then takes grants away
-- (docs/operations.md, Upgrading to schema version 9).
--
-- * maintenance_locks: one row per maintenance task, held FOR UPDATE SKIP LOCKED by the
--   round that runs it (db/queue/maintenance.ts); only the worker role may lock it, so a
--   producer's or the dashboard's login can no longer stop the reaper with an advisory lock.
-- * sign_in_throttle.audit_minute/audited/unaudited and leasehold.record_sign_in(…): sign-in
--   audit rows capped per client address and minute and for all addresses together, the rest
--   counted and summed up in one row per minute (db/sign-in.ts).
-- * leasehold.remove_old_audit(…): the worker's retention removes audit rows past their age
--   (never younger than 90 days) through it, without DELETE on the table.
-- * the dashboard's actions as SECURITY DEFINER functions, one per action, each with its
--   audit row (operator_retry, operator_cancel, operator_set_paused, add_redacted_path,
--   remove_added_redacted_path, record_payload_reveal, raise_session_version), so that
--   db/roles.sql can take the dashboard's write grants away (a BREAKING step for a dashboard
--   of the previous release: docs/operations.md gives the order).
-- * leasehold.enqueue(…) refuses a payload nested deeper than 100 levels, as the TypeScript
--   enqueue does (MAX_PAYLOAD_DEPTH); otherwise the same signature and body as 0007 (CREATE OR
--   REPLACE keeps the owner and the grants).
CREATE TABLE "leasehold"."maintenance_locks" (
	"task" text PRIMARY KEY NOT NULL,
	CONSTRAINT "maintenance_locks_task_check" CHECK (length(task) BETWEEN 1 AND 200)
);
--> statement-breakpoint
ALTER TABLE "leasehold"."sign_in_throttle" ADD COLUMN "audit_minute" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "leasehold"."sign_in_throttle" ADD COLUMN "audited" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "leasehold"."sign_in_throttle" ADD COLUMN "unaudited" integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
INSERT INTO "leasehold"."maintenance_locks" (task) VALUES ('reaper'), ('unknown kinds'), ('retention') ON CONFLICT DO NOTHING;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION "leasehold"."enqueue"(
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
  notify boolean DEFAULT true
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
                                claim_at, max_attempts, trace_id, expires_at)
    SELECT new_id, enqueue.queue, enqueue.kind, enqueue.kind_version, enqueue.payload, enqueue.idempotency_key,
           enqueue.priority, s.run_at,
           s.run_at - make_interval(secs => enqueue.priority * coalesce(q.aging_seconds, 60)),
           enqueue.max_attempts, enqueue.trace_id, statement_timestamp() + enqueue.max_age
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
    IF enqueue.notify AND pg_catalog.pg_notification_queue_usage() < 0.5 THEN
      PERFORM pg_notify('leasehold_jobs', enqueue.queue);
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
-- One sign-in's audit row, unless the caps for this minute are reached: PER_CLIENT rows per
-- client address (whatever accounts it names) and ALL_CLIENTS rows for every address together;
-- past either, a failed, throttled or refused attempt is only counted (a success is always
-- written). The first call in a later minute writes one summary
-- row for the minute before with how many were left out (action sign_in, outcome not_audited).
-- The counts live on the sign_in_throttle rows of account 'AUDIT' (upper case, never an account
-- as counted); audit rows are only ever inserted. Returns whether this attempt got its row.
CREATE FUNCTION "leasehold"."record_sign_in"(
  actor text,
  outcome text,
  via text,
  client text,
  retry_after integer DEFAULT NULL
) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
#variable_conflict use_column
DECLARE
  per_client CONSTANT integer := 30;
  all_clients CONSTANT integer := 120;
  -- now(), not statement_timestamp(): audit_log.at defaults to now(), and the two can straddle
  -- a minute's end (Parse and Execute are separate messages), which would date a row in a
  -- minute whose count it did not take.
  this_minute CONSTANT timestamptz := date_trunc('minute', now());
  who CONSTANT text := left(coalesce(nullif(record_sign_in.actor, ''), '-'), 254);
  address CONSTANT text := left(coalesce(record_sign_in.client, ''), 99);
  counted_minute timestamptz;
  all_audited integer;
  all_unaudited integer;
  mine integer;
BEGIN
  IF record_sign_in.outcome IS NULL OR record_sign_in.outcome NOT IN ('succeeded', 'failed', 'throttled', 'refused') THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = format('leasehold.record_sign_in: outcome must be succeeded, failed, throttled or refused, not %L', record_sign_in.outcome);
  END IF;
  IF record_sign_in.via IS NULL OR record_sign_in.via NOT IN ('credentials', 'oidc') THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = format('leasehold.record_sign_in: via must be credentials or oidc, not %L', record_sign_in.via);
  END IF;
  -- Every address together: one row, locked, so the counts below are exact.
  INSERT INTO leasehold.sign_in_throttle (account, client, audit_minute) VALUES ('AUDIT', '', this_minute)
  ON CONFLICT (account, client) DO NOTHING;
  SELECT t.audit_minute, t.audited, t.unaudited INTO counted_minute, all_audited, all_unaudited
  FROM leasehold.sign_in_throttle t WHERE t.account = 'AUDIT' AND t.client = '' FOR UPDATE;
  IF counted_minute IS NULL OR counted_minute < this_minute THEN
    IF all_unaudited > 0 THEN
      INSERT INTO leasehold.audit_log (actor, action, requested, affected, outcome, detail)
      VALUES ('-', 'sign_in', all_unaudited, 0, 'not_audited',
              jsonb_build_object('minute', counted_minute, 'not_audited', all_unaudited,
                                 'per_client_per_minute', per_client, 'all_clients_per_minute', all_clients));
    END IF;
    UPDATE leasehold.sign_in_throttle t SET audit_minute = this_minute, audited = 0, unaudited = 0,
           last_failure_at = statement_timestamp()
    WHERE t.account = 'AUDIT' AND t.client = '';
    all_audited := 0;
  ELSIF counted_minute > this_minute THEN
    -- A later minute's call took the counts while this one waited for the row: this attempt
    -- counts there, and writes no row dated in a minute whose counts are gone (a success still does).
    all_audited := all_clients;
  END IF;
  -- This address.
  INSERT INTO leasehold.sign_in_throttle AS t (account, client, audit_minute) VALUES ('AUDIT', '@' || address, this_minute)
  ON CONFLICT (account, client) DO UPDATE SET
    audited = CASE WHEN t.audit_minute IS NULL OR t.audit_minute < this_minute THEN 0 ELSE t.audited END,
    unaudited = CASE WHEN t.audit_minute IS NULL OR t.audit_minute < this_minute THEN 0 ELSE t.unaudited END,
    audit_minute = greatest(t.audit_minute, this_minute),
    last_failure_at = statement_timestamp()
  RETURNING t.audited INTO mine;
  -- A success is always audited (it takes the right password, so no anonymous client can
  -- flood with it); it still counts toward the caps.
  IF record_sign_in.outcome = 'succeeded' OR (mine < per_client AND all_audited < all_clients) THEN
    INSERT INTO leasehold.audit_log (actor, action, requested, affected, outcome, detail)
    VALUES (who, 'sign_in', 1, CASE WHEN record_sign_in.outcome = 'succeeded' THEN 1 ELSE 0 END, record_sign_in.outcome,
            jsonb_strip_nulls(jsonb_build_object('via', record_sign_in.via, 'client', record_sign_in.client,
                                                 'retry_after', record_sign_in.retry_after)));
    UPDATE leasehold.sign_in_throttle t SET audited = t.audited + 1
    WHERE t.account = 'AUDIT' AND t.client IN ('', '@' || address);
    RETURN true;
  END IF;
  UPDATE leasehold.sign_in_throttle t SET unaudited = t.unaudited + 1
  WHERE t.account = 'AUDIT' AND t.client IN ('', '@' || address);
  RETURN false;
END
$$;
--> statement-breakpoint
-- Audit retention (the worker's retention round, db/queue/retention.ts removeOldAudit): up to
-- `batch` audit rows older than `older_than`, oldest first; refuses to remove any row younger
-- than 90 days. Returns how many went.
CREATE FUNCTION "leasehold"."remove_old_audit"(
  older_than interval DEFAULT interval '400 days',
  batch integer DEFAULT 1000
) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
#variable_conflict use_column
DECLARE
  removed integer;
BEGIN
  IF remove_old_audit.older_than IS NULL OR remove_old_audit.older_than < interval '90 days' THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = format('leasehold.remove_old_audit refused: audit rows are kept at least 90 days, not %s', coalesce(remove_old_audit.older_than::text, 'NULL')),
      HINT = 'Nothing was removed.';
  END IF;
  IF remove_old_audit.batch IS NULL OR remove_old_audit.batch NOT BETWEEN 1 AND 100000 THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = format('leasehold.remove_old_audit refused: batch must be from 1 to 100000, not %s', coalesce(remove_old_audit.batch::text, 'NULL')),
      HINT = 'Nothing was removed.';
  END IF;
  DELETE FROM leasehold.audit_log a WHERE a.id = ANY(ARRAY(
    SELECT o.id FROM leasehold.audit_log o WHERE o.at < statement_timestamp() - remove_old_audit.older_than
    ORDER BY o.at LIMIT remove_old_audit.batch));
  GET DIAGNOSTICS removed = ROW_COUNT;
  RETURN removed;
END
$$;

--> statement-breakpoint
-- The dashboard's actions (docs/operations.md, Database roles): one SECURITY DEFINER function
-- per action, running as their owner leasehold_migrator with search_path = pg_catalog, each
-- making the same guarded change as the TypeScript statement it replaces (db/queue/operator.ts,
-- kinds.ts, db/queries/jobs.ts, db/users.ts) and writing its own audit row in that statement.
-- db/roles.sql then takes the dashboard's write grants away: it can act only through these,
-- so it cannot fake a claim, a finish, a ready row, an attempt or rollup row, lower a session
-- version or write an audit row of its own. The actor is the dashboard's word (its signed-in
-- user), as before.
--
-- Their input checks, as the TypeScript schemas make them (the dashboard checks first, so
-- these only refuse a caller that skipped it).
CREATE FUNCTION "leasehold"."check_operator_input"(
  p_action text, p_allowed text[], p_actor text, p_reason text, p_ids uuid[]
) RETURNS void
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog AS $$
DECLARE
  problems text[] := ARRAY[]::text[];
BEGIN
  IF p_action IS NULL OR NOT (p_action = ANY (p_allowed)) THEN
    problems := array_append(problems, format('action must be one of %s, not %L', array_to_string(p_allowed, ', '), p_action));
  END IF;
  IF p_actor IS NULL OR length(p_actor) NOT BETWEEN 1 AND 256 THEN
    problems := array_append(problems, 'actor must be 1 to 256 characters');
  END IF;
  IF p_reason IS NOT NULL AND length(p_reason) > 1000 THEN
    problems := array_append(problems, 'reason must be at most 1000 characters');
  END IF;
  IF p_ids IS NOT NULL AND (cardinality(p_ids) NOT BETWEEN 1 AND 1000 OR array_position(p_ids, NULL) IS NOT NULL
      OR (SELECT count(DISTINCT i) FROM unnest(p_ids) AS i) <> cardinality(p_ids)) THEN
    problems := array_append(problems, 'ids must be 1 to 1000 distinct job ids');
  END IF;
  IF cardinality(problems) > 0 THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = format('leasehold: the %s action was refused: %s.', coalesce(p_action, 'operator'), array_to_string(problems, '; ')),
      HINT = 'Nothing was written.';
  END IF;
END
$$;
--> statement-breakpoint
-- dead | cancelled -> ready (retryIfTerminal, retryManyIfTerminal; db/queue/transitions.ts EDGES).
CREATE FUNCTION "leasehold"."operator_retry"(p_action text, p_actor text, p_reason text, p_ids uuid[])
RETURNS TABLE (row_type text, id text, state text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
#variable_conflict use_column
BEGIN
  IF p_ids IS NULL THEN p_ids := ARRAY[]::uuid[]; END IF;
  PERFORM leasehold.check_operator_input(p_action, ARRAY['retry', 'bulk_retry'], p_actor, p_reason,
                                         CASE WHEN cardinality(p_ids) = 0 THEN ARRAY[NULL]::uuid[] ELSE p_ids END);
  RETURN QUERY
  WITH input AS (SELECT unnest(p_ids::uuid[]) AS id),
      changed_retry AS (
        UPDATE leasehold.jobs j SET state = 'ready', run_at = statement_timestamp(), claim_at = statement_timestamp() - (j.run_at - j.claim_at),
               max_attempts = greatest(j.max_attempts, j.attempts - j.released + 1),
               expires_at = CASE WHEN j.expires_at IS NULL THEN NULL ELSE statement_timestamp() + (j.expires_at - j.created_at) END,
               finished_at = NULL, updated_at = statement_timestamp()
        FROM input i
        WHERE j.id = i.id AND j.state IN ('dead', 'cancelled') AND j.attempts - j.released < 1000
        RETURNING j.id, j.queue
      ),
      changed AS (SELECT id, queue FROM changed_retry),
      audit AS (
        INSERT INTO leasehold.audit_log (actor, action, job_ids, queue, requested, affected, outcome, detail)
        SELECT p_actor, p_action, p_ids::uuid[],
               (SELECT CASE WHEN count(DISTINCT queue) = 1 THEN min(queue) END FROM changed),
               cardinality(p_ids)::int, (SELECT count(*) FROM changed)::int,
               CASE (SELECT count(*) FROM changed) WHEN 0 THEN 'refused' WHEN cardinality(p_ids)::int THEN 'applied' ELSE 'partial' END,
               jsonb_build_object('reason', p_reason::text,
                                  'applied', coalesce((SELECT jsonb_agg(id) FROM changed), '[]'::jsonb))
        RETURNING id
      )
      SELECT 'audit'::text AS row_type, (SELECT id FROM audit)::text AS id, NULL::text AS state
      UNION ALL SELECT 'changed', id::text, NULL FROM changed
      UNION ALL SELECT 'seen', j.id::text, j.state FROM leasehold.jobs j JOIN input i ON i.id = j.id;
END
$$;
--> statement-breakpoint
-- ready -> cancelled, running -> cancelled with the lease token the operator saw
-- (cancelIfUnchanged, cancelManyIfUnchanged; db/queue/transitions.ts EDGES).
CREATE FUNCTION "leasehold"."operator_cancel"(p_action text, p_actor text, p_reason text, p_ids uuid[], p_tokens uuid[])
RETURNS TABLE (row_type text, id text, state text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
#variable_conflict use_column
DECLARE
  message text;
BEGIN
  IF p_ids IS NULL THEN p_ids := ARRAY[]::uuid[]; END IF;
  PERFORM leasehold.check_operator_input(p_action, ARRAY['cancel', 'bulk_cancel'], p_actor, p_reason,
                                         CASE WHEN cardinality(p_ids) = 0 THEN ARRAY[NULL]::uuid[] ELSE p_ids END);
  IF p_tokens IS NULL THEN
    p_tokens := array_fill(NULL::uuid, ARRAY[cardinality(p_ids)]);
  ELSIF cardinality(p_tokens) <> cardinality(p_ids) THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = format('leasehold: the %s action was refused: %s lease tokens for %s jobs.', p_action, cardinality(p_tokens), cardinality(p_ids)),
      HINT = 'Nothing was written.';
  END IF;
  message := 'cancelled by ' || p_actor || CASE WHEN coalesce(p_reason, '') = '' THEN '' ELSE ': ' || p_reason END;
  RETURN QUERY
  WITH input AS (SELECT * FROM unnest(p_ids::uuid[], p_tokens::uuid[]) AS t(id, token)),
      ready_gone AS (
        DELETE FROM leasehold.ready_jobs r
        USING leasehold.jobs j, input i
        WHERE i.token IS NULL AND j.id = i.id AND j.state = 'ready'
          AND r.queue = j.queue AND r.claim_at = j.claim_at AND r.id = j.id
        RETURNING r.id
      ),
      changed_ready AS (
        UPDATE leasehold.jobs j SET state = 'cancelled', failure_class = 'cancelled', last_error = message,
                    lease_token = NULL, lease_until = NULL, finished_at = statement_timestamp(), updated_at = statement_timestamp()
        FROM input i
        WHERE j.id = i.id AND j.state = 'ready' AND i.token IS NULL
          AND (SELECT count(*) FROM ready_gone) >= 0
        RETURNING j.id, j.queue, j.kind, j.state, j.attempts
      ),
      settled AS (
        UPDATE leasehold.jobs j SET state = 'cancelled', failure_class = 'cancelled', last_error = message,
                    lease_token = NULL, lease_until = NULL, finished_at = statement_timestamp(), updated_at = statement_timestamp()
        FROM input i WHERE j.id = i.id AND j.state = 'running' AND j.lease_token = i.token
        RETURNING j.id, j.attempts, j.queue, j.kind, j.worker_id, j.started_at, j.state, i.token
      ),
      history AS (
      INSERT INTO leasehold.job_attempts (job_id, attempt, queue, kind, worker_id, lease_token, started_at, ended_at,
                                outcome, failure_class, error, error_detail, duration_ms)
      SELECT s.id, s.attempts, s.queue, s.kind, s.worker_id, s.token, s.started_at, statement_timestamp(), 'cancelled',
             'cancelled', message, NULL, least(greatest(0, extract(epoch FROM statement_timestamp() - s.started_at) * 1000), 2147483647)::int
      FROM settled s),

      lease_ended AS (SELECT token, queue, count(*)::int AS n FROM settled GROUP BY token, queue),
      lease_left AS (
        UPDATE leasehold.leases l SET running = greatest(l.running - e.n, 0) FROM lease_ended e
        WHERE l.token = e.token AND l.queue = e.queue
        RETURNING 1
      ),
      finished AS (SELECT queue, kind, state, attempts FROM changed_ready UNION ALL SELECT queue, kind, state, attempts FROM settled),

      rolled AS (
        INSERT INTO leasehold.finished_rollup AS r (minute, queue, kind, state, attempts, shard, jobs)
        SELECT date_trunc('minute', statement_timestamp()), f.queue, f.kind, f.state, f.attempts, pg_backend_pid() % 8, count(*)::int
        FROM finished f WHERE f.state IN ('done', 'dead', 'cancelled')
        GROUP BY f.queue, f.kind, f.state, f.attempts
        ON CONFLICT (minute, queue, kind, state, attempts, shard) DO UPDATE SET jobs = r.jobs + excluded.jobs
        RETURNING 1
      ),
      changed AS (SELECT id, queue FROM changed_ready UNION ALL SELECT id, queue FROM settled),
      audit AS (
        INSERT INTO leasehold.audit_log (actor, action, job_ids, queue, requested, affected, outcome, detail)
        SELECT p_actor, p_action, p_ids::uuid[],
               (SELECT CASE WHEN count(DISTINCT queue) = 1 THEN min(queue) END FROM changed),
               cardinality(p_ids)::int, (SELECT count(*) FROM changed)::int,
               CASE (SELECT count(*) FROM changed) WHEN 0 THEN 'refused' WHEN cardinality(p_ids)::int THEN 'applied' ELSE 'partial' END,
               jsonb_build_object('reason', p_reason::text,
                                  'applied', coalesce((SELECT jsonb_agg(id) FROM changed), '[]'::jsonb))
        RETURNING id
      )
      SELECT 'audit'::text AS row_type, (SELECT id FROM audit)::text AS id, NULL::text AS state
      UNION ALL SELECT 'changed', id::text, NULL FROM changed
      UNION ALL SELECT 'seen', j.id::text, j.state FROM leasehold.jobs j JOIN input i ON i.id = j.id;
END
$$;
--> statement-breakpoint
-- Pause and resume a queue (pauseQueue, resumeQueue), with the audit row.
CREATE FUNCTION "leasehold"."operator_set_paused"(p_action text, p_queue text, p_actor text, p_reason text)
RETURNS TABLE (audit_id bigint, applied boolean)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
#variable_conflict use_column
BEGIN
  PERFORM leasehold.check_operator_input(p_action, ARRAY['pause', 'resume'], p_actor, p_reason, NULL);
  IF p_queue IS NULL OR p_queue !~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$' THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = format('leasehold: the %s action was refused: queue must be 1 to 128 of A-Z a-z 0-9 _ . : - (starting with a letter or digit), not %L.', p_action, left(p_queue, 140)),
      HINT = 'Nothing was written.';
  END IF;
  IF p_action = 'pause' THEN
    RETURN QUERY
    WITH changed AS (
      INSERT INTO leasehold.queues (name, paused, paused_at, paused_by) VALUES (p_queue, true, statement_timestamp(), p_actor)
      ON CONFLICT (name) DO UPDATE SET paused = true, paused_at = statement_timestamp(), paused_by = excluded.paused_by, updated_at = statement_timestamp()
      WHERE NOT queues.paused
      RETURNING name
    ), audit AS (
      INSERT INTO leasehold.audit_log (actor, action, queue, requested, affected, outcome, detail)
      SELECT p_actor, p_action, p_queue, 1, (SELECT count(*) FROM changed)::int,
             CASE WHEN EXISTS (SELECT 1 FROM changed) THEN 'applied' ELSE 'refused' END,
             jsonb_build_object('reason', p_reason)
      RETURNING id
    )
    SELECT (SELECT id FROM audit), EXISTS (SELECT 1 FROM changed);
  ELSE
    RETURN QUERY
    WITH changed AS (
      UPDATE leasehold.queues SET paused = false, paused_at = NULL, paused_by = NULL, updated_at = statement_timestamp()
      WHERE name = p_queue AND paused
      RETURNING name
    ), audit AS (
      INSERT INTO leasehold.audit_log (actor, action, queue, requested, affected, outcome, detail)
      SELECT p_actor, p_action, p_queue, 1, (SELECT count(*) FROM changed)::int,
             CASE WHEN EXISTS (SELECT 1 FROM changed) THEN 'applied' ELSE 'refused' END,
             jsonb_build_object('reason', p_reason)
      RETURNING id
    )
    SELECT (SELECT id FROM audit), EXISTS (SELECT 1 FROM changed);
  END IF;
END
$$;
--> statement-breakpoint
-- An admin's redaction rule for a whole kind (addRedactedPath), with the audit row; refused,
-- audited: not_found (no version registered), already_masked, too_many (past 100 rules).
CREATE FUNCTION "leasehold"."add_redacted_path"(p_kind text, p_path text, p_actor text, p_reason text)
RETURNS TABLE (audit_id bigint, verdict text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
#variable_conflict use_column
BEGIN
  PERFORM leasehold.check_operator_input('add_redacted_path', ARRAY['add_redacted_path'], p_actor, p_reason, NULL);
  IF p_kind IS NULL OR p_kind !~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$' OR p_path IS NULL OR length(p_path) NOT BETWEEN 1 AND 200 THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = 'leasehold: the add_redacted_path action was refused: a kind name and a path of 1 to 200 characters are needed.',
      HINT = 'Nothing was written.';
  END IF;
  RETURN QUERY
  WITH facts AS (
    SELECT EXISTS (SELECT 1 FROM leasehold.kinds WHERE kind = p_kind) AS registered,
           EXISTS (SELECT 1 FROM leasehold.kind_redactions WHERE kind = p_kind AND path = p_path) AS masked,
           (SELECT count(*) FROM leasehold.kind_redactions WHERE kind = p_kind) >= 100 AS at_cap
  ), added AS (
    INSERT INTO leasehold.kind_redactions (kind, path, added_by)
    SELECT p_kind, p_path, p_actor FROM facts WHERE registered AND NOT masked AND NOT at_cap
    ON CONFLICT (kind, path) DO NOTHING
    RETURNING path
  ), verdict AS (
    SELECT CASE WHEN EXISTS (SELECT 1 FROM added) THEN 'applied'
                WHEN NOT f.registered THEN 'not_found'
                WHEN f.at_cap AND NOT f.masked THEN 'too_many'
                ELSE 'already_masked' END AS verdict
    FROM facts f
  ), audit AS (
    INSERT INTO leasehold.audit_log (actor, action, requested, affected, outcome, detail)
    SELECT p_actor, 'add_redacted_path', 1, (SELECT count(*) FROM added)::int,
           CASE WHEN v.verdict = 'applied' THEN 'applied' ELSE 'refused' END,
           jsonb_build_object('reason', p_reason, 'kind', p_kind, 'path', p_path, 'refused', NULLIF(v.verdict, 'applied'))
    FROM verdict v
    RETURNING id
  )
  SELECT (SELECT id FROM audit), (SELECT verdict FROM verdict);
END
$$;
--> statement-breakpoint
-- Removes a rule an admin added (removeAddedRedactedPath), with the audit row; a path the
-- workers declared is not in kind_redactions, so it stays masked (refused, audited: not_added).
CREATE FUNCTION "leasehold"."remove_added_redacted_path"(p_kind text, p_path text, p_actor text, p_reason text)
RETURNS TABLE (audit_id bigint, removed boolean, declared boolean)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
#variable_conflict use_column
BEGIN
  PERFORM leasehold.check_operator_input('remove_redacted_path', ARRAY['remove_redacted_path'], p_actor, p_reason, NULL);
  RETURN QUERY
  WITH removed AS (
    DELETE FROM leasehold.kind_redactions WHERE kind = p_kind AND path = p_path RETURNING path
  ), facts AS (
    SELECT EXISTS (SELECT 1 FROM removed) AS removed,
           EXISTS (SELECT 1 FROM leasehold.kinds WHERE kind = p_kind AND p_path = ANY (redacted_paths)) AS declared
  ), audit AS (
    INSERT INTO leasehold.audit_log (actor, action, requested, affected, outcome, detail)
    SELECT p_actor, 'remove_redacted_path', 1, (SELECT count(*) FROM removed)::int,
           CASE WHEN f.removed THEN 'applied' ELSE 'refused' END,
           jsonb_build_object('reason', p_reason, 'kind', p_kind, 'path', p_path, 'declared_by_workers', f.declared)
    FROM facts f
    RETURNING id
  )
  SELECT (SELECT id FROM audit), f.removed, f.declared FROM facts f;
END
$$;
--> statement-breakpoint
-- An admin's payload reveal (lib/dal/jobs.ts revealPayload): its audit row, the job's queue
-- read here. Returns the row's id, NULL when the job is gone (nothing written).
CREATE FUNCTION "leasehold"."record_payload_reveal"(p_actor text, p_job_id uuid, p_role text)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
#variable_conflict use_column
DECLARE
  audit_id bigint;
BEGIN
  PERFORM leasehold.check_operator_input('reveal_payload', ARRAY['reveal_payload'], p_actor, NULL, ARRAY[p_job_id]);
  INSERT INTO leasehold.audit_log (actor, action, job_ids, queue, requested, affected, outcome, detail)
  SELECT p_actor, 'reveal_payload', ARRAY[j.id], j.queue, 1, 1, 'applied', jsonb_build_object('role', p_role)
  FROM leasehold.jobs j WHERE j.id = p_job_id
  RETURNING id INTO audit_id;
  RETURN audit_id;
END
$$;
--> statement-breakpoint
-- Ends every session of an identity (sign-out): its session version only ever rises.
CREATE FUNCTION "leasehold"."raise_session_version"(p_actor text)
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
#variable_conflict use_column
DECLARE
  raised integer;
BEGIN
  IF p_actor IS NULL OR length(p_actor) NOT BETWEEN 1 AND 512 THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = 'leasehold.raise_session_version refused: the identity must be 1 to 512 characters.', HINT = 'Nothing was written.';
  END IF;
  INSERT INTO leasehold.session_versions AS v (actor, version) VALUES (p_actor, 1)
  ON CONFLICT (actor) DO UPDATE SET version = v.version + 1, updated_at = now()
  RETURNING v.version INTO raised;
  RETURN raised;
END
$$;
