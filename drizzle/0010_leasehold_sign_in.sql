-- leasehold:schema-version 8
-- leasehold:compatible-from 1
-- The dashboard's sign-in (docs/dashboard.md, Sign-in): failed sign-ins per (account, client
-- address) and per account, so that guessing is throttled across every dashboard process
-- (sign_in_throttle); and a session version per identity, raised by sign-out, a password change
-- and disabling, so that a session issued before ends at once (session_versions).
-- Expanding: new tables that code of versions 1 to 7 never reads, so that code keeps running.
CREATE TABLE "leasehold"."session_versions" (
	"actor" text PRIMARY KEY NOT NULL,
	"version" integer DEFAULT 0 NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "leasehold"."sign_in_throttle" (
	"account" text NOT NULL,
	"client" text NOT NULL,
	"failures" integer DEFAULT 0 NOT NULL,
	"first_failure_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_failure_at" timestamp with time zone DEFAULT now() NOT NULL,
	"blocked_until" timestamp with time zone,
	CONSTRAINT "sign_in_throttle_pkey" PRIMARY KEY("account","client"),
	CONSTRAINT "sign_in_throttle_account_check" CHECK (length(account) BETWEEN 1 AND 254),
	CONSTRAINT "sign_in_throttle_client_check" CHECK (length(client) <= 100)
);
--> statement-breakpoint
CREATE INDEX "sign_in_throttle_last_failure_idx" ON "leasehold"."sign_in_throttle" USING btree ("last_failure_at");