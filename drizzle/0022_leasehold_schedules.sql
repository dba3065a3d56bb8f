-- leasehold:schema-version 17
-- leasehold:compatible-from 1
-- Recurring jobs (issue 38; docs/scheduling.md; db/queue/schedules.ts). `schedules` holds each
-- schedule: what its ticks enqueue, its cron expression and time zone (evaluated by the workers
-- with croner, at the database's time), its missed-tick and overlap policies, and where its
-- ticks stand; `schedule_ticks` what became of each tick. Workers find due schedules through
-- leasehold.due_schedules (locked FOR UPDATE SKIP LOCKED: one worker per schedule at a time)
-- and enqueue their ticks through leasehold.run_schedule_ticks, which calls leasehold.enqueue
-- with a key per schedule and tick: the worker role has no enqueue right of its own. Code
-- declares schedules through leasehold.declare_schedules; admins change them through
-- leasehold.set_schedule, with its audit row. `kinds.payload_schema`: the JSON Schema of the
-- payload each kind version's handler takes, which a run-time schedule's payload must fit.
-- Expanding: nothing before reads these, and a worker of an older release ignores them.
CREATE TABLE "leasehold"."schedule_ticks" (
	"schedule" text NOT NULL,
	"tick_at" timestamp with time zone NOT NULL,
	"outcome" text NOT NULL,
	"job_id" uuid,
	"missed_count" integer,
	"at" timestamp with time zone NOT NULL,
	CONSTRAINT "schedule_ticks_pkey" PRIMARY KEY("schedule","tick_at"),
	CONSTRAINT "schedule_ticks_outcome_check" CHECK (outcome IN ('enqueued', 'late', 'overlap', 'missed', 'discarded'))
);
--> statement-breakpoint
CREATE TABLE "leasehold"."schedules" (
	"name" text PRIMARY KEY NOT NULL,
	"queue" text NOT NULL,
	"kind" text NOT NULL,
	"kind_version" integer NOT NULL,
	"payload" jsonb NOT NULL,
	"group_key" text,
	"priority" integer DEFAULT 0 NOT NULL,
	"max_attempts" integer NOT NULL,
	"cron" text NOT NULL,
	"timezone" text NOT NULL,
	"missed" text NOT NULL,
	"missed_each" integer,
	"missed_after_ms" integer NOT NULL,
	"horizon_ms" bigint NOT NULL,
	"overlap" text NOT NULL,
	"jitter_ms" integer DEFAULT 0 NOT NULL,
	"start_within_ms" integer,
	"paused" boolean DEFAULT false NOT NULL,
	"paused_reason" text,
	"source" text NOT NULL,
	"declared" jsonb,
	"declared_at" timestamp with time zone,
	"overridden" boolean DEFAULT false NOT NULL,
	"ticks_after" timestamp with time zone NOT NULL,
	"next_tick_at" timestamp with time zone,
	"last_tick_at" timestamp with time zone,
	"last_job_id" uuid,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "schedules_name_check" CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$'),
	CONSTRAINT "schedules_missed_check" CHECK (missed IN ('skip', 'once', 'each') AND (missed = 'each') = (missed_each IS NOT NULL)),
	CONSTRAINT "schedules_missed_each_check" CHECK (missed_each BETWEEN 1 AND 1000),
	CONSTRAINT "schedules_missed_after_check" CHECK (missed_after_ms BETWEEN 1000 AND 86400000),
	CONSTRAINT "schedules_horizon_check" CHECK (horizon_ms BETWEEN 1000 AND 31536000000 AND horizon_ms >= missed_after_ms),
	CONSTRAINT "schedules_overlap_check" CHECK (overlap IN ('allow', 'skip')),
	CONSTRAINT "schedules_jitter_check" CHECK (jitter_ms BETWEEN 0 AND 3600000),
	CONSTRAINT "schedules_start_within_check" CHECK (start_within_ms BETWEEN 1000 AND 604800000),
	CONSTRAINT "schedules_source_check" CHECK (source IN ('code', 'runtime')),
	CONSTRAINT "schedules_cron_check" CHECK (length(cron) BETWEEN 1 AND 256 AND length(timezone) BETWEEN 1 AND 64)
);
--> statement-breakpoint
ALTER TABLE "leasehold"."kinds" ADD COLUMN "payload_schema" jsonb;--> statement-breakpoint
-- The due schedules (not paused, next tick reached or not yet computed), locked until the
-- caller's transaction ends, skipping those another worker holds; with the database's time, the
-- only clock ticks are measured by: the transaction's start (now()), which is also the
-- created_at of every job the pass enqueues, so no job is ever created before its tick.
CREATE FUNCTION "leasehold"."due_schedules"(p_limit integer)
RETURNS TABLE (db_now timestamptz, name text, cron text, timezone text, missed text, missed_each integer,
               missed_after_ms integer, horizon_ms bigint, ticks_after timestamptz, next_tick_at timestamptz)
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
  SELECT now(), s.name, s.cron, s.timezone, s.missed, s.missed_each, s.missed_after_ms,
         s.horizon_ms, s.ticks_after, s.next_tick_at
  FROM leasehold.schedules s
  WHERE NOT s.paused AND (s.next_tick_at IS NULL OR s.next_tick_at <= now())
  ORDER BY s.next_tick_at NULLS FIRST, s.name
  LIMIT least(greatest(coalesce(p_limit, 100), 1), 1000)
  FOR UPDATE OF s SKIP LOCKED
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."due_schedules"(integer) FROM PUBLIC;
--> statement-breakpoint
-- A worker's pass over one due schedule (db/queue/schedules.ts computes the ticks with croner):
-- every tick after `ticks_after` (p_after, as the worker read it) up to p_through is handled:
-- p_ticks are enqueued on time, p_late ones late (the missed-tick policy chose them), and
-- p_missed_count missed ticks up to p_missed_last are passed over (one row). Each enqueue goes
-- through leasehold.enqueue with the key `leasehold:schedule:<name>@<tick>` kept for the
-- schedule's horizon, so a tick enqueued twice makes one job. With overlap `skip`, a tick whose
-- previous tick's job has not ended is passed over; with start_within_ms, a tick already past
-- its start deadline is discarded (not enqueued), and the others' jobs expire at it. Nothing happens when the schedule moved
-- since the worker read it (another worker, a change, a pause): its ticks_after differs.
CREATE FUNCTION "leasehold"."run_schedule_ticks"(
  p_name text, p_after timestamptz, p_through timestamptz, p_ticks timestamptz[], p_late timestamptz[],
  p_missed_count integer, p_missed_last timestamptz, p_next timestamptz
) RETURNS TABLE (tick_at timestamptz, outcome text, job_id uuid)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
#variable_conflict use_column
DECLARE
  s leasehold.schedules%ROWTYPE;
  v_now timestamptz := statement_timestamp();
  v_all timestamptz[];
  v_tick timestamptz;
  v_late boolean;
  v_job uuid;
  v_outcome text;
  v_cutoff timestamptz;
BEGIN
  SELECT * INTO s FROM leasehold.schedules x WHERE x.name = p_name FOR UPDATE;
  IF NOT FOUND OR s.paused OR s.ticks_after IS DISTINCT FROM p_after THEN
    RETURN;
  END IF;
  v_all := coalesce(p_ticks, '{}') || coalesce(p_late, '{}');
  IF p_through IS NULL OR p_through < p_after OR p_through > v_now OR p_next IS NULL OR p_next <= p_through
      OR array_position(v_all, NULL) IS NOT NULL OR cardinality(v_all) > 2000
      OR EXISTS (SELECT 1 FROM unnest(v_all) t WHERE t <= p_after OR t > p_through)
      OR (SELECT count(DISTINCT t) FROM unnest(v_all) t) <> cardinality(v_all)
      OR (p_missed_last IS NULL) <> (coalesce(p_missed_count, 0) = 0)
      OR p_missed_count < 0
      OR (p_missed_last IS NOT NULL AND (p_missed_last <= p_after OR p_missed_last > p_through
                                          OR p_missed_last = ANY (v_all))) THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = format('leasehold.run_schedule_ticks refused the ticks of schedule %s: each tick must be after its last handled tick (%s) and at most the last one considered, each once, and the next tick after it.', p_name, p_after),
      HINT = 'Nothing was written.';
  END IF;
  IF p_missed_last IS NOT NULL THEN
    INSERT INTO leasehold.schedule_ticks AS t (schedule, tick_at, outcome, missed_count, at)
    VALUES (p_name, p_missed_last, 'missed', p_missed_count, v_now)
    ON CONFLICT DO NOTHING;
    tick_at := p_missed_last; outcome := 'missed'; job_id := NULL;
    RETURN NEXT;
  END IF;
  FOR v_tick, v_late IN
    SELECT t, false FROM unnest(coalesce(p_ticks, '{}')) t
    UNION ALL
    SELECT t, true FROM unnest(coalesce(p_late, '{}')) t
    ORDER BY 1
  LOOP
    IF s.start_within_ms IS NOT NULL AND v_tick + make_interval(secs => s.start_within_ms / 1000.0) <= v_now THEN
      -- Late past its start deadline: not enqueued.
      v_outcome := 'discarded';
      v_job := NULL;
    ELSIF s.overlap = 'skip' AND s.last_job_id IS NOT NULL AND EXISTS (
        SELECT 1 FROM leasehold.jobs j WHERE j.id = s.last_job_id AND j.state NOT IN ('done', 'dead', 'cancelled')) THEN
      v_outcome := 'overlap';
      v_job := NULL;
    ELSE
      v_outcome := CASE WHEN v_late THEN 'late' ELSE 'enqueued' END;
      SELECT e.id INTO v_job
      FROM leasehold.enqueue(
        kind => s.kind, payload => s.payload, queue => s.queue,
        run_at => v_tick + make_interval(secs => floor(random() * s.jitter_ms) / 1000.0),
        priority => s.priority, max_attempts => s.max_attempts,
        idempotency_key => 'leasehold:schedule:' || s.name || '@'
                           || to_char(v_tick AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        dedupe_window => make_interval(secs => s.horizon_ms / 1000.0),
        kind_version => s.kind_version, group_key => s.group_key,
        -- expires_at = the tick + start_within_ms: a first attempt claimed after it is discarded
        -- (workers/attempt.ts: dead, class `expired`), and a failure after it is not retried.
        max_age => v_tick + make_interval(secs => s.start_within_ms / 1000.0) - v_now) e;
      s.last_job_id := v_job;
      s.last_tick_at := v_tick;
    END IF;
    INSERT INTO leasehold.schedule_ticks AS t (schedule, tick_at, outcome, job_id, at)
    VALUES (p_name, v_tick, v_outcome, v_job, v_now)
    ON CONFLICT DO NOTHING;
    tick_at := v_tick; outcome := v_outcome; job_id := v_job;
    RETURN NEXT;
  END LOOP;
  UPDATE leasehold.schedules x
  SET ticks_after = p_through, next_tick_at = p_next, last_tick_at = s.last_tick_at, last_job_id = s.last_job_id
  WHERE x.name = p_name;
  -- Ticks older than the horizon go, but the newest 100 stay (the schedule's page).
  SELECT t.tick_at INTO v_cutoff FROM leasehold.schedule_ticks t
  WHERE t.schedule = p_name ORDER BY t.tick_at DESC OFFSET 99 LIMIT 1;
  IF v_cutoff IS NOT NULL THEN
    DELETE FROM leasehold.schedule_ticks t
    WHERE t.schedule = p_name AND t.tick_at < least(v_cutoff, v_now - make_interval(secs => s.horizon_ms / 1000.0));
  END IF;
END
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."run_schedule_ticks"(text, timestamptz, timestamptz, timestamptz[], timestamptz[], integer, timestamptz, timestamptz) FROM PUBLIC;
--> statement-breakpoint
-- A schedule's settings as JSON (what declare_schedules and set_schedule take and audit).
CREATE FUNCTION "leasehold"."schedule_settings"(s leasehold.schedules) RETURNS jsonb
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog AS $$
  SELECT jsonb_build_object('queue', s.queue, 'kind', s.kind, 'kind_version', s.kind_version, 'payload', s.payload,
    'group_key', s.group_key, 'priority', s.priority, 'max_attempts', s.max_attempts, 'cron', s.cron,
    'timezone', s.timezone, 'missed', s.missed, 'missed_each', s.missed_each, 'missed_after_ms', s.missed_after_ms,
    'horizon_ms', s.horizon_ms, 'overlap', s.overlap, 'jitter_ms', s.jitter_ms, 'start_within_ms', s.start_within_ms)
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."schedule_settings"(leasehold.schedules) FROM PUBLIC;
--> statement-breakpoint
-- Writes settings (a JSON object of schedule_settings' keys; keys it lacks keep their values)
-- into schedule p_name, made if missing. A change of the cron expression or the time zone moves
-- ticks_after to now: the new expression's ticks start after the change.
CREATE FUNCTION "leasehold"."write_schedule"(p_name text, p_settings jsonb, p_source text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog AS $$
DECLARE
  -- Milliseconds: the worker reads ticks_after into a JavaScript Date and hands it back.
  v_now timestamptz := date_trunc('milliseconds', statement_timestamp());
  v jsonb;
  s leasehold.schedules%ROWTYPE;
BEGIN
  SELECT * INTO s FROM leasehold.schedules x WHERE x.name = p_name FOR UPDATE;
  IF FOUND THEN
    v := leasehold.schedule_settings(s) || p_settings;
  ELSE
    v := p_settings;
  END IF;
  INSERT INTO leasehold.schedules AS x (name, queue, kind, kind_version, payload, group_key, priority, max_attempts,
    cron, timezone, missed, missed_each, missed_after_ms, horizon_ms, overlap, jitter_ms, start_within_ms, source,
    ticks_after, created_at, updated_at)
  VALUES (p_name, v->>'queue', v->>'kind', (v->>'kind_version')::integer, v->'payload', v->>'group_key',
    coalesce((v->>'priority')::integer, 0), (v->>'max_attempts')::integer, v->>'cron', v->>'timezone', v->>'missed',
    (v->>'missed_each')::integer, (v->>'missed_after_ms')::integer, (v->>'horizon_ms')::bigint, v->>'overlap',
    coalesce((v->>'jitter_ms')::integer, 0), (v->>'start_within_ms')::integer, p_source, v_now, v_now, v_now)
  ON CONFLICT (name) DO UPDATE SET
    queue = EXCLUDED.queue, kind = EXCLUDED.kind, kind_version = EXCLUDED.kind_version, payload = EXCLUDED.payload,
    group_key = EXCLUDED.group_key, priority = EXCLUDED.priority, max_attempts = EXCLUDED.max_attempts,
    cron = EXCLUDED.cron, timezone = EXCLUDED.timezone, missed = EXCLUDED.missed, missed_each = EXCLUDED.missed_each,
    missed_after_ms = EXCLUDED.missed_after_ms, horizon_ms = EXCLUDED.horizon_ms, overlap = EXCLUDED.overlap,
    jitter_ms = EXCLUDED.jitter_ms, start_within_ms = EXCLUDED.start_within_ms,
    ticks_after = CASE WHEN (x.cron, x.timezone) IS DISTINCT FROM (EXCLUDED.cron, EXCLUDED.timezone)
                       THEN greatest(x.ticks_after, v_now) ELSE x.ticks_after END,
    next_tick_at = NULL,
    updated_at = v_now;
END
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."write_schedule"(text, jsonb, text) FROM PUBLIC;
--> statement-breakpoint
-- A worker's declarations of the schedules in its code (declareSchedules), each a JSON object of
-- schedule_settings' keys and `name`. The rule when code and run time disagree: a schedule an
-- admin changed (or made) at run time keeps the run-time settings until reset_schedule; the
-- others take the code's at each declaration. Every declaration is kept in `declared`. A pause
-- is the run time's alone: a declaration neither pauses nor resumes.
CREATE FUNCTION "leasehold"."declare_schedules"(p_specs jsonb)
RETURNS TABLE (name text, applied boolean)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
#variable_conflict use_column
DECLARE
  v_spec jsonb;
  v_name text;
  v_settings jsonb;
  s leasehold.schedules%ROWTYPE;
BEGIN
  IF p_specs IS NULL OR jsonb_typeof(p_specs) <> 'array' OR jsonb_array_length(p_specs) > 1000 THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = 'leasehold.declare_schedules: expected a JSON array of at most 1000 schedules.',
      HINT = 'Nothing was written.';
  END IF;
  FOR v_spec IN SELECT e FROM jsonb_array_elements(p_specs) e ORDER BY e->>'name' LOOP
    v_name := v_spec->>'name';
    v_settings := v_spec - 'name';
    SELECT * INTO s FROM leasehold.schedules x WHERE x.name = v_name FOR UPDATE;
    IF NOT FOUND OR NOT s.overridden THEN
      PERFORM leasehold.write_schedule(v_name, v_settings, 'code');
      UPDATE leasehold.schedules x SET source = 'code' WHERE x.name = v_name;
      name := v_name; applied := true;
    ELSE
      name := v_name; applied := false;
    END IF;
    UPDATE leasehold.schedules x SET declared = v_settings, declared_at = statement_timestamp() WHERE x.name = v_name;
    RETURN NEXT;
  END LOOP;
END
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."declare_schedules"(jsonb) FROM PUBLIC;
--> statement-breakpoint
-- An admin's change of a schedule (db/queue/schedules.ts): create_schedule (p_settings complete;
-- verdict `exists` when the name is taken), change_schedule (the keys given), pause_schedule,
-- resume_schedule (ticks during the pause are not run: they are not missed, they were paused),
-- reset_schedule (back to the code's declaration; verdict `not_declared` when no code declared
-- it), delete_schedule (the schedule and its ticks; one that code still declares comes back at
-- the next declaration, so take it out of the code first, or pause it). Verdict `not_found` for
-- a name without a schedule. One call writes the change and its audit row.
CREATE FUNCTION "leasehold"."set_schedule"(
  p_action text, p_name text, p_settings jsonb, p_actor text, p_reason text
) RETURNS TABLE (audit_id bigint, verdict text, before jsonb, after jsonb)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
#variable_conflict use_column
DECLARE
  s leasehold.schedules%ROWTYPE;
  v_before jsonb;
  v_after jsonb;
  v_audit bigint;
  -- Milliseconds: the worker reads ticks_after into a JavaScript Date and hands it back.
  v_now timestamptz := date_trunc('milliseconds', statement_timestamp());
BEGIN
  PERFORM leasehold.check_operator_input(p_action, ARRAY['create_schedule', 'change_schedule', 'pause_schedule',
    'resume_schedule', 'reset_schedule', 'delete_schedule'], p_actor, p_reason, NULL);
  IF p_name IS NULL OR p_name !~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$'
      OR ((p_action IN ('create_schedule', 'change_schedule')) <> (p_settings IS NOT NULL))
      OR (p_settings IS NOT NULL AND (jsonb_typeof(p_settings) <> 'object' OR p_settings ? 'name')) THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = format('leasehold: the %s action was refused: a schedule name of 1 to 128 of A-Z a-z 0-9 _ . : - and, to create or change one, its settings as a JSON object are needed.', p_action),
      HINT = 'Nothing was written.';
  END IF;
  SELECT * INTO s FROM leasehold.schedules x WHERE x.name = p_name FOR UPDATE;
  IF FOUND THEN
    v_before := leasehold.schedule_settings(s) || jsonb_build_object('paused', s.paused, 'overridden', s.overridden);
    IF p_action = 'create_schedule' THEN
      RETURN QUERY SELECT NULL::bigint, 'exists'::text, v_before, NULL::jsonb;
      RETURN;
    END IF;
  ELSIF p_action <> 'create_schedule' THEN
    RETURN QUERY SELECT NULL::bigint, 'not_found'::text, NULL::jsonb, NULL::jsonb;
    RETURN;
  END IF;
  CASE p_action
    WHEN 'create_schedule', 'change_schedule' THEN
      PERFORM leasehold.write_schedule(p_name, p_settings, 'runtime');
      UPDATE leasehold.schedules x SET overridden = true, source = coalesce(s.source, 'runtime') WHERE x.name = p_name;
    WHEN 'pause_schedule' THEN
      UPDATE leasehold.schedules x SET paused = true, paused_reason = p_reason, updated_at = v_now WHERE x.name = p_name;
    WHEN 'resume_schedule' THEN
      UPDATE leasehold.schedules x
      SET paused = false, paused_reason = NULL, ticks_after = CASE WHEN x.paused THEN greatest(x.ticks_after, v_now) ELSE x.ticks_after END,
          next_tick_at = NULL, updated_at = v_now
      WHERE x.name = p_name;
    WHEN 'reset_schedule' THEN
      IF s.declared IS NULL THEN
        RETURN QUERY SELECT NULL::bigint, 'not_declared'::text, v_before, NULL::jsonb;
        RETURN;
      END IF;
      PERFORM leasehold.write_schedule(p_name, s.declared, 'code');
      UPDATE leasehold.schedules x SET overridden = false, source = 'code' WHERE x.name = p_name;
    WHEN 'delete_schedule' THEN
      DELETE FROM leasehold.schedules x WHERE x.name = p_name;
      DELETE FROM leasehold.schedule_ticks t WHERE t.schedule = p_name;
  END CASE;
  SELECT leasehold.schedule_settings(x) || jsonb_build_object('paused', x.paused, 'overridden', x.overridden)
  INTO v_after FROM leasehold.schedules x WHERE x.name = p_name;
  INSERT INTO leasehold.audit_log (actor, action, requested, affected, outcome, detail)
  VALUES (p_actor, p_action, 1, 1, 'applied',
          jsonb_build_object('reason', p_reason, 'schedule', p_name, 'before', v_before, 'after', v_after))
  RETURNING id INTO v_audit;
  RETURN QUERY SELECT v_audit, 'applied'::text, v_before, v_after;
END
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."set_schedule"(text, text, jsonb, text, text) FROM PUBLIC;
