-- leasehold:schema-version 13
-- leasehold:compatible-from 1
-- Concurrency limits (issue 36; db/queue/limits.ts, docs/flow-control.md): at most N attempts of
-- a queue's, a kind's or a named resource's jobs hold a lease at once, across every process.
-- `limits` holds each limit's declared and run-time maximum; a limited claim locks its limits'
-- rows, then claims no more than they leave, and names them on its lease rows (`limit_keys`),
-- whose `running` every settlement, the reaper and an operator cancel already count down. The
-- index is partial: the lease rows of unlimited claims (NULL) write no entry, and no statement
-- of the plain path changes. Expanding: code of versions 1 to 12 never writes a limited lease
-- row and ignores the limits, so workers record the code version they run (`code_version`,
-- NULL before 13) and a run-time limit is refused while such a worker is live
-- (docs/versioning.md). `leases` holds a row per claim for a lease's length, so building the
-- index is short.
CREATE TABLE "leasehold"."limits" (
	"key" text PRIMARY KEY NOT NULL,
	"scope" text NOT NULL,
	"name" text NOT NULL,
	"declared_max" integer,
	"declared_at" timestamp with time zone,
	"set_max" integer,
	"set_at" timestamp with time zone,
	"set_by" text,
	CONSTRAINT "limits_scope_check" CHECK (scope IN ('queue', 'kind', 'resource')),
	CONSTRAINT "limits_key_check" CHECK (key = scope || ':' || name),
	CONSTRAINT "limits_name_check" CHECK (length(name) BETWEEN 1 AND 128),
	CONSTRAINT "limits_max_check" CHECK (declared_max >= 1 AND set_max >= 1)
);
--> statement-breakpoint
ALTER TABLE "leasehold"."leases" ADD COLUMN "limit_keys" text[];--> statement-breakpoint
ALTER TABLE "leasehold"."workers" ADD COLUMN "code_version" integer;--> statement-breakpoint
CREATE INDEX "leases_limit_keys_idx" ON "leasehold"."leases" USING gin ("limit_keys") WHERE limit_keys IS NOT NULL;