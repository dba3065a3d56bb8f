CREATE TABLE "audit_log" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	"actor" text NOT NULL,
	"action" text NOT NULL,
	"job_ids" uuid[] DEFAULT '{}'::uuid[] NOT NULL,
	"queue" text,
	"requested" integer NOT NULL,
	"affected" integer NOT NULL,
	"outcome" text NOT NULL,
	"detail" jsonb DEFAULT '{}'::jsonb NOT NULL
);
--> statement-breakpoint
CREATE TABLE "dedupe_keys" (
	"key" text PRIMARY KEY NOT NULL,
	"job_id" uuid NOT NULL,
	"queue" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "job_attempts" (
	"job_id" uuid NOT NULL,
	"attempt" integer NOT NULL,
	"queue" text NOT NULL,
	"kind" text NOT NULL,
	"worker_id" text,
	"lease_token" uuid NOT NULL,
	"started_at" timestamp with time zone NOT NULL,
	"ended_at" timestamp with time zone DEFAULT now() NOT NULL,
	"outcome" text NOT NULL,
	"failure_class" text,
	"error" text,
	"duration_ms" integer NOT NULL,
	CONSTRAINT "job_attempts_pkey" PRIMARY KEY("lease_token"),
	CONSTRAINT "job_attempts_outcome_check" CHECK (outcome IN ('completed', 'failed', 'lease_expired', 'released', 'cancelled'))
);
--> statement-breakpoint
CREATE TABLE "jobs" (
	"id" uuid PRIMARY KEY NOT NULL,
	"queue" text DEFAULT 'default' NOT NULL,
	"kind" text NOT NULL,
	"kind_version" integer DEFAULT 1 NOT NULL,
	"payload" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"idempotency_key" text,
	"state" text DEFAULT 'ready' NOT NULL,
	"priority" integer DEFAULT 0 NOT NULL,
	"run_at" timestamp with time zone DEFAULT now() NOT NULL,
	"claim_at" timestamp with time zone DEFAULT now() NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"max_attempts" integer DEFAULT 10 NOT NULL,
	"lease_token" uuid,
	"lease_until" timestamp with time zone,
	"worker_id" text,
	"failure_class" text,
	"last_error" text,
	"trace_id" text,
	"expires_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "jobs_state_check" CHECK (state IN ('ready', 'running', 'done', 'dead', 'cancelled')),
	CONSTRAINT "jobs_failure_class_check" CHECK (failure_class IS NULL OR failure_class IN ('transient', 'rate_limited', 'timeout', 'unknown_outcome', 'lease_expired', 'permanent', 'validation', 'cancelled', 'expired')),
	CONSTRAINT "jobs_lease_check" CHECK ((state = 'running') = (lease_token IS NOT NULL) AND (lease_token IS NULL) = (lease_until IS NULL)),
	CONSTRAINT "jobs_finished_check" CHECK ((state IN ('done', 'dead', 'cancelled')) = (finished_at IS NOT NULL)),
	CONSTRAINT "jobs_attempts_check" CHECK (attempts >= 0 AND attempts <= max_attempts AND (state <> 'ready' OR attempts < max_attempts)),
	CONSTRAINT "jobs_max_attempts_check" CHECK (max_attempts BETWEEN 1 AND 1000),
	CONSTRAINT "jobs_claim_at_check" CHECK (claim_at <= run_at),
	CONSTRAINT "jobs_priority_check" CHECK (priority BETWEEN 0 AND 100),
	CONSTRAINT "jobs_payload_size_check" CHECK (pg_column_size(payload) <= 4194304),
	CONSTRAINT "jobs_names_check" CHECK (length(queue) BETWEEN 1 AND 128 AND length(kind) BETWEEN 1 AND 128),
	CONSTRAINT "jobs_kind_version_check" CHECK (kind_version >= 1)
);
--> statement-breakpoint
CREATE TABLE "queues" (
	"name" text PRIMARY KEY NOT NULL,
	"paused" boolean DEFAULT false NOT NULL,
	"aging_seconds" integer DEFAULT 60 NOT NULL,
	"paused_at" timestamp with time zone,
	"paused_by" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "queues_aging_check" CHECK (aging_seconds BETWEEN 1 AND 86400)
);
--> statement-breakpoint
CREATE TABLE "receipts" (
	"key" text PRIMARY KEY NOT NULL,
	"job_id" uuid NOT NULL,
	"attempt" integer NOT NULL,
	"result" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "workers" (
	"id" text PRIMARY KEY NOT NULL,
	"host" text NOT NULL,
	"pid" integer NOT NULL,
	"queues" text[] NOT NULL,
	"concurrency" integer NOT NULL,
	"version" text,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "audit_log_at_idx" ON "audit_log" USING btree ("at");--> statement-breakpoint
CREATE INDEX "dedupe_keys_expires_idx" ON "dedupe_keys" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "job_attempts_job_idx" ON "job_attempts" USING btree ("job_id","attempt");--> statement-breakpoint
CREATE INDEX "job_attempts_ended_idx" ON "job_attempts" USING btree ("ended_at");--> statement-breakpoint
CREATE INDEX "jobs_claim_idx" ON "jobs" USING btree ("queue","claim_at","id") WHERE state = 'ready';--> statement-breakpoint
CREATE INDEX "jobs_lease_idx" ON "jobs" USING btree ("lease_until") WHERE state = 'running';--> statement-breakpoint
CREATE INDEX "jobs_terminal_idx" ON "jobs" USING btree ("state","finished_at") WHERE state IN ('done', 'dead', 'cancelled');--> statement-breakpoint
CREATE INDEX "receipts_created_idx" ON "receipts" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "workers_last_seen_idx" ON "workers" USING btree ("last_seen_at");