-- leasehold:schema-version 14
-- leasehold:compatible-from 1
-- Rate limits, pauses and run-time changes through the dashboard's role (issue 36;
-- db/queue/limits.ts, docs/flow-control.md). A limit may now also cap job starts per interval
-- (`declared_rate` per `declared_per_ms`, `set_rate` per `set_per_ms` at run time): a sliding
-- window, whose log is `limit_starts` (a row per rate-limited claim statement, `n` jobs at `at`,
-- kept one interval). A handler's RateLimitedError pauses its limit until `paused_until`.
-- `kinds` records which kinds the workers declare to count toward a limit, so the dashboard and
-- the API can say why a job waits. Expanding: code before 14 ignores rates and pauses, and
-- setting a run-time rate is refused while such a worker is live (docs/versioning.md).
CREATE TABLE "leasehold"."limit_starts" (
	"limit_key" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"n" integer NOT NULL,
	CONSTRAINT "limit_starts_pkey" PRIMARY KEY("limit_key","at")
);
--> statement-breakpoint
ALTER TABLE "leasehold"."limits" ADD COLUMN "declared_rate" integer;--> statement-breakpoint
ALTER TABLE "leasehold"."limits" ADD COLUMN "declared_per_ms" integer;--> statement-breakpoint
ALTER TABLE "leasehold"."limits" ADD COLUMN "set_rate" integer;--> statement-breakpoint
ALTER TABLE "leasehold"."limits" ADD COLUMN "set_per_ms" integer;--> statement-breakpoint
ALTER TABLE "leasehold"."limits" ADD COLUMN "paused_until" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "leasehold"."limits" ADD COLUMN "paused_reason" text;--> statement-breakpoint
ALTER TABLE "leasehold"."limits" ADD COLUMN "kinds" text[];--> statement-breakpoint
ALTER TABLE "leasehold"."limits" ADD CONSTRAINT "limits_rate_check" CHECK (declared_rate >= 1 AND declared_per_ms >= 1 AND set_rate >= 1 AND set_per_ms >= 1
          AND (declared_rate IS NULL) = (declared_per_ms IS NULL) AND (set_rate IS NULL) = (set_per_ms IS NULL));
--> statement-breakpoint
-- An admin's (or the API's, or the CLI's) run-time change of a limit (setLimit): its maximum
-- (p_set_max), its rate (p_set_rate), or both; a NULL value clears the run-time value, so the
-- handlers' declaration applies again; p_resume lifts a RateLimitedError's pause. One statement
-- writes the change and its `set_limit` audit row. Refused without writing anything: any
-- change of a limit no worker declared (verdict not_declared), or while a live worker (seen within 60 s, LIVE_WORKER_SECONDS) runs
-- code older than what enforces it (verdict old_workers, naming them): 13 for a maximum, 14 for
-- a rate. The dashboard's role may call it; it has no write grant on `limits` itself.
CREATE FUNCTION "leasehold"."set_limit"(
  p_scope text, p_name text, p_set_max boolean, p_max integer, p_set_rate boolean, p_rate integer, p_per_ms integer,
  p_resume boolean, p_actor text, p_reason text
) RETURNS TABLE (audit_id bigint, verdict text, old_workers text[], before jsonb, after jsonb)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
#variable_conflict use_column
DECLARE
  v_key text := p_scope || ':' || p_name;
  v_old text[];
  v_needs integer;
  v_before jsonb;
  v_after jsonb;
  v_audit bigint;
BEGIN
  PERFORM leasehold.check_operator_input('set_limit', ARRAY['set_limit'], p_actor, p_reason, NULL);
  IF p_scope IS NULL OR p_scope NOT IN ('queue', 'kind', 'resource') OR p_name IS NULL
      OR p_name !~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$' OR NOT (coalesce(p_set_max, false) OR coalesce(p_set_rate, false) OR coalesce(p_resume, false))
      OR (p_set_max AND p_max IS NOT NULL AND p_max NOT BETWEEN 1 AND 1000000)
      OR (p_set_rate AND ((p_rate IS NULL) <> (p_per_ms IS NULL)
          OR p_rate NOT BETWEEN 1 AND 1000000 OR p_per_ms NOT BETWEEN 1 AND 86400000)) THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = 'leasehold: the set_limit action was refused: a scope (queue, kind, resource), a name, and a maximum of 1 to 1,000,000 or a rate of 1 to 1,000,000 starts per 1 ms to 24 h are needed.',
      HINT = 'Nothing was written.';
  END IF;
  -- Any change needs a declaration (no worker would enforce a value otherwise, and a clear of a
  -- limit nobody declared would leave a row of a typo); a new value, no live worker too old for it.
  IF NOT EXISTS (SELECT 1 FROM leasehold.limits WHERE key = v_key AND declared_at IS NOT NULL) THEN
    RETURN QUERY SELECT NULL::bigint, 'not_declared'::text, NULL::text[], NULL::jsonb, NULL::jsonb;
    RETURN;
  END IF;
  IF (p_set_max AND p_max IS NOT NULL) OR (p_set_rate AND p_rate IS NOT NULL) THEN
    v_needs := CASE WHEN p_set_rate AND p_rate IS NOT NULL THEN 14 ELSE 13 END;
    SELECT array_agg(w.id || ' (' || w.host || ' pid ' || w.pid || ')' ORDER BY w.id) INTO v_old
    FROM leasehold.workers w
    WHERE w.last_seen_at > statement_timestamp() - interval '60 seconds'
      AND (w.code_version IS NULL OR w.code_version < v_needs);
    IF v_old IS NOT NULL THEN
      RETURN QUERY SELECT NULL::bigint, 'old_workers'::text, v_old, NULL::jsonb, NULL::jsonb;
      RETURN;
    END IF;
  END IF;
  SELECT jsonb_build_object('max', l.set_max, 'rate', l.set_rate, 'per_ms', l.set_per_ms,
                            'paused_until', CASE WHEN l.paused_until > statement_timestamp() THEN l.paused_until END)
  INTO v_before
  FROM leasehold.limits l WHERE l.key = v_key FOR UPDATE;
  UPDATE leasehold.limits l SET
    set_max = CASE WHEN p_set_max THEN p_max ELSE l.set_max END,
    set_rate = CASE WHEN p_set_rate THEN p_rate ELSE l.set_rate END,
    set_per_ms = CASE WHEN p_set_rate THEN p_per_ms ELSE l.set_per_ms END,
    paused_until = CASE WHEN p_resume THEN NULL ELSE l.paused_until END,
    paused_reason = CASE WHEN p_resume THEN NULL ELSE l.paused_reason END,
    set_at = statement_timestamp(), set_by = p_actor
  WHERE l.key = v_key;
  SELECT jsonb_build_object('max', l.set_max, 'rate', l.set_rate, 'per_ms', l.set_per_ms,
                            'paused_until', CASE WHEN l.paused_until > statement_timestamp() THEN l.paused_until END)
  INTO v_after
  FROM leasehold.limits l WHERE l.key = v_key;
  INSERT INTO leasehold.audit_log (actor, action, requested, affected, outcome, detail)
  VALUES (p_actor, 'set_limit', 1, 1, 'applied',
          jsonb_build_object('reason', p_reason, 'limit', v_key, 'before', v_before, 'after', v_after))
  RETURNING id INTO v_audit;
  RETURN QUERY SELECT v_audit, 'applied'::text, NULL::text[], v_before, v_after;
END
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."set_limit"(text, text, boolean, integer, boolean, integer, integer, boolean, text, text) FROM PUBLIC;
