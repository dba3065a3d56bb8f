-- leasehold:schema-version 16
-- leasehold:compatible-from 1
-- Per-group limits and paused groups (issue 37; docs/flow-control.md, "Per-group limits";
-- db/queue/group-limits.ts). `group_limits` holds, per queue, the default maximum of running
-- attempts for each group (the row of group key '') and each named group's own maximum or
-- pause; `group_claims` says which jobs each claim of a limited queue took for each group, so a
-- group's running attempts are counted from the jobs' own state. The grouped claim locks the
-- queue's '' row first (leasehold.lock_group_limits), then claims in a statement of its own.
-- Expanding: nothing before reads these. A worker of schema version 15 claims grouped jobs
-- without them, so set_group_limit refuses a maximum or a pause while one is live.
CREATE TABLE "leasehold"."group_claims" (
	"queue" text NOT NULL,
	"group_key" text NOT NULL,
	"token" uuid NOT NULL,
	"job_ids" uuid[] NOT NULL,
	CONSTRAINT "group_claims_pkey" PRIMARY KEY("queue","group_key","token")
);
--> statement-breakpoint
CREATE TABLE "leasehold"."group_limits" (
	"queue" text NOT NULL,
	"group_key" text NOT NULL,
	"max" integer,
	"paused" boolean DEFAULT false NOT NULL,
	"paused_reason" text,
	"set_at" timestamp with time zone NOT NULL,
	"set_by" text NOT NULL,
	CONSTRAINT "group_limits_pkey" PRIMARY KEY("queue","group_key"),
	CONSTRAINT "group_limits_max_check" CHECK (max BETWEEN 1 AND 1000000),
	CONSTRAINT "group_limits_key_check" CHECK (length(group_key) <= 256 AND (group_key <> '' OR NOT paused))
);

--> statement-breakpoint
-- The grouped claim's first statement (db/queue/claim.ts): locks the '' rows of the queues
-- given, in queue order, until the caller's transaction ends, and returns those queues (the
-- ones with group limits). A function so that the worker's role needs no write right on
-- group_limits to lock it.
CREATE FUNCTION "leasehold"."lock_group_limits"(p_queues text[]) RETURNS SETOF text
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
  SELECT g.queue FROM leasehold.group_limits g
  WHERE g.queue = ANY (p_queues) AND g.group_key = ''
  ORDER BY g.queue
  FOR UPDATE
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."lock_group_limits"(text[]) FROM PUBLIC;
--> statement-breakpoint
-- An admin's or operator's change of a queue's group limits (setGroupLimit, pauseGroup,
-- resumeGroup): p_action `set_group_limit` sets the maximum of group p_group (NULL: the default
-- for each group of the queue; p_max NULL clears it), `pause_group` and `resume_group` pause
-- and resume one group. One call writes the change and its audit row (the action, who, why, the
-- values before and after). Refused without writing anything: bad input (an exception), and a
-- maximum or a pause while a live worker (seen within 60 s) runs code older than schema 16
-- (verdict old_workers, naming them: such a worker claims grouped jobs without looking).
-- The first row of a queue counts what its groups run already (from the lease rows, once the
-- grouped claims in flight have committed), so a limit set while a group runs jobs holds from
-- the next claim.
CREATE FUNCTION "leasehold"."set_group_limit"(
  p_action text, p_queue text, p_group text, p_max integer, p_actor text, p_reason text
) RETURNS TABLE (audit_id bigint, verdict text, old_workers text[], before jsonb, after jsonb)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
#variable_conflict use_column
DECLARE
  v_key text := coalesce(p_group, '');
  v_old text[];
  v_before jsonb;
  v_after jsonb;
  v_audit bigint;
  v_new integer;
  v_timeout text;
BEGIN
  PERFORM leasehold.check_operator_input(p_action, ARRAY['set_group_limit', 'pause_group', 'resume_group'], p_actor, p_reason, NULL);
  IF p_queue IS NULL OR p_queue !~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$'
      OR (p_group IS NOT NULL AND (length(p_group) NOT BETWEEN 1 AND 256))
      OR (p_action <> 'set_group_limit' AND p_group IS NULL)
      OR (p_action = 'set_group_limit' AND p_max IS NOT NULL AND p_max NOT BETWEEN 1 AND 1000000)
      OR (p_action <> 'set_group_limit' AND p_max IS NOT NULL) THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = format('leasehold: the %s action was refused: a queue name, a group key of 1 to 256 characters (for a pause or a resume), and a maximum of 1 to 1,000,000 or none are needed.', p_action),
      HINT = 'Nothing was written.';
  END IF;
  IF (p_action = 'set_group_limit' AND p_max IS NOT NULL) OR p_action = 'pause_group' THEN
    SELECT array_agg(w.id || ' (' || w.host || ' pid ' || w.pid || ')' ORDER BY w.id) INTO v_old
    FROM leasehold.workers w
    WHERE w.last_seen_at > statement_timestamp() - interval '60 seconds'
      AND (w.code_version IS NULL OR w.code_version < 16);
    IF v_old IS NOT NULL THEN
      RETURN QUERY SELECT NULL::bigint, 'old_workers'::text, v_old, NULL::jsonb, NULL::jsonb;
      RETURN;
    END IF;
  END IF;
  -- The queue's first limit: a grouped claim in flight took its snapshot before this row
  -- existed, so it neither locks nor counts it, and its lease rows are not yet visible to the
  -- count of what runs below. Every such claim holds grouped_ready_jobs (ROW EXCLUSIVE, taken
  -- before its snapshot), so a SHARE lock waits for the ones in flight and holds back new ones
  -- until this commits, when they see the row. At most 5 s: a transaction that enqueues grouped
  -- jobs holds the table too, and nothing should queue behind a long one.
  IF NOT EXISTS (SELECT 1 FROM leasehold.group_limits g WHERE g.queue = p_queue AND g.group_key = '') THEN
    v_timeout := current_setting('lock_timeout');
    PERFORM set_config('lock_timeout', '5s', true);
    BEGIN
      LOCK TABLE leasehold.grouped_ready_jobs IN SHARE MODE;
    EXCEPTION WHEN lock_not_available THEN
      RAISE EXCEPTION USING ERRCODE = 'lock_not_available',
        MESSAGE = format('leasehold: the %s action was refused: the first group limit of queue %s waits for the grouped claims and enqueues in flight, and one held them for 5 s.', p_action, p_queue),
        HINT = 'Nothing was written. Try again; a long transaction that enqueues grouped jobs holds them.';
    END;
    PERFORM set_config('lock_timeout', v_timeout, true);
  END IF;
  -- The queue's '' row first (the claims' lock), then the group's: always in this order.
  INSERT INTO leasehold.group_limits AS g (queue, group_key, set_at, set_by)
  VALUES (p_queue, '', statement_timestamp(), p_actor)
  ON CONFLICT (queue, group_key) DO NOTHING;
  GET DIAGNOSTICS v_new = ROW_COUNT;
  PERFORM 1 FROM leasehold.group_limits g WHERE g.queue = p_queue AND g.group_key = '' FOR UPDATE;
  IF v_new > 0 THEN
    -- What the queue's groups run already: the jobs of its lease rows still running under them.
    INSERT INTO leasehold.group_claims (queue, group_key, token, job_ids)
    SELECT p_queue, j.group_key, l.token, array_agg(j.id)
    FROM leasehold.leases l
    CROSS JOIN LATERAL unnest(l.job_ids) AS u(id)
    JOIN leasehold.jobs j ON j.id = u.id AND j.lease_token = l.token AND j.state = 'running'
    WHERE l.queue = p_queue AND l.running > 0 AND j.group_key IS NOT NULL
    GROUP BY j.group_key, l.token
    ON CONFLICT DO NOTHING;
  END IF;
  SELECT jsonb_build_object('max', g.max, 'paused', g.paused) INTO v_before
  FROM leasehold.group_limits g WHERE g.queue = p_queue AND g.group_key = v_key FOR UPDATE;
  v_before := coalesce(v_before, jsonb_build_object('max', NULL, 'paused', false));
  INSERT INTO leasehold.group_limits AS g (queue, group_key, max, paused, paused_reason, set_at, set_by)
  VALUES (p_queue, v_key, CASE WHEN p_action = 'set_group_limit' THEN p_max END, p_action = 'pause_group',
          CASE WHEN p_action = 'pause_group' THEN p_reason END, statement_timestamp(), p_actor)
  ON CONFLICT (queue, group_key) DO UPDATE SET
    max = CASE WHEN p_action = 'set_group_limit' THEN p_max ELSE g.max END,
    paused = CASE p_action WHEN 'pause_group' THEN true WHEN 'resume_group' THEN false ELSE g.paused END,
    paused_reason = CASE p_action WHEN 'pause_group' THEN p_reason WHEN 'resume_group' THEN NULL ELSE g.paused_reason END,
    set_at = statement_timestamp(), set_by = p_actor;
  SELECT jsonb_build_object('max', g.max, 'paused', g.paused) INTO v_after
  FROM leasehold.group_limits g WHERE g.queue = p_queue AND g.group_key = v_key;
  -- Rows that limit nothing go: a group's without a maximum or a pause, then the queue's ''
  -- row when it has no maximum and no group row is left (its claims go unlocked again).
  DELETE FROM leasehold.group_limits g
  WHERE g.queue = p_queue AND g.group_key <> '' AND g.max IS NULL AND NOT g.paused;
  DELETE FROM leasehold.group_limits g
  WHERE g.queue = p_queue AND g.group_key = '' AND g.max IS NULL
    AND NOT EXISTS (SELECT 1 FROM leasehold.group_limits o WHERE o.queue = p_queue AND o.group_key <> '');
  IF NOT EXISTS (SELECT 1 FROM leasehold.group_limits g WHERE g.queue = p_queue) THEN
    DELETE FROM leasehold.group_claims x WHERE x.queue = p_queue;
  END IF;
  INSERT INTO leasehold.audit_log (actor, action, requested, affected, outcome, detail)
  VALUES (p_actor, p_action, 1, 1, 'applied',
          jsonb_build_object('reason', p_reason, 'queue', p_queue, 'group', p_group, 'before', v_before, 'after', v_after))
  RETURNING id INTO v_audit;
  RETURN QUERY SELECT v_audit, 'applied'::text, NULL::text[], v_before, v_after;
END
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."set_group_limit"(text, text, text, integer, text, text) FROM PUBLIC;
