-- leasehold:schema-version 20
-- leasehold:compatible-from 1
-- Health and alerts (issue 41; docs/operations.md, "Reading the health page"; db/queue/alerts.ts).
-- `queue_alerts`: an admin's run-time backlog-alert thresholds per queue (the oldest due ready
-- job's age in seconds, the dead jobs, the ready jobs no live worker runs), written only by
-- `set_queue_alert` with its audit row; the configuration's thresholds (LEASEHOLD_QUEUE_ALERTS)
-- stay in the environment. `workers.schema_from`: the oldest schema version a worker's code
-- reads, so the workers page shows each worker's range during a rolling deploy.
-- Expanding: an older worker leaves schema_from NULL, and nothing older reads queue_alerts.
CREATE TABLE "leasehold"."queue_alerts" (
	"queue" text NOT NULL,
	"alert" text NOT NULL,
	"threshold" double precision NOT NULL,
	"set_at" timestamp with time zone DEFAULT now() NOT NULL,
	"set_by" text NOT NULL,
	CONSTRAINT "queue_alerts_pkey" PRIMARY KEY("queue","alert"),
	CONSTRAINT "queue_alerts_alert_check" CHECK (alert IN ('oldest_ready_age_seconds', 'dead', 'waiting_for_kind')),
	CONSTRAINT "queue_alerts_threshold_check" CHECK (threshold > 0 AND threshold <= 1e12)
);
--> statement-breakpoint
ALTER TABLE "leasehold"."workers" ADD COLUMN "schema_from" integer;

--> statement-breakpoint
-- An admin's backlog-alert threshold (setQueueAlert, db/queue/alerts.ts): sets (p_threshold > 0)
-- or clears (NULL) queue p_queue's threshold for figure p_alert, with its audit row (who, why,
-- before and after) in the same transaction. Refused without writing anything: an unknown
-- figure, a threshold that is not > 0 and at most 1e12, and a queue that does not exist (no
-- queue row, no job, no live worker serving it).
CREATE FUNCTION "leasehold"."set_queue_alert"(
  p_queue text, p_alert text, p_threshold double precision, p_actor text, p_reason text
) RETURNS TABLE (audit_id bigint, before double precision, after double precision)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
#variable_conflict use_column
DECLARE
  v_before double precision;
  v_audit bigint;
BEGIN
  PERFORM leasehold.check_operator_input('set_queue_alert', ARRAY['set_queue_alert'], p_actor, p_reason, NULL);
  IF p_alert IS NULL OR p_alert NOT IN ('oldest_ready_age_seconds', 'dead', 'waiting_for_kind') THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = format('leasehold: the set_queue_alert action was refused: the alert must be oldest_ready_age_seconds, dead or waiting_for_kind, not %L.', p_alert),
      HINT = 'Nothing was written.';
  END IF;
  IF p_threshold IS NOT NULL AND (p_threshold = 'NaN'::double precision OR p_threshold <= 0 OR p_threshold > 1e12) THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = format('leasehold: the set_queue_alert action was refused: a threshold must be more than 0 and at most 1e12, not %s.', p_threshold),
      HINT = 'Nothing was written.';
  END IF;
  IF p_queue IS NULL OR NOT (
      EXISTS (SELECT 1 FROM leasehold.queues q WHERE q.name = p_queue)
      OR EXISTS (SELECT 1 FROM leasehold.jobs j WHERE j.queue = p_queue)
      OR EXISTS (SELECT 1 FROM leasehold.workers w
                 WHERE p_queue = ANY (w.queues) AND w.last_seen_at > statement_timestamp() - interval '60 seconds')) THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = format('leasehold: the set_queue_alert action was refused: queue %L does not exist (no job, no live worker serves it).', p_queue),
      HINT = 'Nothing was written.';
  END IF;
  SELECT a.threshold INTO v_before FROM leasehold.queue_alerts a
  WHERE a.queue = p_queue AND a.alert = p_alert FOR UPDATE;
  IF p_threshold IS NULL THEN
    DELETE FROM leasehold.queue_alerts a WHERE a.queue = p_queue AND a.alert = p_alert;
  ELSE
    INSERT INTO leasehold.queue_alerts AS a (queue, alert, threshold, set_at, set_by)
    VALUES (p_queue, p_alert, p_threshold, statement_timestamp(), p_actor)
    ON CONFLICT (queue, alert) DO UPDATE SET threshold = excluded.threshold, set_at = excluded.set_at, set_by = excluded.set_by;
  END IF;
  INSERT INTO leasehold.audit_log (actor, action, queue, requested, affected, outcome, detail)
  VALUES (p_actor, 'set_queue_alert', p_queue, 1, 1, 'applied',
          jsonb_build_object('reason', p_reason, 'queue', p_queue, 'alert', p_alert, 'before', v_before, 'after', p_threshold))
  RETURNING id INTO v_audit;
  RETURN QUERY SELECT v_audit, v_before, p_threshold;
END
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."set_queue_alert"(text, text, double precision, text, text) FROM PUBLIC;
