-- leasehold:schema-version 11
-- leasehold:compatible-from 1
-- The claim index's readers moved (issue 35, item 3): no statement of this release reads
-- `ready_jobs_claim_idx` (queue, claim time) any more, so a later release can drop it
-- (drizzle/contracting/, BREAKING: about 117 bytes of WAL a job at enqueue). Expanding: code of
-- versions 1 to 10 keeps running on it; its any-kind claim still walks the index, which stays.
--
-- - jobs_ready_row (the ready-row trigger of 0001, as 0003 left it): the DELETE of a ready row
--   that stops being ready finds it through the kind index, (kind, kind_version, queue,
--   claim_at, id). A job's kind and kind version never change, and its ready row is written
--   with them (jobs_inserted_ready_rows, and the INSERT below), so the keys are the row's.
-- - operator_cancel (0011): its `ready_gone` finds the ready rows of the jobs it cancels the
--   same way.
-- - The any-kind claim (db/queue/transitions/claim.ts) finds the kind versions present by a
--   loose walk of the kind index and walks each as an arm; the testing kit's claim of one job
--   joins by the kind index too. Neither is SQL of this migration.
--
-- CREATE OR REPLACE keeps each function's owner, grants, SECURITY DEFINER and triggers.
CREATE OR REPLACE FUNCTION "leasehold"."jobs_ready_row"() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
  IF OLD.state = 'ready' THEN
    DELETE FROM leasehold.ready_jobs
    WHERE kind = OLD.kind AND kind_version = OLD.kind_version
      AND queue = OLD.queue AND claim_at = OLD.claim_at AND id = OLD.id;
  END IF;
  IF NEW.state = 'ready' THEN
    INSERT INTO leasehold.ready_jobs (queue, claim_at, run_at, id, kind, attempts, kind_version)
    VALUES (NEW.queue, NEW.claim_at, NEW.run_at, NEW.id, NEW.kind, NEW.attempts, NEW.kind_version);
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
-- ready -> cancelled, running -> cancelled with the lease token the operator saw (0011's, the
-- ready rows found by the kind index).
CREATE OR REPLACE FUNCTION "leasehold"."operator_cancel"(p_action text, p_actor text, p_reason text, p_ids uuid[], p_tokens uuid[])
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
          AND r.kind = j.kind AND r.kind_version = j.kind_version
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
