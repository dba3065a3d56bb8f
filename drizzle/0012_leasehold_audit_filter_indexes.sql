-- leasehold:no-transaction
-- The audit page's filters (/audit?actor=, ?action=) walk these newest first instead of the
-- whole log (which the sign-in flood of issue 33 grew to millions of rows). Built without
-- blocking writes; each statement commits on its own and is safe to run twice (docs/operations.md,
-- Migrations).
CREATE INDEX CONCURRENTLY IF NOT EXISTS "audit_log_actor_idx" ON "leasehold"."audit_log" USING btree ("actor","id");
--> statement-breakpoint
CREATE INDEX CONCURRENTLY IF NOT EXISTS "audit_log_action_idx" ON "leasehold"."audit_log" USING btree ("action","id");
