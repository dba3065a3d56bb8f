-- leasehold:schema-version 6
-- leasehold:compatible-from 1
-- Receipt claims (docs/jobs.md, Receipts): before a receipt's side effect runs, the attempt
-- claims its key here (its job and lease token), and the claim is removed when the receipt is
-- recorded. A second attempt on the key waits while the claimer holds its lease and takes the
-- claim over once it does not, so two attempts at once run one effect.
-- Expanding: a new table that code of versions 1 to 5 never reads (their receipts stay
-- unfenced, as before), so that code keeps running.
CREATE TABLE "leasehold"."receipt_claims" (
	"key" text PRIMARY KEY NOT NULL,
	"job_id" uuid NOT NULL,
	"attempt" integer NOT NULL,
	"lease_token" uuid NOT NULL,
	"claimed_at" timestamp with time zone DEFAULT now() NOT NULL
);
