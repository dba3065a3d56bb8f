-- leasehold:schema-version 23
-- leasehold:compatible-from 1
-- The actions support staff ask for (issue 42; docs/dashboard.md, "Support actions"): run a
-- scheduled or retrying job now, reschedule it, change a waiting job's priority, re-run a done
-- job (a copy: a done job never changes again, docs/contract.md), purge a queue's old dead jobs.
-- Each is a SECURITY DEFINER function, a row of db/queue/transitions.ts's EDGES, that makes its
-- guarded change and writes its audit row in one call, so the dashboard's role needs no write on
-- jobs (db/roles.sql grants it EXECUTE). A job action is a compare-and-set on what the operator
-- saw (state, attempts, updated_at): a job that changed since is refused, audited, unchanged.
-- Bad input raises 22023 with a sentence and writes nothing. Expanding: no table changes; older
-- code never calls these.

-- A job locked for an operator's change, in the lock order of db/queue/transitions.ts: its ready
-- row first (as a claim takes them), then the job. NULL (every column) when there is no such job.
-- A claim that holds the ready row has it deleted when we get it: the job is then running, and
-- the caller's guard refuses.
CREATE FUNCTION "leasehold"."lock_job_for_operator"(p_id uuid) RETURNS "leasehold"."jobs"
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog AS $$
DECLARE
  j leasehold.jobs;
BEGIN
  SELECT * INTO j FROM leasehold.jobs x WHERE x.id = p_id;
  IF NOT FOUND THEN RETURN NULL; END IF;
  IF j.state = 'ready' AND j.group_key IS NULL THEN
    PERFORM 1 FROM leasehold.ready_jobs r
    WHERE r.kind = j.kind AND r.kind_version = j.kind_version AND r.queue = j.queue AND r.claim_at = j.claim_at AND r.id = j.id
    FOR UPDATE;
  ELSIF j.state = 'ready' THEN
    PERFORM 1 FROM leasehold.grouped_ready_jobs r
    WHERE r.queue = j.queue AND r.kind = j.kind AND r.kind_version = j.kind_version AND r.group_key = j.group_key
      AND r.claim_at = j.claim_at AND r.id = j.id
    FOR UPDATE;
  END IF;
  SELECT * INTO j FROM leasehold.jobs x WHERE x.id = p_id FOR UPDATE;
  IF NOT FOUND THEN RETURN NULL; END IF;
  RETURN j;
END
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."lock_job_for_operator"(uuid) FROM PUBLIC;
--> statement-breakpoint
-- The checks every job action makes first: check_operator_input's, and what the page saw (the
-- job's state, attempts and updated_at), which the guard compares.
CREATE FUNCTION "leasehold"."check_job_action_input"(
  p_action text, p_actor text, p_reason text, p_id uuid, p_seen_state text, p_seen_attempts integer,
  p_seen_updated_at timestamptz, p_problems text[]
) RETURNS void
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog AS $$
DECLARE
  problems text[] := coalesce(p_problems, ARRAY[]::text[]);
BEGIN
  PERFORM leasehold.check_operator_input(p_action, ARRAY[p_action], p_actor, p_reason, ARRAY[p_id]);
  IF p_seen_state IS NULL OR p_seen_state NOT IN ('ready', 'running', 'done', 'dead', 'cancelled')
     OR p_seen_attempts IS NULL OR p_seen_attempts < 0
     OR p_seen_updated_at IS NULL OR NOT isfinite(p_seen_updated_at) THEN
    problems := array_append(problems, 'what the page saw (the job''s state, attempts and updated_at) is required');
  END IF;
  IF cardinality(problems) > 0 THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = format('leasehold: the %s action was refused: %s.', p_action, array_to_string(problems, '; ')),
      HINT = 'Nothing was written.';
  END IF;
END
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."check_job_action_input"(text, text, text, uuid, text, integer, timestamptz, text[]) FROM PUBLIC;
--> statement-breakpoint
-- Whether the job is not as the page saw it. updated_at to the millisecond: the page holds it
-- as JSON (ISO text of a JavaScript Date), PostgreSQL to the microsecond.
CREATE FUNCTION "leasehold"."job_changed_since_seen"(
  j leasehold.jobs, p_seen_state text, p_seen_attempts integer, p_seen_updated_at timestamptz
) RETURNS boolean
LANGUAGE sql IMMUTABLE SECURITY INVOKER SET search_path = pg_catalog AS $$
  SELECT j.state IS DISTINCT FROM p_seen_state OR j.attempts IS DISTINCT FROM p_seen_attempts
      OR abs(extract(epoch FROM j.updated_at - p_seen_updated_at)) >= 0.001
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."job_changed_since_seen"(leasehold.jobs, text, integer, timestamptz) FROM PUBLIC;
--> statement-breakpoint
-- The audit row of a job action (one per call, refused ones too), and the function's answer.
CREATE FUNCTION "leasehold"."audit_job_action"(
  p_action text, p_actor text, p_job_ids uuid[], p_queue text, p_verdict text, p_detail jsonb
) RETURNS bigint
LANGUAGE sql VOLATILE SECURITY INVOKER SET search_path = pg_catalog AS $$
  INSERT INTO leasehold.audit_log (actor, action, job_ids, queue, requested, affected, outcome, detail)
  VALUES (p_actor, p_action, p_job_ids, p_queue, 1, CASE WHEN p_verdict = 'applied' THEN 1 ELSE 0 END,
          CASE WHEN p_verdict = 'applied' THEN 'applied' ELSE 'refused' END,
          p_detail || jsonb_build_object('refused', NULLIF(p_verdict, 'applied')))
  RETURNING id
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."audit_job_action"(text, text, uuid[], text, text, jsonb) FROM PUBLIC;
--> statement-breakpoint
-- ready (scheduled or retrying) -> ready, due now (runNowIfUnchanged; EDGES): run_at is now, the
-- aging offset (claim_at - run_at, the priority's) kept; the ready row follows through
-- jobs_ready_row, and the queue's workers are woken. Refused, audited: not_found,
-- changed_since_viewed, not_waiting (not a scheduled or retrying job: due already, or not ready).
CREATE FUNCTION "leasehold"."operator_run_now"(
  p_actor text, p_reason text, p_id uuid, p_seen_state text, p_seen_attempts integer, p_seen_updated_at timestamptz
) RETURNS TABLE (audit_id bigint, verdict text, state text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
#variable_conflict use_column
DECLARE
  j leasehold.jobs;
  v text;
BEGIN
  PERFORM leasehold.check_job_action_input('run_now', p_actor, p_reason, p_id, p_seen_state, p_seen_attempts, p_seen_updated_at, NULL);
  j := leasehold.lock_job_for_operator(p_id);
  v := CASE WHEN j.id IS NULL THEN 'not_found'
            WHEN leasehold.job_changed_since_seen(j, p_seen_state, p_seen_attempts, p_seen_updated_at) THEN 'changed_since_viewed'
            WHEN j.state <> 'ready' OR (j.attempts = 0 AND j.run_at <= statement_timestamp()) THEN 'not_waiting'
            ELSE 'applied' END;
  IF v = 'applied' THEN
    -- A retrying job already due keeps its place (never later than it was).
    UPDATE leasehold.jobs x SET run_at = least(x.run_at, statement_timestamp()),
                                claim_at = least(x.run_at, statement_timestamp()) - (x.run_at - x.claim_at),
                                updated_at = statement_timestamp()
    WHERE x.id = j.id;
    IF pg_catalog.pg_notification_queue_usage() < 0.5 THEN
      PERFORM pg_notify('leasehold_jobs', j.queue || CASE WHEN j.group_key IS NULL THEN '' ELSE ' grouped' END);
    END IF;
  END IF;
  audit_id := leasehold.audit_job_action('run_now', p_actor, ARRAY[p_id], j.queue, v,
    jsonb_build_object('reason', p_reason, 'run_at_before', j.run_at));
  verdict := v;
  state := j.state;
  RETURN NEXT;
END
$$;
--> statement-breakpoint
-- ready (scheduled or retrying) -> ready at a new run time (rescheduleIfUnchanged; EDGES): a
-- time in the past or more than 365 days ahead is bad input. Refused, audited, as run_now.
CREATE FUNCTION "leasehold"."operator_reschedule"(
  p_actor text, p_reason text, p_id uuid, p_run_at timestamptz,
  p_seen_state text, p_seen_attempts integer, p_seen_updated_at timestamptz
) RETURNS TABLE (audit_id bigint, verdict text, state text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
#variable_conflict use_column
DECLARE
  j leasehold.jobs;
  v text;
BEGIN
  PERFORM leasehold.check_job_action_input('reschedule', p_actor, p_reason, p_id, p_seen_state, p_seen_attempts, p_seen_updated_at,
    CASE WHEN p_run_at IS NULL OR NOT isfinite(p_run_at) OR p_run_at <= statement_timestamp()
              OR p_run_at > statement_timestamp() + interval '365 days'
         THEN ARRAY[format('the new run time must be in the future and at most 365 days from now, not %s', coalesce(p_run_at::text, 'none'))]
    END);
  j := leasehold.lock_job_for_operator(p_id);
  v := CASE WHEN j.id IS NULL THEN 'not_found'
            WHEN leasehold.job_changed_since_seen(j, p_seen_state, p_seen_attempts, p_seen_updated_at) THEN 'changed_since_viewed'
            WHEN j.state <> 'ready' OR (j.attempts = 0 AND j.run_at <= statement_timestamp()) THEN 'not_waiting'
            ELSE 'applied' END;
  IF v = 'applied' THEN
    UPDATE leasehold.jobs x SET run_at = p_run_at, claim_at = p_run_at - (x.run_at - x.claim_at), updated_at = statement_timestamp()
    WHERE x.id = j.id;
  END IF;
  audit_id := leasehold.audit_job_action('reschedule', p_actor, ARRAY[p_id], j.queue, v,
    jsonb_build_object('reason', p_reason, 'run_at_before', j.run_at, 'run_at', p_run_at));
  verdict := v;
  state := j.state;
  RETURN NEXT;
END
$$;
--> statement-breakpoint
-- ready -> ready with another priority (setPriorityIfUnchanged; EDGES): claim_at is run_at less
-- priority × the queue's aging step, as an enqueue computes it (60 s for a queue without a
-- row). Refused, audited: not_found, changed_since_viewed, not_waiting (not ready).
CREATE FUNCTION "leasehold"."operator_set_priority"(
  p_actor text, p_reason text, p_id uuid, p_priority integer,
  p_seen_state text, p_seen_attempts integer, p_seen_updated_at timestamptz
) RETURNS TABLE (audit_id bigint, verdict text, state text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
#variable_conflict use_column
DECLARE
  j leasehold.jobs;
  v text;
BEGIN
  PERFORM leasehold.check_job_action_input('set_priority', p_actor, p_reason, p_id, p_seen_state, p_seen_attempts, p_seen_updated_at,
    CASE WHEN p_priority IS NULL OR p_priority NOT BETWEEN 0 AND 100
         THEN ARRAY[format('priority must be an integer from 0 (the lowest) to 100, not %s', coalesce(p_priority::text, 'none'))]
    END);
  j := leasehold.lock_job_for_operator(p_id);
  v := CASE WHEN j.id IS NULL THEN 'not_found'
            WHEN leasehold.job_changed_since_seen(j, p_seen_state, p_seen_attempts, p_seen_updated_at) THEN 'changed_since_viewed'
            WHEN j.state <> 'ready' THEN 'not_waiting'
            ELSE 'applied' END;
  IF v = 'applied' THEN
    UPDATE leasehold.jobs x SET priority = p_priority,
           claim_at = x.run_at - make_interval(secs => p_priority * coalesce((SELECT q.aging_seconds FROM leasehold.queues q WHERE q.name = x.queue), 60)),
           updated_at = statement_timestamp()
    WHERE x.id = j.id;
  END IF;
  audit_id := leasehold.audit_job_action('set_priority', p_actor, ARRAY[p_id], j.queue, v,
    jsonb_build_object('reason', p_reason, 'priority_before', j.priority, 'priority', p_priority));
  verdict := v;
  state := j.state;
  RETURN NEXT;
END
$$;
--> statement-breakpoint
-- A re-run of a done job (rerunCopy; EDGES' null -> ready): a done job never changes again, so a
-- copy is enqueued (a new id; the same queue, kind, version, payload, priority, maximum of
-- attempts, group, tags, own settings and trace, without the snooze counters and the uniqueness
-- key; rerun_of the original; a max age restarts from now), only where the
-- kind version is registered re-run safe (kinds.rerun_safe). The audit row names both jobs.
-- Refused, audited: not_found, changed_since_viewed (not the state seen), not_done,
-- not_rerun_safe. A done job is locked FOR SHARE: retention waits, and two re-runs both copy.
CREATE FUNCTION "leasehold"."operator_rerun"(
  p_actor text, p_reason text, p_id uuid, p_seen_state text, p_seen_attempts integer, p_seen_updated_at timestamptz
) RETURNS TABLE (audit_id bigint, verdict text, state text, copy_id uuid)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
#variable_conflict use_column
DECLARE
  j leasehold.jobs;
  v text;
  safe boolean;
  micros bigint;
  fraction integer;
  bytes bytea;
  new_id uuid;
BEGIN
  PERFORM leasehold.check_job_action_input('rerun', p_actor, p_reason, p_id, p_seen_state, p_seen_attempts, p_seen_updated_at, NULL);
  SELECT * INTO j FROM leasehold.jobs x WHERE x.id = p_id FOR SHARE;
  SELECT k.rerun_safe INTO safe FROM leasehold.kinds k WHERE k.kind = j.kind AND k.version = j.kind_version;
  v := CASE WHEN j.id IS NULL THEN 'not_found'
            WHEN leasehold.job_changed_since_seen(j, p_seen_state, p_seen_attempts, p_seen_updated_at) THEN 'changed_since_viewed'
            WHEN j.state <> 'done' THEN 'not_done'
            WHEN NOT coalesce(safe, false) THEN 'not_rerun_safe'
            ELSE 'applied' END;
  IF v = 'applied' THEN
    -- A UUIDv7, as leasehold.enqueue makes one (drizzle/0002).
    micros := (extract(epoch FROM clock_timestamp()) * 1000000)::bigint;
    fraction := ((micros % 1000) * 4096 / 1000)::integer;
    bytes := uuid_send(gen_random_uuid());
    bytes := overlay(bytes PLACING substring(int8send(micros / 1000) FROM 3) FROM 1 FOR 6);
    bytes := set_byte(bytes, 6, 112 | (fraction >> 8));
    bytes := set_byte(bytes, 7, fraction & 255);
    new_id := encode(bytes, 'hex')::uuid;
    -- The ready row comes from jobs_inserted_ready_rows; claim_at as an enqueue computes it.
    -- The job's own settings (its timeout, back-off, awaitable) and trace go with it; its snooze
    -- counters start again, and it takes no uniqueness key (the original held it; a re-run is
    -- an operator's deliberate second run).
    INSERT INTO leasehold.jobs (id, queue, kind, kind_version, payload, priority, run_at, claim_at, max_attempts,
                                expires_at, group_key, tags, options, trace_id, rerun_of)
    SELECT new_id, j.queue, j.kind, j.kind_version, j.payload, j.priority, statement_timestamp(),
           statement_timestamp() - make_interval(secs => j.priority * coalesce(q.aging_seconds, 60)), j.max_attempts,
           CASE WHEN j.expires_at IS NULL THEN NULL ELSE statement_timestamp() + (j.expires_at - j.created_at) END,
           j.group_key, j.tags, NULLIF(j.options - 'snoozes' - 'snoozedMs' - 'uniqueKey', '{}'::jsonb), j.trace_id, j.id
    FROM (SELECT 1) one LEFT JOIN leasehold.queues q ON q.name = j.queue;
    IF pg_catalog.pg_notification_queue_usage() < 0.5 THEN
      PERFORM pg_notify('leasehold_jobs', j.queue || CASE WHEN j.group_key IS NULL THEN '' ELSE ' grouped' END);
    END IF;
  END IF;
  audit_id := leasehold.audit_job_action('rerun', p_actor,
    CASE WHEN new_id IS NULL THEN ARRAY[p_id] ELSE ARRAY[p_id, new_id] END, j.queue, v,
    jsonb_build_object('reason', p_reason, 'copy', new_id));
  verdict := v;
  state := j.state;
  copy_id := new_id;
  RETURN NEXT;
END
$$;
--> statement-breakpoint
-- dead -> removed, an admin's purge of a queue's dead jobs finished before a date
-- (purgeDeadJobs; EDGES): exactly the previewed ids (at most 1,000) that are still dead, of
-- the queue, finished before the date; with their attempts, results, progress and uniqueness
-- keys, as retention removes them. One audit row (`purge_dead`) for the whole set.
CREATE FUNCTION "leasehold"."operator_purge_dead"(
  p_actor text, p_reason text, p_queue text, p_before timestamptz, p_ids uuid[]
) RETURNS TABLE (audit_id bigint, purged integer)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
#variable_conflict use_column
BEGIN
  IF p_ids IS NULL THEN p_ids := ARRAY[]::uuid[]; END IF;
  PERFORM leasehold.check_operator_input('purge_dead', ARRAY['purge_dead'], p_actor, p_reason,
                                         CASE WHEN cardinality(p_ids) = 0 THEN ARRAY[NULL]::uuid[] ELSE p_ids END);
  IF p_queue IS NULL OR p_queue !~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$'
     OR p_before IS NULL OR NOT isfinite(p_before) OR p_before > statement_timestamp() THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = format('leasehold: the purge_dead action was refused: a queue name and a date not in the future are needed, not %L and %s.',
                       left(p_queue, 140), coalesce(p_before::text, 'none')),
      HINT = 'Nothing was written.';
  END IF;
  RETURN QUERY
  WITH gone AS (
    DELETE FROM leasehold.jobs j
    WHERE j.id = ANY(p_ids) AND j.state = 'dead' AND j.queue = p_queue AND j.finished_at < p_before
    RETURNING j.id, j.options->>'uniqueKey' AS unique_key
  ), results AS (DELETE FROM leasehold.job_results x USING gone g WHERE x.job_id = g.id RETURNING 1),
  progress AS (DELETE FROM leasehold.job_progress x USING gone g WHERE x.job_id = g.id RETURNING 1),
  keys AS (
    DELETE FROM leasehold.unique_keys u USING gone g
    WHERE g.unique_key IS NOT NULL AND u.key = g.unique_key AND u.job_id = g.id
    RETURNING 1
  ), attempts AS (DELETE FROM leasehold.job_attempts a USING gone g WHERE a.job_id = g.id RETURNING 1),
  audit AS (
    INSERT INTO leasehold.audit_log (actor, action, job_ids, queue, requested, affected, outcome, detail)
    SELECT p_actor, 'purge_dead', p_ids, p_queue, cardinality(p_ids)::int, (SELECT count(*) FROM gone)::int,
           CASE (SELECT count(*) FROM gone) WHEN 0 THEN 'refused' WHEN cardinality(p_ids) THEN 'applied' ELSE 'partial' END,
           -- (results, progress and keys run to completion unread, as every data-modifying WITH does)
           jsonb_build_object('reason', p_reason, 'before', p_before, 'attempts', (SELECT count(*) FROM attempts))
    RETURNING id
  )
  SELECT (SELECT id FROM audit), (SELECT count(*) FROM gone)::int;
END
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."operator_run_now"(text, text, uuid, text, integer, timestamptz) FROM PUBLIC;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."operator_reschedule"(text, text, uuid, timestamptz, text, integer, timestamptz) FROM PUBLIC;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."operator_set_priority"(text, text, uuid, integer, text, integer, timestamptz) FROM PUBLIC;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."operator_rerun"(text, text, uuid, text, integer, timestamptz) FROM PUBLIC;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."operator_purge_dead"(text, text, text, timestamptz, uuid[]) FROM PUBLIC;
