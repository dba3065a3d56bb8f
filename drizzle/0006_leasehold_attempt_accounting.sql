-- leasehold:schema-version 4
-- leasehold:compatible-from 1
-- Attempt accounting (docs/contract.md, "Attempts"): a release at shutdown is counted in
-- `released` instead of raising `max_attempts`, so the budget is `attempts - released` against
-- the cap, and the kinds registry keeps the handler's `maxAttempts` cap for the reaper.
-- Expanding: the columns are catalog-only (a constant default, no rewrite); the new CHECK
-- equals the old one while `released = 0`, which is all that code of versions 1 to 3 writes
-- (their release still raises max_attempts), so that code keeps running. Adding the CHECK scans
-- jobs once under the migration's ACCESS EXCLUSIVE lock.
ALTER TABLE "leasehold"."jobs" DROP CONSTRAINT "jobs_attempts_check";--> statement-breakpoint
ALTER TABLE "leasehold"."jobs" ADD COLUMN "released" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "leasehold"."kinds" ADD COLUMN "max_attempts" integer;--> statement-breakpoint
ALTER TABLE "leasehold"."jobs" ADD CONSTRAINT "jobs_attempts_check" CHECK (released >= 0 AND attempts >= released AND attempts - released <= max_attempts AND (state <> 'ready' OR attempts - released < max_attempts));--> statement-breakpoint
ALTER TABLE "leasehold"."kinds" ADD CONSTRAINT "kinds_max_attempts_check" CHECK (max_attempts IS NULL OR max_attempts BETWEEN 1 AND 1000);