CREATE SCHEMA IF NOT EXISTS "leasehold";
--> statement-breakpoint
CREATE TABLE "leasehold"."audit_log" (
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
CREATE TABLE "leasehold"."dedupe_keys" (
	"key" text PRIMARY KEY NOT NULL,
	"job_id" uuid NOT NULL,
	"queue" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "leasehold"."finished_rollup" (
	"minute" timestamp with time zone NOT NULL,
	"queue" text NOT NULL,
	"kind" text NOT NULL,
	"state" text NOT NULL,
	"attempts" integer NOT NULL,
	"shard" integer NOT NULL,
	"jobs" integer NOT NULL,
	CONSTRAINT "finished_rollup_pkey" PRIMARY KEY("minute","queue","kind","state","attempts","shard")
);
--> statement-breakpoint
CREATE TABLE "leasehold"."job_attempts" (
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
	CONSTRAINT "job_attempts_pkey" PRIMARY KEY("job_id","attempt","lease_token"),
	CONSTRAINT "job_attempts_outcome_check" CHECK (outcome IN ('completed', 'failed', 'lease_expired', 'released', 'cancelled'))
);
--> statement-breakpoint
CREATE TABLE "leasehold"."jobs" (
	"id" uuid PRIMARY KEY NOT NULL,
	"queue" text DEFAULT 'default' NOT NULL,
	"kind" text NOT NULL,
	"kind_version" integer DEFAULT 1 NOT NULL,
	"idempotency_key" text,
	"priority" integer DEFAULT 0 NOT NULL,
	"trace_id" text,
	"expires_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"payload" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"max_attempts" integer DEFAULT 10 NOT NULL,
	"run_at" timestamp with time zone DEFAULT now() NOT NULL,
	"claim_at" timestamp with time zone DEFAULT now() NOT NULL,
	"failure_class" text,
	"last_error" text,
	"state" text DEFAULT 'ready' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"worker_id" text,
	"started_at" timestamp with time zone,
	"lease_token" uuid,
	"lease_until" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "jobs_state_check" CHECK (state IN ('ready', 'running', 'done', 'dead', 'cancelled')),
	CONSTRAINT "jobs_failure_class_check" CHECK (failure_class IS NULL OR failure_class IN ('transient', 'rate_limited', 'timeout', 'unknown_outcome', 'lease_expired', 'permanent', 'validation', 'cancelled', 'expired')),
	CONSTRAINT "jobs_lease_check" CHECK ((state = 'running') = (lease_token IS NOT NULL) AND (lease_token IS NULL) = (lease_until IS NULL)),
	CONSTRAINT "jobs_finished_check" CHECK ((state IN ('done', 'dead', 'cancelled')) = (finished_at IS NOT NULL)),
	CONSTRAINT "jobs_attempts_check" CHECK (attempts >= 0 AND attempts <= max_attempts AND (state <> 'ready' OR attempts < max_attempts)),
	CONSTRAINT "jobs_max_attempts_check" CHECK (max_attempts BETWEEN 1 AND 1000),
	CONSTRAINT "jobs_ended_class_check" CHECK (state NOT IN ('dead', 'cancelled') OR failure_class IS NOT NULL),
	CONSTRAINT "jobs_claim_at_check" CHECK (claim_at <= run_at),
	CONSTRAINT "jobs_priority_check" CHECK (priority BETWEEN 0 AND 100),
	CONSTRAINT "jobs_payload_size_check" CHECK (pg_column_size(payload) <= 4194304),
	CONSTRAINT "jobs_names_check" CHECK (length(queue) BETWEEN 1 AND 128 AND length(kind) BETWEEN 1 AND 128),
	CONSTRAINT "jobs_kind_version_check" CHECK (kind_version >= 1)
);
--> statement-breakpoint
CREATE TABLE "leasehold"."kinds" (
	"kind" text NOT NULL,
	"version" integer NOT NULL,
	"default_queue" text NOT NULL,
	"display_name" text NOT NULL,
	"redacted_paths" text[] DEFAULT '{}'::text[] NOT NULL,
	"rerun_safe" boolean DEFAULT false NOT NULL,
	"first_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "kinds_pkey" PRIMARY KEY("kind","version"),
	CONSTRAINT "kinds_version_check" CHECK (version >= 1)
);
--> statement-breakpoint
CREATE TABLE "leasehold"."leases" (
	"token" uuid NOT NULL,
	"queue" text NOT NULL,
	"worker_id" text NOT NULL,
	"lease_until" timestamp with time zone NOT NULL,
	"running" integer NOT NULL,
	"job_ids" uuid[] NOT NULL,
	CONSTRAINT "leases_pkey" PRIMARY KEY("token","queue"),
	CONSTRAINT "leases_running_check" CHECK (running >= 0)
);
--> statement-breakpoint
CREATE TABLE "leasehold"."queues" (
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
CREATE TABLE "leasehold"."ready_jobs" (
	"queue" text NOT NULL,
	"claim_at" timestamp with time zone NOT NULL,
	"run_at" timestamp with time zone NOT NULL,
	"id" uuid NOT NULL,
	"kind" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "leasehold"."receipts" (
	"key" text PRIMARY KEY NOT NULL,
	"job_id" uuid NOT NULL,
	"attempt" integer NOT NULL,
	"result" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "leasehold"."users" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"email" text NOT NULL,
	"password_hash" text NOT NULL,
	"role" text NOT NULL,
	"disabled" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "users_role_check" CHECK (role IN ('viewer', 'operator', 'admin')),
	CONSTRAINT "users_email_check" CHECK (email = lower(email) AND position('@' in email) > 1)
);
--> statement-breakpoint
CREATE TABLE "leasehold"."workers" (
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
CREATE INDEX "audit_log_at_idx" ON "leasehold"."audit_log" USING btree ("at");--> statement-breakpoint
CREATE INDEX "audit_log_job_ids_idx" ON "leasehold"."audit_log" USING gin ("job_ids");--> statement-breakpoint
CREATE INDEX "dedupe_keys_expires_idx" ON "leasehold"."dedupe_keys" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "jobs_queue_idx" ON "leasehold"."jobs" USING btree ("queue","id");--> statement-breakpoint
CREATE INDEX "jobs_kind_idx" ON "leasehold"."jobs" USING btree ("kind","id");--> statement-breakpoint
CREATE INDEX "jobs_created_idx" ON "leasehold"."jobs" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "jobs_failure_class_idx" ON "leasehold"."jobs" USING btree ("failure_class","id") WHERE failure_class IS NOT NULL;--> statement-breakpoint
CREATE INDEX "jobs_failed_queue_idx" ON "leasehold"."jobs" USING btree ("queue","id") WHERE failure_class IS NOT NULL;--> statement-breakpoint
CREATE INDEX "leases_until_idx" ON "leasehold"."leases" USING btree ("lease_until");--> statement-breakpoint
CREATE INDEX "ready_jobs_claim_idx" ON "leasehold"."ready_jobs" USING btree ("queue","claim_at","id");--> statement-breakpoint
CREATE INDEX "receipts_created_idx" ON "leasehold"."receipts" USING btree ("created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "users_email_idx" ON "leasehold"."users" USING btree ("email");--> statement-breakpoint
CREATE INDEX "workers_last_seen_idx" ON "leasehold"."workers" USING btree ("last_seen_at");