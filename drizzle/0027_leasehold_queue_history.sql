-- leasehold:schema-version 21
-- leasehold:compatible-from 1
-- A queue's history (issue 43; docs/dashboard.md, "History"; db/queue/queue-history.ts):
-- `queue_minutes`, a row per queue and minute (kept 7 days), and `queue_hours`, the minutes
-- folded per hour (kept 90 days), both written by the workers' maintenance loop: outcomes and
-- failed attempts summed, live work and the oldest due ready job's age as sampled. Buckets are
-- whole UTC minutes and hours (date_bin: immutable, whatever the session's zone).
-- Expanding: nothing older reads or writes them; an older worker simply records no history.
CREATE TABLE "leasehold"."queue_hours" (
	"hour" timestamp with time zone NOT NULL,
	"queue" text NOT NULL,
	"done" integer DEFAULT 0 NOT NULL,
	"dead" integer DEFAULT 0 NOT NULL,
	"cancelled" integer DEFAULT 0 NOT NULL,
	"failed_attempts" integer DEFAULT 0 NOT NULL,
	"ready" integer,
	"scheduled" integer,
	"retrying" integer,
	"running" integer,
	"lease_expired" integer,
	"oldest_ready_seconds" double precision,
	CONSTRAINT "queue_hours_pkey" PRIMARY KEY("hour","queue"),
	CONSTRAINT "queue_hours_hour_check" CHECK (hour = date_bin('1 hour', hour, '2000-01-01 00:00:00+00'))
);
--> statement-breakpoint
CREATE TABLE "leasehold"."queue_minutes" (
	"minute" timestamp with time zone NOT NULL,
	"queue" text NOT NULL,
	"done" integer DEFAULT 0 NOT NULL,
	"dead" integer DEFAULT 0 NOT NULL,
	"cancelled" integer DEFAULT 0 NOT NULL,
	"failed_attempts" integer DEFAULT 0 NOT NULL,
	"ready" integer,
	"scheduled" integer,
	"retrying" integer,
	"running" integer,
	"lease_expired" integer,
	"oldest_ready_seconds" double precision,
	CONSTRAINT "queue_minutes_pkey" PRIMARY KEY("minute","queue"),
	CONSTRAINT "queue_minutes_minute_check" CHECK (minute = date_bin('1 minute', minute, '2000-01-01 00:00:00+00'))
);
--> statement-breakpoint
-- The maintenance task that records them (db/queue/maintenance.ts locks its row).
INSERT INTO "leasehold"."maintenance_locks" (task) VALUES ('history') ON CONFLICT DO NOTHING;
