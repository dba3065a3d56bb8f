-- leasehold:schema-version 13
-- leasehold:compatible-from 1
-- Concurrency limits (issue 36; db/queue/limits.ts, docs/flow-control.md): at most N attempts of
-- a kind's or a named resource's jobs hold a lease at once, across every process. `limits`
-- holds each limit's declared and run-time maximum; a limited claim locks its limits' rows, then
-- claims no more than they leave, and writes a `limit_claims` row per limit and lease row of its
-- own. A limit's running attempts are the `running` of those lease rows, which every settlement,
-- the reaper and an operator cancel already count down. Nothing of the plain path changes: its
-- claims write no limit_claims row, and `leases` keeps its columns (a nullable column there
-- made every lease row 8 bytes wider: 9 bytes more WAL a job with one-job claims, measured).
-- Expanding: code of versions 1 to 12 ignores the limits, so workers record the code version
-- they run (`code_version`, NULL before 13) and a run-time limit is refused while such a worker
-- is live (docs/versioning.md).
CREATE TABLE "leasehold"."limit_claims" (
	"limit_key" text NOT NULL,
	"token" uuid NOT NULL,
	"queue" text NOT NULL,
	CONSTRAINT "limit_claims_pkey" PRIMARY KEY("limit_key","token","queue")
);
--> statement-breakpoint
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
ALTER TABLE "leasehold"."workers" ADD COLUMN "code_version" integer;