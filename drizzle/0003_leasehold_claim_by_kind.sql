-- leasehold:schema-version 2
-- leasehold:compatible-from 1
-- Claim by kind (docs/design/schema-v1.md, "What comes next fits"; docs/operations.md,
-- Deploying a new kind): a worker claims only the kind versions it runs, so a job of a kind or
-- version no live worker runs waits for one instead of dying. Expanding: code of schema
-- version 1 keeps running on it (its claim ignores the new column and tables).
--
-- - ready_jobs.kind_version: the claim walks one (kind, version, queue) at a time. Rows written
--   before this migration have NULL until 0004 fills them in; the triggers below write it.
-- - worker_kinds: which live worker runs which kind version, written with its registry entry
--   and removed with it (ON DELETE CASCADE).
-- - kinds.live_at: when maintenance last saw a live worker running the kind version, so a job
--   ends dead only after the grace period with none.
CREATE TABLE "leasehold"."worker_kinds" (
	"worker_id" text NOT NULL,
	"kind" text NOT NULL,
	"version" integer NOT NULL,
	CONSTRAINT "worker_kinds_pkey" PRIMARY KEY("worker_id","kind","version")
);
--> statement-breakpoint
ALTER TABLE "leasehold"."kinds" ADD COLUMN "live_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "leasehold"."ready_jobs" ADD COLUMN "kind_version" integer;--> statement-breakpoint
ALTER TABLE "leasehold"."worker_kinds" ADD CONSTRAINT "worker_kinds_worker_id_workers_id_fk" FOREIGN KEY ("worker_id") REFERENCES "leasehold"."workers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "worker_kinds_kind_idx" ON "leasehold"."worker_kinds" USING btree ("kind","version");
--> statement-breakpoint
-- The ready-row triggers of 0001 (and their SECURITY DEFINER of 0002), now writing the kind
-- version too. CREATE OR REPLACE keeps the owner, the grants and the triggers.
CREATE OR REPLACE FUNCTION "leasehold"."jobs_inserted_ready_rows"() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
  INSERT INTO leasehold.ready_jobs (queue, claim_at, run_at, id, kind, attempts, kind_version)
  SELECT n.queue, n.claim_at, n.run_at, n.id, n.kind, n.attempts, n.kind_version FROM new_jobs n WHERE n.state = 'ready';
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION "leasehold"."jobs_ready_row"() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
  IF OLD.state = 'ready' THEN
    DELETE FROM leasehold.ready_jobs WHERE queue = OLD.queue AND claim_at = OLD.claim_at AND id = OLD.id;
  END IF;
  IF NEW.state = 'ready' THEN
    INSERT INTO leasehold.ready_jobs (queue, claim_at, run_at, id, kind, attempts, kind_version)
    VALUES (NEW.queue, NEW.claim_at, NEW.run_at, NEW.id, NEW.kind, NEW.attempts, NEW.kind_version);
  END IF;
  RETURN NULL;
END
$$;
