-- leasehold:schema-version 10
-- leasehold:compatible-from 1
-- Worker leases (issue 35): a heartbeat renews one row per worker process instead of every
-- running job's row. Expanding: code of versions 1 to 9 keeps running on it. Its workers never
-- write a worker lease, so their claims are never covered by one and their jobs keep the
-- deadline their heartbeats write on the job rows; its reapers walk only the lease rows whose
-- own deadline passed, so while such a reaper may run, new workers also move the lease rows of
-- their claims (docs/versioning.md, "Worker leases and a mixed deploy").
--
-- The effective deadline of a running job is the later of its own `lease_until` and its
-- worker's lease while that lease covers the job's claim (a claim made since the worker lease
-- started, not detached). A claim's lease row is never later than either: it starts at the
-- jobs' own deadline, and a worker moves it only to its worker lease's deadline (while old
-- reapers may run). leasehold.effective_lease_until says it for readers
-- (jobs_view, the dashboard); the settlements' guard (db/queue/transitions/guards.ts) writes
-- the same condition inline, and db/queue/lease.test.ts holds the two equal.
CREATE TABLE "leasehold"."worker_leases" (
	"worker_id" text PRIMARY KEY NOT NULL,
	"since" timestamp with time zone NOT NULL,
	"lease_until" timestamp with time zone NOT NULL
);
--> statement-breakpoint
-- Without a default first, then the default: adding a column with a volatile default would
-- rewrite the table. Rows claimed before this migration keep null (never covered).
ALTER TABLE "leasehold"."leases" ADD COLUMN "created_at" timestamp with time zone;
--> statement-breakpoint
ALTER TABLE "leasehold"."leases" ALTER COLUMN "created_at" SET DEFAULT statement_timestamp();
--> statement-breakpoint
ALTER TABLE "leasehold"."leases" ADD COLUMN "detached" boolean DEFAULT false NOT NULL;
--> statement-breakpoint
-- A plain SQL function (no SET clause), so the planner can inline it where it is read.
CREATE FUNCTION "leasehold"."effective_lease_until"(job_lease_until timestamptz, token uuid, queue text)
RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT greatest(job_lease_until, (
    SELECT w.lease_until
    FROM leasehold.leases l
    JOIN leasehold.worker_leases w ON w.worker_id = l.worker_id AND w.since <= l.created_at AND NOT l.detached
    WHERE l.token = effective_lease_until.token AND l.queue = effective_lease_until.queue))
$$;
--> statement-breakpoint
-- Same columns, in the same order: lease_until is now the effective deadline, and so is the
-- lease_expired sub-state's test.
CREATE OR REPLACE VIEW "leasehold"."jobs_view" AS
SELECT j.id, j.queue, j.kind, j.kind_version, j.state,
       CASE
         WHEN j.state = 'ready' AND j.attempts > 0 THEN 'retrying'
         WHEN j.state = 'ready' AND j.run_at > now() THEN 'scheduled'
         WHEN j.state = 'ready' THEN 'ready'
         WHEN j.state = 'running' AND leasehold.effective_lease_until(j.lease_until, j.lease_token, j.queue) <= now() THEN 'lease_expired'
         ELSE j.state
       END AS sub_state,
       j.priority, j.attempts, j.max_attempts, j.run_at, j.created_at, j.started_at, j.finished_at, j.updated_at,
       CASE WHEN j.state = 'running' THEN leasehold.effective_lease_until(j.lease_until, j.lease_token, j.queue) END AS lease_until,
       j.worker_id, j.failure_class, j.last_error, j.idempotency_key,
       coalesce(j.trace_id, replace(j.id::text, '-', '')) AS trace_id, j.expires_at
FROM leasehold.jobs j;
