-- Leasehold's database roles, and what each may do in schema leasehold (docs/operations.md,
-- Database roles). Four NOLOGIN group roles: grant one to each login that runs a part of
-- Leasehold.
--
--   leasehold_migrator   owns schema leasehold and everything in it: runs the migrations (DDL)
--   leasehold_worker     claims, settles, reaps, cleans up, keeps the worker and kinds registries
--   leasehold_producer   enqueues (TypeScript enqueue and leasehold.enqueue(…)), nothing more
--   leasehold_dashboard  reads everything the dashboard shows; acts only through the SECURITY
--                        DEFINER functions of its actions, each writing its audit row (never
--                        the paths workers declared secret); counts failed sign-ins
--
-- Not a migration: roles belong to the cluster, not to one database, and creating them needs
-- CREATEROLE, which the migrator should not have; two databases of one cluster (staging and
-- production, or an application's tests) would also collide on them. So a DBA runs this, as a
-- superuser (or a role with CREATEROLE that is a member of leasehold_migrator and of the current
-- owner of schema leasehold), in the database Leasehold lives in:
--
--   npm run db:roles                                  (DATABASE_URL; scripts/roles.ts)
--   psql -v ON_ERROR_STOP=1 -d "$DATABASE_URL" -f db/roles.sql
--
-- It is idempotent and convergent: every run revokes what these roles hold in schema leasehold
-- and grants exactly what is written here, in one transaction. Run it before the first
-- migration (it creates the roles and lets the migrator create the schema), after it (the
-- grants), and after every migration that adds a table or a column one of the roles writes.
-- New tables are readable by the worker and the dashboard at once (default privileges below);
-- only writes wait for the next run. Run it again, too, after giving a login one of these
-- roles: it sets the login's timeouts (role settings apply only to the role a session logs in
-- as, never through membership).
BEGIN;
SET LOCAL lock_timeout = '5s';

-- The roles. Created when missing, never altered: a DBA's LOGIN or password on one is kept.
DO $roles$
DECLARE
  name text;
BEGIN
  FOREACH name IN ARRAY ARRAY['leasehold_migrator', 'leasehold_worker', 'leasehold_producer', 'leasehold_dashboard'] LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = name) THEN
      BEGIN
        EXECUTE format('CREATE ROLE %I NOLOGIN', name);
      EXCEPTION WHEN duplicate_object OR unique_violation THEN
        NULL; -- another run created it meanwhile
      END;
    END IF;
  END LOOP;
END
$roles$;

-- This database: every role may connect; the migrator may create schemas (0000 creates
-- leasehold; CREATE SCHEMA IF NOT EXISTS checks the right even when the schema exists).
DO $database$
BEGIN
  EXECUTE format('GRANT CONNECT ON DATABASE %I TO leasehold_migrator, leasehold_worker, leasehold_producer, leasehold_dashboard',
                 current_database());
  EXECUTE format('GRANT CREATE ON DATABASE %I TO leasehold_migrator', current_database());
END
$database$;

-- Timeouts, on Leasehold's own roles in this database only. Workers and the dashboard send no
-- startup parameters (a transaction pooler refuses them) and set limits only inside the
-- transactions they open, so their single statements (claims, acknowledgements, the
-- dashboard's reads) are limited by these alone. PostgreSQL applies a role's settings only to
-- sessions that log in as that role, so they are set on each login that is a member of the
-- group too (superusers and the members that administer the group are left alone). A login
-- of the migrator group acts as leasehold_migrator from its first statement (`role`), so what
-- it creates belongs to the group, which every migrator login can then alter, and the default
-- privileges below apply to it. The producer group gets none: its logins are applications',
-- whose limits are theirs to choose.
DO $settings$
DECLARE
  wanted CONSTANT jsonb := '{
    "leasehold_worker": {"statement_timeout": "30s", "lock_timeout": "10s", "idle_in_transaction_session_timeout": "60s"},
    "leasehold_dashboard": {"statement_timeout": "5s", "lock_timeout": "5s", "idle_in_transaction_session_timeout": "60s"},
    "leasehold_migrator": {}
  }';
  target record;
  setting record;
BEGIN
  FOR target IN
    SELECT g.rolname AS grp, g.rolname AS login FROM pg_catalog.pg_roles g WHERE g.rolname IN ('leasehold_worker', 'leasehold_dashboard')
    UNION ALL
    SELECT g.rolname, m.rolname
    FROM pg_catalog.pg_auth_members a
    JOIN pg_catalog.pg_roles g ON g.oid = a.roleid
    JOIN pg_catalog.pg_roles m ON m.oid = a.member
    WHERE g.rolname IN ('leasehold_worker', 'leasehold_dashboard', 'leasehold_migrator')
      AND m.rolcanlogin AND NOT m.rolsuper AND NOT m.rolcreaterole AND NOT a.admin_option
    ORDER BY 2, 1
  LOOP
    FOR setting IN SELECT key, value FROM jsonb_each_text(wanted -> target.grp) LOOP
      EXECUTE format('ALTER ROLE %I IN DATABASE %I SET %I = %L', target.login, current_database(), setting.key, setting.value);
    END LOOP;
    IF target.grp = 'leasehold_migrator' THEN
      EXECUTE format('ALTER ROLE %I IN DATABASE %I SET role = %L', target.login, current_database(), 'leasehold_migrator');
    END IF;
  END LOOP;
END
$settings$;

-- What exists: ownership, grants, and defaults for what the migrator makes later. Before the
-- first migration there is nothing to grant on.
DO $grants$
DECLARE
  object record;
BEGIN
  IF pg_catalog.to_regnamespace('leasehold') IS NULL THEN
    RAISE NOTICE 'schema leasehold does not exist yet: roles made; run the migrations as a leasehold_migrator login, then this script again for the grants';
    RETURN;
  END IF;

  -- The migrator owns everything, whoever ran the migrations so far: DDL needs ownership, and
  -- the SECURITY DEFINER triggers (drizzle/0002) then run as the owner of the tables they write.
  ALTER SCHEMA leasehold OWNER TO leasehold_migrator;
  FOR object IN
    SELECT c.relname, c.relkind FROM pg_catalog.pg_class c
    WHERE c.relnamespace = 'leasehold'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
      AND c.relowner <> 'leasehold_migrator'::regrole
      -- A sequence owned by a column (bigserial) follows its table.
      AND NOT (c.relkind = 'S' AND EXISTS (
        SELECT 1 FROM pg_catalog.pg_depend d
        WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i')))
    ORDER BY c.relname
  LOOP
    EXECUTE format('ALTER %s leasehold.%I OWNER TO leasehold_migrator',
                   CASE object.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END,
                   object.relname);
  END LOOP;
  FOR object IN
    SELECT p.oid::regprocedure AS signature FROM pg_catalog.pg_proc p
    WHERE p.pronamespace = 'leasehold'::regnamespace AND p.proowner <> 'leasehold_migrator'::regrole
  LOOP
    EXECUTE format('ALTER ROUTINE %s OWNER TO leasehold_migrator', object.signature);
  END LOOP;

  -- Objects the migrator makes from now on: the worker and the dashboard may read new tables
  -- at once (their writes come with the next run of this script); new functions are not
  -- everyone's to call (PostgreSQL's default grants EXECUTE to PUBLIC).
  ALTER DEFAULT PRIVILEGES FOR ROLE leasehold_migrator IN SCHEMA leasehold
    REVOKE ALL ON TABLES FROM leasehold_worker, leasehold_producer, leasehold_dashboard;
  ALTER DEFAULT PRIVILEGES FOR ROLE leasehold_migrator IN SCHEMA leasehold
    GRANT SELECT ON TABLES TO leasehold_worker, leasehold_dashboard;
  ALTER DEFAULT PRIVILEGES FOR ROLE leasehold_migrator REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;

  -- From nothing: what these roles held here before is revoked, column grants included, so a
  -- grant removed from this file is removed from the database too. In one transaction with the
  -- grants below, so a running worker never sees the gap.
  REVOKE ALL ON SCHEMA leasehold FROM leasehold_worker, leasehold_producer, leasehold_dashboard;
  REVOKE ALL ON ALL TABLES IN SCHEMA leasehold FROM leasehold_worker, leasehold_producer, leasehold_dashboard;
  REVOKE ALL ON ALL SEQUENCES IN SCHEMA leasehold FROM leasehold_worker, leasehold_producer, leasehold_dashboard;
  REVOKE ALL ON ALL ROUTINES IN SCHEMA leasehold FROM PUBLIC, leasehold_worker, leasehold_producer, leasehold_dashboard;
  GRANT USAGE ON SCHEMA leasehold TO leasehold_worker, leasehold_producer, leasehold_dashboard;

  -- Producer: what db/queue/enqueue-sql.ts and leasehold.enqueue(…) touch. The jobs' own
  -- columns only (state, attempts, the lease and the finish are the defaults of a new job);
  -- the ready row comes from the SECURITY DEFINER trigger, so no right on ready_jobs. SELECT
  -- on jobs because the TypeScript enqueue returns the job it made or found (RETURNING needs
  -- it): a producer can read jobs, not change them.
  -- group_key: a job's fair group (drizzle/0020); its ready row and its group's turn come from
  -- the SECURITY DEFINER triggers, so no right on grouped_ready_jobs or ready_groups.
  -- tags and options (drizzle/0023) are checked by the trigger jobs_extras_check; a uniqueness
  -- key is taken, and a waiting holder replaced or debounced, through take_unique_key (SECURITY
  -- DEFINER): no right on unique_keys, nor any UPDATE on jobs.
  GRANT INSERT (id, queue, kind, kind_version, payload, idempotency_key, priority, run_at, claim_at, max_attempts,
                trace_id, expires_at, group_key, tags, options) ON leasehold.jobs TO leasehold_producer;
  GRANT SELECT ON leasehold.jobs TO leasehold_producer;
  GRANT INSERT (key, job_id, queue, expires_at), SELECT (key, job_id) ON leasehold.dedupe_keys TO leasehold_producer;
  GRANT SELECT (name, aging_seconds) ON leasehold.queues TO leasehold_producer;
  GRANT EXECUTE ON FUNCTION leasehold.enqueue(text, jsonb, text, timestamptz, interval, integer, integer, text,
    interval, text, interval, integer, uuid, boolean, text, text, text[], text, interval, text[]) TO leasehold_producer;
  GRANT EXECUTE ON FUNCTION leasehold.take_unique_key(text, text[], text, uuid, text, jsonb, timestamptz, interval, interval)
    TO leasehold_producer;
  -- A per-job timeout or back-off is checked against the kind's bounds before anything is written.
  GRANT SELECT (kind, version, job_settings) ON leasehold.kinds TO leasehold_producer;
  -- getJob and waitForJob read a job's result and progress (drizzle/0025).
  GRANT SELECT ON leasehold.job_results, leasehold.job_progress TO leasehold_producer;

  -- Worker: the claim, the settlements and the reaper (db/queue/transitions.ts), retention
  -- (retention.ts), receipts (receipts.ts), the worker registry (worker-registry.ts), the kinds
  -- registry (kinds.ts) and the schema check at start (db/schema-version.ts). Column lists are
  -- what those statements set; what a job was enqueued with stays the producer's.
  GRANT SELECT, DELETE ON leasehold.jobs TO leasehold_worker;
  GRANT UPDATE (state, attempts, released, max_attempts, run_at, claim_at, failure_class, last_error, worker_id,
                started_at, lease_token, lease_until, finished_at, updated_at, options) ON leasehold.jobs TO leasehold_worker;
  -- Uniqueness keys (drizzle/0023): retention removes the keys of the jobs it removes.
  GRANT SELECT, DELETE ON leasehold.unique_keys TO leasehold_worker;
  -- Results and progress (drizzle/0025): the acknowledgement stores a result (again, on a later
  -- completing attempt), the attempt's progress reports upsert their row, retention removes both.
  GRANT SELECT, INSERT, DELETE, UPDATE (attempt, result, marker, bytes, stored_at) ON leasehold.job_results TO leasehold_worker;
  GRANT SELECT, INSERT, DELETE, UPDATE (attempt, fraction, message, updated_at) ON leasehold.job_progress TO leasehold_worker;
  -- The claim locks ready rows FOR UPDATE, which needs UPDATE on one column: `attempts`, a
  -- copy kept for the dashboard's split (the claim order and the link to the job stay fixed).
  GRANT SELECT, DELETE, UPDATE (attempts) ON leasehold.ready_jobs TO leasehold_worker;
  -- Fair groups (drizzle/0020): the grouped claim locks and deletes grouped ready rows as the
  -- claim does ready_jobs', and locks its groups' rows (FOR NO KEY UPDATE) to move their turns;
  -- the maintenance sweep deletes the rows of groups left without a job. A retry's or the
  -- reaper's ready row comes from the SECURITY DEFINER trigger, as for ready_jobs.
  GRANT SELECT, DELETE, UPDATE (attempts) ON leasehold.grouped_ready_jobs TO leasehold_worker;
  GRANT SELECT, DELETE, UPDATE (turn_at, idle_since) ON leasehold.ready_groups TO leasehold_worker;
  -- Per-group limits (drizzle/0021): the grouped claim locks its queues' group limits through
  -- lock_group_limits (a SECURITY DEFINER function: no write right on group_limits, which only
  -- set_group_limit writes), reads them, and records and prunes the jobs it took per group
  -- (the maintenance prune locks them FOR UPDATE SKIP LOCKED, which needs UPDATE on a column).
  GRANT SELECT ON leasehold.group_limits TO leasehold_worker;
  GRANT SELECT, INSERT, DELETE, UPDATE (job_ids) ON leasehold.group_claims TO leasehold_worker;
  GRANT EXECUTE ON FUNCTION leasehold.lock_group_limits(text[]) TO leasehold_worker;
  -- Recurring jobs (drizzle/0022): a worker declares its code's schedules, takes the due ones
  -- (locked) and enqueues their ticks, each through a SECURITY DEFINER function: it has no
  -- write right on schedules or schedule_ticks, and no enqueue right (the ticks' jobs are
  -- enqueued by run_schedule_ticks from the schedule's own settings).
  GRANT SELECT ON leasehold.schedules, leasehold.schedule_ticks TO leasehold_worker;
  GRANT EXECUTE ON FUNCTION leasehold.declare_schedules(jsonb), leasehold.due_schedules(integer),
    leasehold.run_schedule_ticks(text, timestamptz, timestamptz, timestamptz[], timestamptz[], integer, timestamptz, timestamptz)
    TO leasehold_worker;
  GRANT SELECT, INSERT, DELETE, UPDATE (running, lease_until, detached) ON leasehold.leases TO leasehold_worker;
  -- Concurrency limits (drizzle/0018): a worker writes its handlers' declarations, and a limited
  -- claim locks the limits' rows FOR UPDATE (which needs UPDATE on a column: the declaration's).
  -- The run-time value (set_max) is an admin's, not a worker's.
  GRANT SELECT, UPDATE (declared_max, declared_at) ON leasehold.limits TO leasehold_worker;
  GRANT SELECT, INSERT, DELETE ON leasehold.limit_claims TO leasehold_worker;
  -- Rate limits and pauses (drizzle/0019): the declared rates and kinds, a RateLimitedError's
  -- pause, and the rate log a rate-limited claim writes and ages out. The run-time values
  -- (set_*) are not the workers' to write: setLimit goes through set_limit.
  -- It inserts a limit's row with its declaration alone (column grants): never a run-time value.
  GRANT INSERT (key, scope, name, declared_max, declared_rate, declared_per_ms, kinds, declared_at),
    UPDATE (declared_rate, declared_per_ms, kinds, paused_until, paused_reason) ON leasehold.limits TO leasehold_worker;
  GRANT SELECT, INSERT, UPDATE (n), DELETE ON leasehold.limit_starts TO leasehold_worker;
  -- A worker's heartbeat renews its one worker lease; the reaper locks and removes ended ones
  -- (drizzle/0015).
  GRANT SELECT, INSERT, DELETE, UPDATE (since, lease_until) ON leasehold.worker_leases TO leasehold_worker;
  GRANT EXECUTE ON FUNCTION leasehold.effective_lease_until(timestamptz, uuid, text) TO leasehold_worker;
  GRANT SELECT, INSERT, DELETE, UPDATE (jobs) ON leasehold.finished_rollup TO leasehold_worker;
  GRANT SELECT, INSERT, DELETE ON leasehold.job_attempts TO leasehold_worker;
  -- The maintenance loop samples each queue's history and folds it per hour (drizzle/0027).
  -- It samples live work with the overview's own read (db/queries/overview.ts backlog).
  GRANT SELECT, INSERT, UPDATE, DELETE ON leasehold.queue_minutes, leasehold.queue_hours TO leasehold_worker;
  GRANT SELECT ON leasehold.ready_rows TO leasehold_worker;
  GRANT SELECT, DELETE ON leasehold.dedupe_keys TO leasehold_worker;
  GRANT SELECT ON leasehold.queues TO leasehold_worker;
  GRANT SELECT, INSERT, DELETE, UPDATE (host, pid, queues, concurrency, version, code_version, schema_from, last_seen_at)
    ON leasehold.workers TO leasehold_worker;
  GRANT SELECT, INSERT, DELETE ON leasehold.receipts TO leasehold_worker;
  GRANT SELECT, INSERT, DELETE, UPDATE (job_id, attempt, lease_token, claimed_at)
    ON leasehold.receipt_claims TO leasehold_worker;
  GRANT SELECT, INSERT, UPDATE (default_queue, display_name, rerun_safe, redacted_paths, last_seen_at, live_at,
    max_attempts, payload_schema, job_settings, searchable_paths) ON leasehold.kinds TO leasehold_worker;
  GRANT SELECT, INSERT, DELETE ON leasehold.worker_kinds TO leasehold_worker;
  GRANT SELECT ON leasehold.migrations TO leasehold_worker;
  -- Maintenance locks its task's row FOR UPDATE (db/queue/maintenance.ts), which needs UPDATE on
  -- a column: the worker's alone, so no other login can hold a round back; INSERT for a task
  -- with no row yet. Audit retention goes through remove_old_audit (never under 90 days).
  GRANT SELECT, INSERT, UPDATE (task) ON leasehold.maintenance_locks TO leasehold_worker;
  GRANT EXECUTE ON FUNCTION leasehold.remove_old_audit(interval, integer) TO leasehold_worker;

  -- Dashboard: everything db/queries and lib/dal read, and the surface's views. It writes
  -- nothing in the tables itself: each of its actions is a SECURITY DEFINER function (drizzle/0011)
  -- that makes the same guarded change as before and writes its own audit row, so it cannot fake
  -- a claim, a finish, a ready, attempt or rollup row, lower a session version or write an audit
  -- row of its own. Users are added and disabled by `leasehold users` as a migrator login.
  GRANT SELECT ON leasehold.jobs, leasehold.ready_jobs, leasehold.leases, leasehold.finished_rollup,
    leasehold.job_attempts, leasehold.dedupe_keys, leasehold.queues, leasehold.workers, leasehold.worker_kinds, leasehold.kinds,
    leasehold.audit_log, leasehold.users, leasehold.migrations, leasehold.jobs_view, leasehold.queue_stats,
    leasehold.kind_redactions, leasehold.sign_in_throttle, leasehold.session_versions, leasehold.worker_leases,
    leasehold.limits, leasehold.limit_claims, leasehold.limit_starts,
    leasehold.grouped_ready_jobs, leasehold.ready_groups, leasehold.ready_rows,
    leasehold.group_limits, leasehold.group_claims, leasehold.schedules, leasehold.schedule_ticks,
    leasehold.unique_keys, leasehold.job_results, leasehold.job_progress, leasehold.queue_alerts,
    leasehold.queue_minutes, leasehold.queue_hours, leasehold.kind_search_paths
    TO leasehold_dashboard;
  -- An admin's backlog-alert threshold (drizzle/0026), with its audit row.
  GRANT EXECUTE ON FUNCTION leasehold.set_queue_alert(text, text, double precision, text, text) TO leasehold_dashboard;
  -- The health page (db/queries/health.ts) reads every session's transaction start and xmin,
  -- the replication slots and the prepared transactions: pg_monitor's pg_read_all_stats part.
  -- pg_read_all_stats, not all of pg_monitor: the page needs no pg_read_all_settings (it reads
  -- only autovacuum and max_connections, which everyone may) and no pg_stat_scan_tables.
  -- Granting it takes a superuser (or, from PostgreSQL 16, ADMIN OPTION on it): without one the
  -- rest still applies, and the page marks those checks "not readable with this role's grants".
  -- Granted once: the membership is the cluster's, shared by every database's run of this script.
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_auth_members m
                 WHERE m.roleid = 'pg_read_all_stats'::regrole AND m.member = 'leasehold_dashboard'::regrole) THEN
    BEGIN
      GRANT pg_read_all_stats TO leasehold_dashboard;
    EXCEPTION
      WHEN insufficient_privilege THEN
        RAISE NOTICE 'leasehold: pg_read_all_stats not granted to leasehold_dashboard (%): the health page cannot say how long the session holding the horizon has been open; a superuser runs GRANT pg_read_all_stats TO leasehold_dashboard', SQLERRM;
      WHEN unique_violation THEN
        NULL; -- another database's run granted it meanwhile
    END;
  END IF;
  -- An admin's schedule: create, change, pause, resume, reset to the code's, delete (drizzle/0022),
  -- each with its audit row.
  GRANT EXECUTE ON FUNCTION leasehold.set_schedule(text, text, jsonb, text, text) TO leasehold_dashboard;
  -- An admin's group maximum, an operator's pause or resume of a group (drizzle/0021), each
  -- with its audit row.
  GRANT EXECUTE ON FUNCTION leasehold.set_group_limit(text, text, text, integer, text, text) TO leasehold_dashboard;
  -- An admin's run-time limit (setLimit, drizzle/0019), with its audit row.
  GRANT EXECUTE ON FUNCTION leasehold.set_limit(text, text, boolean, integer, boolean, integer, integer, boolean, text, text)
    TO leasehold_dashboard;
  -- A running job's deadline as every reader states it (jobs_view calls it too: drizzle/0015).
  GRANT EXECUTE ON FUNCTION leasehold.effective_lease_until(timestamptz, uuid, text) TO leasehold_dashboard;
  -- The operator actions (db/queue/operator.ts): retry, cancel, pause and resume, each with its audit row.
  GRANT EXECUTE ON FUNCTION leasehold.operator_retry(text, text, text, uuid[]),
    leasehold.operator_cancel(text, text, text, uuid[], uuid[]),
    leasehold.operator_set_paused(text, text, text, text) TO leasehold_dashboard;
  -- Redaction: an admin adds and removes its own rules (kind_redactions); what the workers
  -- declared in kinds.redacted_paths is theirs alone, so the dashboard cannot unmask it.
  GRANT EXECUTE ON FUNCTION leasehold.add_redacted_path(text, text, text, text),
    leasehold.remove_added_redacted_path(text, text, text, text) TO leasehold_dashboard;
  -- Search: an admin adds and removes searchable paths of its own (kind_search_paths, drizzle/0028);
  -- what the workers declared in kinds.searchable_paths is theirs.
  GRANT EXECUTE ON FUNCTION leasehold.add_search_path(text, text, text, text),
    leasehold.remove_search_path(text, text, text, text) TO leasehold_dashboard;
  -- The support actions (drizzle/0029; db/queue/support-actions.ts): run now, reschedule, priority,
  -- re-run (a copy of a done job), purge of old dead jobs, each guarded and with its audit row.
  GRANT EXECUTE ON FUNCTION leasehold.operator_run_now(text, text, uuid, text, integer, timestamptz),
    leasehold.operator_reschedule(text, text, uuid, timestamptz, text, integer, timestamptz),
    leasehold.operator_set_priority(text, text, uuid, integer, text, integer, timestamptz),
    leasehold.operator_rerun(text, text, uuid, text, integer, timestamptz),
    leasehold.operator_purge_dead(text, text, text, timestamptz, uuid[]) TO leasehold_dashboard;
  -- A CSV export of a search is recorded (its audit row) before the file is sent.
  GRANT EXECUTE ON FUNCTION leasehold.record_jobs_export(text, jsonb, integer, text) TO leasehold_dashboard;
  -- An admin's payload reveal is recorded (its audit row) before the payload is shown.
  GRANT EXECUTE ON FUNCTION leasehold.record_payload_reveal(text, uuid, text) TO leasehold_dashboard;
  -- Sign-out ends the sessions: a session version only rises.
  GRANT EXECUTE ON FUNCTION leasehold.raise_session_version(text) TO leasehold_dashboard;
  -- Sign-in: failed guesses counted per account and address (and forgotten), and each sign-in's
  -- audit row within the per-address and per-minute caps (drizzle/0011).
  GRANT INSERT, UPDATE, DELETE ON leasehold.sign_in_throttle TO leasehold_dashboard;
  GRANT EXECUTE ON FUNCTION leasehold.record_sign_in(text, text, text, text, integer) TO leasehold_dashboard;
END
$grants$;

COMMIT;
