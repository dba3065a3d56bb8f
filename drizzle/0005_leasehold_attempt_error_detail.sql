-- leasehold:schema-version 3
-- leasehold:compatible-from 1
-- Debuggable failures (docs/contract.md, "What a failed attempt records"): a failed attempt's
-- row keeps the thrown error's stack frames and cause chain, bounded and scrubbed of the job's
-- secret payload values (db/queue/error-detail.ts). Expanding: a nullable column without a
-- default is a catalog-only change (no rewrite, a brief ACCESS EXCLUSIVE lock), and code of
-- schema versions 1 and 2 keeps running on it (its INSERTs leave the column NULL).
ALTER TABLE "leasehold"."job_attempts" ADD COLUMN "error_detail" jsonb;
