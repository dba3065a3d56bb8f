CREATE TABLE "orders" (
	"id" uuid PRIMARY KEY NOT NULL,
	"customer_email" text NOT NULL,
	"total_cents" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "orders_total_check" CHECK (total_cents >= 0)
);
