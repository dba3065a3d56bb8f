-- The failure harness's own schema (never part of the product's migrations).
-- A lease log kept by a trigger on jobs, whose exclusion constraint makes two valid leases of
-- one job at one instant impossible to record silently; the ledger of handler executions; and
-- a sink fenced by the attempt number.
CREATE EXTENSION IF NOT EXISTS btree_gist;
CREATE SCHEMA IF NOT EXISTS chaos;

-- One row per (token, job): the jobs of one claim share its token.
CREATE TABLE IF NOT EXISTS chaos.lease_log (
  token uuid NOT NULL,
  job_id uuid NOT NULL,
  attempt int NOT NULL,
  valid tstzrange NOT NULL,
  deadline timestamptz NOT NULL,
  PRIMARY KEY (token, job_id),
  EXCLUDE USING gist (job_id WITH =, valid WITH &&)
);

CREATE OR REPLACE FUNCTION chaos.track_lease() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.lease_token IS NOT NULL AND NEW.lease_token IS DISTINCT FROM OLD.lease_token THEN
    -- The lease ended (settled, reaped, released, cancelled: the token went): it was valid until
    -- now, or until its deadline if that came first. A new token on a job that kept one is no
    -- end: nothing settled the old lease, a claim took the job from under it, so the old lease
    -- stays valid until its deadline and the new one overlaps it (the exclusion constraint
    -- refuses the claim, and the harness counts it).
    -- The deadline is the effective one: the job's own, or its worker's lease while that
    -- covered the job's claim (drizzle/0015; the reaper keeps an ended worker lease until its
    -- claims are gone, so it is still there to read).
    UPDATE chaos.lease_log
       SET valid = tstzrange(lower(valid), greatest(lower(valid),
                     CASE WHEN NEW.lease_token IS NULL
                          THEN least(leasehold.effective_lease_until(OLD.lease_until, OLD.lease_token, OLD.queue), statement_timestamp())
                          ELSE leasehold.effective_lease_until(OLD.lease_until, OLD.lease_token, OLD.queue) END)),
           deadline = leasehold.effective_lease_until(OLD.lease_until, OLD.lease_token, OLD.queue)
     WHERE token = OLD.lease_token AND job_id = OLD.id;
  END IF;
  IF NEW.lease_token IS NOT NULL AND NEW.lease_token IS DISTINCT FROM OLD.lease_token THEN
    INSERT INTO chaos.lease_log (token, job_id, attempt, valid, deadline)
    VALUES (NEW.lease_token, NEW.id, NEW.attempts, tstzrange(statement_timestamp(), NEW.lease_until), NEW.lease_until);
  ELSIF NEW.lease_token IS NOT NULL AND NEW.lease_until IS DISTINCT FROM OLD.lease_until THEN
    UPDATE chaos.lease_log SET valid = tstzrange(lower(valid), NEW.lease_until), deadline = NEW.lease_until
     WHERE token = NEW.lease_token AND job_id = NEW.id;
  END IF;
  RETURN NEW;
END $$;

DROP TRIGGER IF EXISTS chaos_track_lease ON leasehold.jobs;
CREATE TRIGGER chaos_track_lease AFTER UPDATE OF lease_token, lease_until ON leasehold.jobs
  FOR EACH ROW EXECUTE FUNCTION chaos.track_lease();

-- Every handler execution, start and end (end stays NULL when the process died during it).
CREATE TABLE IF NOT EXISTS chaos.effects (
  job_id uuid NOT NULL,
  attempt int NOT NULL,
  lease_token uuid NOT NULL,
  pid int NOT NULL,
  started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  ended_at timestamptz,
  -- The worker's own clock (Date.now()) when the handler started: clock-skew measures the
  -- offset applied to the worker against started_at, the database's clock.
  worker_clock timestamptz
);
CREATE INDEX IF NOT EXISTS effects_job_idx ON chaos.effects (job_id);
-- When the execution's signal fired (its attempt stopped), by the handler's clock; NULL: never.
ALTER TABLE chaos.effects ADD COLUMN IF NOT EXISTS aborted_at timestamptz;

-- The side effects run under receipt() (deaf-handlers): one row per call of the effect.
CREATE TABLE IF NOT EXISTS chaos.receipt_effects (
  key text NOT NULL,
  job_id uuid NOT NULL,
  attempt int NOT NULL,
  pid int NOT NULL,
  at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- The outside system: one effect per job (delivery key = job id), fenced by the attempt: a
-- write from an attempt older than one already seen is refused.
CREATE TABLE IF NOT EXISTS chaos.sink (
  job_id uuid PRIMARY KEY,
  highest_attempt int NOT NULL,
  replays int NOT NULL DEFAULT 0,
  fenced int NOT NULL DEFAULT 0
);

-- Enqueues that the harness believes committed (for the idempotency-key scenario).
CREATE TABLE IF NOT EXISTS chaos.committed_keys (key text PRIMARY KEY);

-- Uniqueness keys (the unique scenario): each job's time as its key's holder, by the database's
-- clock read inside the statements that changed it. A hold begins when a job with a key is
-- inserted (or comes back from an end: an operator's retry), after the enqueue's
-- take_unique_key saw the previous holder's end committed; it ends when the job leaves ready
-- and running (done, dead, cancelled), before that statement commits. So a key handed on
-- properly leaves holds one after another, and two holds of one key that overlap are two jobs
-- of it waiting or running at once. (A job's created_at is its transaction's start, and its
-- finished_at its settlement's statement time: a producer whose transaction began before the
-- holder ended, and that took the key after, has created_at < the holder's finished_at.) Every
-- state a job waits or runs in is one of the four `while` states, so this models `while` = all
-- four, as the scenario enqueues.
CREATE TABLE IF NOT EXISTS chaos.unique_holds (
  key text NOT NULL,
  job_id uuid NOT NULL,
  held_from timestamptz NOT NULL,
  held_until timestamptz
);
CREATE INDEX IF NOT EXISTS unique_holds_open_idx ON chaos.unique_holds (job_id) WHERE held_until IS NULL;

CREATE OR REPLACE FUNCTION chaos.track_unique_hold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' OR NEW.state IN ('ready', 'running') THEN
    INSERT INTO chaos.unique_holds (key, job_id, held_from) VALUES (NEW.options->>'uniqueKey', NEW.id, clock_timestamp());
  ELSE
    UPDATE chaos.unique_holds SET held_until = clock_timestamp() WHERE job_id = NEW.id AND held_until IS NULL;
  END IF;
  RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS chaos_unique_hold_insert ON leasehold.jobs;
CREATE TRIGGER chaos_unique_hold_insert AFTER INSERT ON leasehold.jobs
  FOR EACH ROW WHEN (NEW.options ? 'uniqueKey' AND NEW.state IN ('ready', 'running'))
  EXECUTE FUNCTION chaos.track_unique_hold();
-- Only a change into or out of ready and running (a claim, a retry after a failure or a reap, a
-- replace or debounce of a waiting holder change nothing here).
DROP TRIGGER IF EXISTS chaos_unique_hold_state ON leasehold.jobs;
CREATE TRIGGER chaos_unique_hold_state AFTER UPDATE OF state ON leasehold.jobs
  FOR EACH ROW WHEN (NEW.options ? 'uniqueKey'
                     AND (OLD.state IN ('ready', 'running')) IS DISTINCT FROM (NEW.state IN ('ready', 'running')))
  EXECUTE FUNCTION chaos.track_unique_hold();

-- What each producer's enqueue with a uniqueness key answered, written in the enqueue's own
-- transaction (so it commits or rolls back with it): the key, its mode, the answer and the job
-- it named, the payload sent, and the transaction's start and this row's time.
CREATE TABLE IF NOT EXISTS chaos.unique_answers (
  seq bigserial PRIMARY KEY,
  key text NOT NULL,
  mode text NOT NULL,
  action text NOT NULL,
  job_id uuid NOT NULL,
  payload jsonb NOT NULL,
  began timestamptz NOT NULL DEFAULT now(),
  at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS unique_answers_job_idx ON chaos.unique_answers (job_id);
