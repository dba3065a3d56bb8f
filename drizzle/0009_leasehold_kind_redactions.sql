-- leasehold:schema-version 7
-- leasehold:compatible-from 1
-- Admin-added redaction (docs/operations.md, Redaction): payload paths an admin masks for a kind
-- on top of what its workers declared in leasehold.kinds.redacted_paths, for every version of
-- the kind. A table of their own, so that removing a rule can only remove what an admin added:
-- a worker's declaration is the floor. Expanding: code of every schema version runs on it
-- (older code does not read the table and masks only what workers declared).
CREATE TABLE "leasehold"."kind_redactions" (
	"kind" text NOT NULL,
	"path" text NOT NULL,
	"added_by" text NOT NULL,
	"added_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "kind_redactions_pkey" PRIMARY KEY("kind","path"),
	CONSTRAINT "kind_redactions_path_check" CHECK (length(path) BETWEEN 1 AND 200)
);
