-- leasehold:schema-version 1
-- leasehold:compatible-from 1
-- What drizzle-kit cannot declare: storage parameters, INCLUDE indexes, and the triggers that
-- keep the invariants spanning tables for writes from outside the library. Layout and reasons:
-- docs/design/schema-v1.md.

-- Room for two more versions of every row on its own page, without relying on pruning (which
-- concurrent sessions deny): claim, heartbeats and the acknowledgement stay HOT updates. At 40,
-- four concurrent drains got 64 % HOT; at 25, 100 %.
ALTER TABLE "leasehold"."jobs" SET (fillfactor = 25);
--> statement-breakpoint
-- The claimable set and the leases churn (a row per job, a row per claim): vacuum them early.
ALTER TABLE "leasehold"."ready_jobs" SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_insert_scale_factor = 0.01);
--> statement-breakpoint
ALTER TABLE "leasehold"."leases" SET (fillfactor = 50, autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 200);
--> statement-breakpoint
-- The dashboard's failure panels read the last day's attempts as index-only scans.
CREATE INDEX "job_attempts_ended_idx" ON "leasehold"."job_attempts" USING btree ("ended_at")
  INCLUDE ("outcome", "failure_class", "queue");
--> statement-breakpoint
CREATE INDEX "job_attempts_failed_idx" ON "leasehold"."job_attempts" USING btree ("ended_at")
  INCLUDE ("failure_class", "queue")
  WHERE outcome <> 'completed';
--> statement-breakpoint
-- Every inserted ready job gets its ready row, whoever inserts it: one set-based INSERT per
-- statement (a row trigger would cost a function call per job of a 100,000-job enqueue).
CREATE FUNCTION "leasehold"."jobs_inserted_ready_rows"() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
  INSERT INTO leasehold.ready_jobs (queue, claim_at, run_at, id, kind, attempts)
  SELECT n.queue, n.claim_at, n.run_at, n.id, n.kind, n.attempts FROM new_jobs n WHERE n.state = 'ready';
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "jobs_inserted_ready_rows" AFTER INSERT ON "leasehold"."jobs"
  REFERENCING NEW TABLE AS new_jobs FOR EACH STATEMENT EXECUTE FUNCTION "leasehold"."jobs_inserted_ready_rows"();
--> statement-breakpoint
-- Every UPDATE that makes a job ready, or moves a ready job's run time, writes its ready row;
-- every UPDATE that moves a ready job elsewhere than `running` (or moves it) deletes the old
-- one: a retry, a release, the reaper, an operator's retry or cancel, and a plain SQL UPDATE
-- from outside. So the ready rows stay exactly the ready jobs, and a claim is never short of
-- rows because stale ones filled its LIMIT. The claim (ready -> running, it deletes the rows it
-- takes) and the acknowledgement never match the WHEN clause, so they queue no trigger event.
-- Lock order: the library's statements delete a ready row before they lock its job (as the
-- claim does), so the DELETE here finds nothing for them; for a writer from outside it may
-- wait on a claim that holds the row, which PostgreSQL resolves as a deadlock (one retries).
CREATE FUNCTION "leasehold"."jobs_ready_row"() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
  IF OLD.state = 'ready' THEN
    DELETE FROM leasehold.ready_jobs WHERE queue = OLD.queue AND claim_at = OLD.claim_at AND id = OLD.id;
  END IF;
  IF NEW.state = 'ready' THEN
    INSERT INTO leasehold.ready_jobs (queue, claim_at, run_at, id, kind, attempts)
    VALUES (NEW.queue, NEW.claim_at, NEW.run_at, NEW.id, NEW.kind, NEW.attempts);
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "jobs_ready_row" AFTER UPDATE OF state, run_at, claim_at, queue ON "leasehold"."jobs"
  FOR EACH ROW WHEN (
    (NEW.state = 'ready' AND (OLD.state <> 'ready' OR OLD.run_at IS DISTINCT FROM NEW.run_at
                              OR OLD.claim_at IS DISTINCT FROM NEW.claim_at OR OLD.queue IS DISTINCT FROM NEW.queue))
    OR (OLD.state = 'ready' AND NEW.state NOT IN ('ready', 'running')))
  EXECUTE FUNCTION "leasehold"."jobs_ready_row"();
--> statement-breakpoint
-- A running job's deadline moved earlier (only ever from outside: a heartbeat only extends):
-- its lease row's deadline follows, so the reaper, which walks the lease rows, still finds it.
CREATE FUNCTION "leasehold"."jobs_lease_moved_earlier"() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
  UPDATE leasehold.leases SET lease_until = NEW.lease_until
  WHERE token = NEW.lease_token AND queue = NEW.queue AND lease_until > NEW.lease_until;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "jobs_lease_moved_earlier" AFTER UPDATE OF lease_until ON "leasehold"."jobs"
  FOR EACH ROW WHEN (NEW.lease_until < OLD.lease_until)
  EXECUTE FUNCTION "leasehold"."jobs_lease_moved_earlier"();
