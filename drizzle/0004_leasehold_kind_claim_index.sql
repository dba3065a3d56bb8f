-- leasehold:no-transaction
-- The claim-by-kind index, built without blocking writes, after the kind versions of the ready
-- rows written before 0003 are filled in (those rows wait meanwhile: the claim by kind finds
-- no row whose version is NULL; code of schema version 1 still claims them). Each statement
-- commits on its own and is safe to run twice (docs/operations.md, Migrations).
UPDATE "leasehold"."ready_jobs" r SET kind_version = j.kind_version
FROM "leasehold"."jobs" j
WHERE r.kind_version IS NULL AND j.id = r.id;
--> statement-breakpoint
CREATE INDEX CONCURRENTLY IF NOT EXISTS "ready_jobs_kind_claim_idx" ON "leasehold"."ready_jobs" USING btree ("kind","kind_version","queue","claim_at","id");
