-- leasehold:schema-version 22
-- leasehold:compatible-from 1
-- Search by payload paths and re-runs (issue 42; docs/dashboard.md, "Search"). `kinds.
-- searchable_paths`: the payload paths a kind's handlers declare searchable (recorded at a
-- worker's start, as redacted_paths); `kind_search_paths`: the ones an admin adds at run time,
-- written only by add_search_path / remove_search_path with their audit rows. Each path is
-- indexed on its kind's jobs alone by `leasehold search-index` (CREATE INDEX CONCURRENTLY, as the
-- migrator): other kinds' enqueues write nothing more. `jobs.rerun_of`: the done job an
-- operator's re-run copies (a done job itself never changes again). `record_jobs_export`: the
-- audit row of a CSV export of a search.
-- Expanding: an older worker records no searchable paths and never sets rerun_of.
CREATE TABLE "leasehold"."kind_search_paths" (
	"kind" text NOT NULL,
	"path" text NOT NULL,
	"added_by" text NOT NULL,
	"added_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "kind_search_paths_pkey" PRIMARY KEY("kind","path"),
	CONSTRAINT "kind_search_paths_path_check" CHECK (length(path) <= 200 AND path ~ '^[A-Za-z_][A-Za-z0-9_]*([.][A-Za-z_][A-Za-z0-9_]*){0,7}$')
);
--> statement-breakpoint
ALTER TABLE "leasehold"."jobs" ADD COLUMN "rerun_of" uuid;--> statement-breakpoint
ALTER TABLE "leasehold"."kinds" ADD COLUMN "searchable_paths" text[] DEFAULT '{}'::text[] NOT NULL;
--> statement-breakpoint
-- An admin's searchable path for a kind (addSearchPath), with the audit row; refused, audited:
-- not_found (no version of the kind registered), bad_path (not dot-separated keys, at most 8 and
-- 200 characters), already_searchable (declared or added before), too_many (past 20 added).
CREATE FUNCTION "leasehold"."add_search_path"(p_kind text, p_path text, p_actor text, p_reason text)
RETURNS TABLE (audit_id bigint, verdict text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
#variable_conflict use_column
BEGIN
  PERFORM leasehold.check_operator_input('add_search_path', ARRAY['add_search_path'], p_actor, p_reason, NULL);
  RETURN QUERY
  WITH facts AS (
    SELECT EXISTS (SELECT 1 FROM leasehold.kinds WHERE kind = p_kind) AS registered,
           coalesce(length(p_path) <= 200 AND p_path ~ '^[A-Za-z_][A-Za-z0-9_]*([.][A-Za-z_][A-Za-z0-9_]*){0,7}$', false) AS well_formed,
           EXISTS (SELECT 1 FROM leasehold.kind_search_paths WHERE kind = p_kind AND path = p_path)
             OR EXISTS (SELECT 1 FROM leasehold.kinds WHERE kind = p_kind AND p_path = ANY (searchable_paths)) AS known,
           (SELECT count(*) FROM leasehold.kind_search_paths WHERE kind = p_kind) >= 20 AS at_cap
  ), added AS (
    INSERT INTO leasehold.kind_search_paths (kind, path, added_by)
    SELECT p_kind, p_path, p_actor FROM facts WHERE registered AND well_formed AND NOT known AND NOT at_cap
    ON CONFLICT (kind, path) DO NOTHING
    RETURNING path
  ), verdict AS (
    SELECT CASE WHEN EXISTS (SELECT 1 FROM added) THEN 'applied'
                WHEN NOT f.registered THEN 'not_found'
                WHEN NOT f.well_formed THEN 'bad_path'
                WHEN f.known THEN 'already_searchable'
                ELSE 'too_many' END AS verdict
    FROM facts f
  ), audit AS (
    INSERT INTO leasehold.audit_log (actor, action, requested, affected, outcome, detail)
    SELECT p_actor, 'add_search_path', 1, (SELECT count(*) FROM added)::int,
           CASE WHEN v.verdict = 'applied' THEN 'applied' ELSE 'refused' END,
           jsonb_build_object('reason', p_reason, 'kind', p_kind, 'path', left(p_path, 200), 'refused', NULLIF(v.verdict, 'applied'))
    FROM verdict v
    RETURNING id
  )
  SELECT (SELECT id FROM audit), (SELECT verdict FROM verdict);
END
$$;
--> statement-breakpoint
-- Removes a path an admin added (removeSearchPath), with the audit row; a path the handlers
-- declare is not in kind_search_paths and stays searchable (refused, audited: not_added).
CREATE FUNCTION "leasehold"."remove_search_path"(p_kind text, p_path text, p_actor text, p_reason text)
RETURNS TABLE (audit_id bigint, removed boolean, declared boolean)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
#variable_conflict use_column
BEGIN
  PERFORM leasehold.check_operator_input('remove_search_path', ARRAY['remove_search_path'], p_actor, p_reason, NULL);
  RETURN QUERY
  WITH removed AS (
    DELETE FROM leasehold.kind_search_paths WHERE kind = p_kind AND path = p_path RETURNING path
  ), facts AS (
    SELECT EXISTS (SELECT 1 FROM removed) AS removed,
           EXISTS (SELECT 1 FROM leasehold.kinds WHERE kind = p_kind AND p_path = ANY (searchable_paths)) AS declared
  ), audit AS (
    INSERT INTO leasehold.audit_log (actor, action, requested, affected, outcome, detail)
    SELECT p_actor, 'remove_search_path', 1, (SELECT count(*) FROM removed)::int,
           CASE WHEN f.removed THEN 'applied' ELSE 'refused' END,
           jsonb_build_object('reason', p_reason, 'kind', p_kind, 'path', left(p_path, 200), 'declared_by_workers', f.declared)
    FROM facts f
    RETURNING id
  )
  SELECT (SELECT id FROM audit), (SELECT removed FROM facts), (SELECT declared FROM facts);
END
$$;
--> statement-breakpoint
-- A CSV export of a job search (the dashboard's), recorded before the file is sent: who, the
-- search (filter), how many rows, and the optional reason. Refused: a filter that is not a JSON
-- object of at most 4 kB, rows outside 0 to 10,000.
CREATE FUNCTION "leasehold"."record_jobs_export"(p_actor text, p_filter jsonb, p_rows integer, p_reason text)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
DECLARE
  audit_id bigint;
BEGIN
  PERFORM leasehold.check_operator_input('export_jobs', ARRAY['export_jobs'], p_actor, p_reason, NULL);
  IF p_filter IS NULL OR jsonb_typeof(p_filter) <> 'object' OR length(p_filter::text) > 4096
     OR p_rows IS NULL OR p_rows NOT BETWEEN 0 AND 10000 THEN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
      MESSAGE = 'leasehold: the export_jobs action was refused: a filter (a JSON object of at most 4 kB) and 0 to 10,000 rows are needed.',
      HINT = 'Nothing was written.';
  END IF;
  INSERT INTO leasehold.audit_log (actor, action, requested, affected, outcome, detail)
  VALUES (p_actor, 'export_jobs', p_rows, p_rows, 'applied', jsonb_build_object('filter', p_filter, 'reason', p_reason))
  RETURNING id INTO audit_id;
  RETURN audit_id;
END
$$;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."record_jobs_export"(text, jsonb, integer, text) FROM PUBLIC;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."add_search_path"(text, text, text, text) FROM PUBLIC;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."remove_search_path"(text, text, text, text) FROM PUBLIC;
