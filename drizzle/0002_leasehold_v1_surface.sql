-- leasehold:schema-version 1
-- leasehold:compatible-from 1
-- The declared SQL surface (docs/operations.md, Declared SQL surface): the function
-- leasehold.enqueue(…) for triggers, outboxes and producers in other languages, and the views
-- leasehold.jobs_view and leasehold.queue_stats. Their signatures and columns are stable within
-- v1; every table, index and trigger function beside them is internal. The roles that use them
-- are not made here (roles belong to the cluster, not to one database): db/roles.sql, applied
-- by `npm run db:roles`.

-- The ready row of a new or re-readied job is written by these triggers whoever writes the job,
-- so they run as their owner (the migrator): a producer may insert jobs and an operator retry
-- them without any right on ready_jobs or leases, and so cannot delete or forge ready rows
-- (a ready job without its row is never claimed). Each already fixes search_path = pg_catalog
-- and names every table, which a SECURITY DEFINER function needs. Trigger functions cannot be
-- called directly, and PostgreSQL checks EXECUTE only when a trigger is created: revoking it
-- keeps other roles from attaching them to tables of their own.
ALTER FUNCTION "leasehold"."jobs_inserted_ready_rows"() SECURITY DEFINER;
--> statement-breakpoint
ALTER FUNCTION "leasehold"."jobs_ready_row"() SECURITY DEFINER;
--> statement-breakpoint
ALTER FUNCTION "leasehold"."jobs_lease_moved_earlier"() SECURITY DEFINER;
--> statement-breakpoint
REVOKE ALL ON FUNCTION "leasehold"."jobs_inserted_ready_rows"(), "leasehold"."jobs_ready_row"(),
  "leasehold"."jobs_lease_moved_earlier"() FROM PUBLIC;
--> statement-breakpoint
-- enqueue: the TypeScript enqueue (db/queue/enqueue.ts, enqueue-spec.ts, enqueue-sql.ts) as
-- one SQL call, with the same defaults, bounds, aging sort key, idempotency and wake-up.
--
-- SECURITY INVOKER: the caller needs what the TypeScript enqueue needs (INSERT on jobs and
-- dedupe_keys, SELECT on queues; the role leasehold_producer has it), so the function grants
-- nothing a caller did not have. Every name is qualified and search_path is pg_catalog, so a
-- caller's search_path (or a transaction pooler's lack of one) changes nothing.
--
-- No EXCEPTION block: one would open a subtransaction per call, which a hot insert path pays
-- for and which can overflow a backend's subtransaction cache under load. Conflicts are
-- handled by ON CONFLICT DO NOTHING and a look at what won instead.
--
-- Ids are UUIDv7 made here (PostgreSQL 15 has no uuidv7()): the Unix milliseconds of
-- clock_timestamp() in the first 48 bits, the sub-millisecond fraction in the 12 bits after
-- the version (RFC 9562, method 3), random bits after the variant. So ids made by one server
-- sort in the order they were made, to the microsecond (two made in the same microsecond sort
-- at random).
CREATE FUNCTION "leasehold"."enqueue"(
  kind text,
  payload jsonb DEFAULT '{}'::jsonb,
  queue text DEFAULT 'default',
  run_at timestamptz DEFAULT NULL,
  delay interval DEFAULT NULL,
  priority integer DEFAULT 0,
  max_attempts integer DEFAULT 10,
  idempotency_key text DEFAULT NULL,
  dedupe_window interval DEFAULT interval '30 days',
  trace_id text DEFAULT NULL,
  max_age interval DEFAULT NULL,
  kind_version integer DEFAULT 1,
  job_id uuid DEFAULT NULL,
  notify boolean DEFAULT true
) RETURNS TABLE (id uuid, created boolean)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
  -- The TypeScript NAME_PATTERN (db/queue/validate.ts).
  name_pattern CONSTANT text := '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$';
  names CONSTANT text := '1 to 128 of A-Z a-z 0-9 _ . : - (starting with a letter or digit)';
  ten_years CONSTANT interval := interval '3650 days';
  problems text[] := ARRAY[]::text[];
  payload_bytes bigint;
  micros bigint;
  fraction integer;
  bytes bytea;
  new_id uuid;
  key_owner uuid;
  written integer;
BEGIN
  -- Input: every problem named at once, as a sentence; nothing is written.
  IF enqueue.kind IS NULL THEN
    problems := array_append(problems, 'kind is required');
  ELSIF enqueue.kind !~ name_pattern THEN
    problems := array_append(problems, format('kind must be %s, not %L', names, left(enqueue.kind, 140)));
  END IF;
  IF enqueue.queue IS NULL OR enqueue.queue !~ name_pattern THEN
    problems := array_append(problems, format('queue must be %s, not %L', names, left(enqueue.queue, 140)));
  END IF;
  IF enqueue.payload IS NULL THEN
    problems := array_append(problems, 'payload must be a JSON value, not SQL NULL (pass ''{}'' for none)');
  ELSE
    payload_bytes := octet_length(enqueue.payload::text);
    IF payload_bytes > 262144 THEN
      problems := array_append(problems, format('payload is %s bytes of JSON, more than the 262144 allowed (store large data elsewhere and enqueue a reference)', payload_bytes));
    END IF;
  END IF;
  IF enqueue.kind_version IS NULL OR enqueue.kind_version NOT BETWEEN 1 AND 1000000 THEN
    problems := array_append(problems, format('kind_version must be an integer from 1 to 1000000, not %s', coalesce(enqueue.kind_version::text, 'NULL')));
  END IF;
  IF enqueue.priority IS NULL OR enqueue.priority NOT BETWEEN 0 AND 100 THEN
    problems := array_append(problems, format('priority must be an integer from 0 (the default, lowest) to 100, not %s', coalesce(enqueue.priority::text, 'NULL')));
  END IF;
  IF enqueue.run_at IS NOT NULL AND enqueue.delay IS NOT NULL THEN
    problems := array_append(problems, 'give run_at or delay, not both');
  END IF;
  IF enqueue.run_at IS NOT NULL AND NOT isfinite(enqueue.run_at) THEN
    problems := array_append(problems, format('run_at must be a finite time, not %s', enqueue.run_at));
  END IF;
  IF enqueue.delay IS NOT NULL AND (enqueue.delay < interval '0' OR enqueue.delay > ten_years) THEN
    problems := array_append(problems, format('delay must be from 0 to 3650 days, not %s', enqueue.delay));
  END IF;
  IF enqueue.max_attempts IS NULL OR enqueue.max_attempts NOT BETWEEN 1 AND 1000 THEN
    problems := array_append(problems, format('max_attempts must be an integer from 1 to 1000, not %s', coalesce(enqueue.max_attempts::text, 'NULL')));
  END IF;
  IF enqueue.max_age IS NOT NULL AND (enqueue.max_age <= interval '0' OR enqueue.max_age > ten_years) THEN
    problems := array_append(problems, format('max_age must be more than 0 and at most 3650 days, not %s', enqueue.max_age));
  END IF;
  IF enqueue.idempotency_key IS NOT NULL AND length(enqueue.idempotency_key) NOT BETWEEN 1 AND 512 THEN
    problems := array_append(problems, format('idempotency_key must be 1 to 512 characters, not %s', length(enqueue.idempotency_key)));
  END IF;
  IF enqueue.dedupe_window IS NULL OR enqueue.dedupe_window <= interval '0' OR enqueue.dedupe_window > ten_years THEN
    problems := array_append(problems, format('dedupe_window must be more than 0 and at most 3650 days, not %s', coalesce(enqueue.dedupe_window::text, 'NULL')));
  END IF;
  IF enqueue.trace_id IS NOT NULL AND length(enqueue.trace_id) NOT BETWEEN 1 AND 128 THEN
    problems := array_append(problems, format('trace_id must be 1 to 128 characters, not %s', length(enqueue.trace_id)));
  END IF;
  IF enqueue.notify IS NULL THEN
    problems := array_append(problems, 'notify must be true or false, not NULL');
  END IF;
  IF cardinality(problems) > 0 THEN
    RAISE EXCEPTION USING
      ERRCODE = 'invalid_parameter_value',
      MESSAGE = format('leasehold.enqueue refused the job: %s.', array_to_string(problems, '; ')),
      HINT = 'Nothing was written. See docs/contract.md, Enqueue, for each argument''s rule.';
  END IF;

  IF enqueue.job_id IS NOT NULL THEN
    new_id := enqueue.job_id;
  ELSE
    micros := (extract(epoch FROM clock_timestamp()) * 1000000)::bigint;
    fraction := ((micros % 1000) * 4096 / 1000)::integer;
    bytes := uuid_send(gen_random_uuid()); -- version 4: its variant bits (10) are already right
    bytes := overlay(bytes PLACING substring(int8send(micros / 1000) FROM 3) FROM 1 FOR 6);
    bytes := set_byte(bytes, 6, 112 | (fraction >> 8)); -- version 7, then the fraction's high 4 bits
    bytes := set_byte(bytes, 7, fraction & 255);
    new_id := encode(bytes, 'hex')::uuid;
  END IF;

  -- Three tries only for the rare race where a repeat's key was purged between statements.
  FOR try_number IN 1..3 LOOP
    IF enqueue.idempotency_key IS NOT NULL THEN
      -- A concurrent enqueue of the key waits here on the key's unique index: one inserts,
      -- the others return its job; if the first rolls back, a waiter inserts.
      INSERT INTO leasehold.dedupe_keys (key, job_id, queue, expires_at)
      VALUES (enqueue.idempotency_key, new_id, enqueue.queue, statement_timestamp() + enqueue.dedupe_window)
      ON CONFLICT ON CONSTRAINT dedupe_keys_pkey DO NOTHING;
      GET DIAGNOSTICS written = ROW_COUNT;
      IF written = 0 THEN
        -- A new snapshot (READ COMMITTED): it sees the key that committed after this
        -- statement began.
        SELECT d.job_id INTO key_owner FROM leasehold.dedupe_keys d WHERE d.key = enqueue.idempotency_key;
        IF FOUND THEN
          id := key_owner;
          created := false;
          RETURN NEXT;
          RETURN;
        END IF;
        CONTINUE;
      END IF;
    END IF;
    -- claim_at is the aging sort key: run_at moved earlier by priority × the queue's aging
    -- step (60 s for a queue without a row). The ready row comes from jobs_inserted_ready_rows.
    INSERT INTO leasehold.jobs (id, queue, kind, kind_version, payload, idempotency_key, priority, run_at,
                                claim_at, max_attempts, trace_id, expires_at)
    SELECT new_id, enqueue.queue, enqueue.kind, enqueue.kind_version, enqueue.payload, enqueue.idempotency_key,
           enqueue.priority, s.run_at,
           s.run_at - make_interval(secs => enqueue.priority * coalesce(q.aging_seconds, 60)),
           enqueue.max_attempts, enqueue.trace_id, statement_timestamp() + enqueue.max_age
    FROM (SELECT coalesce(enqueue.run_at, statement_timestamp() + coalesce(enqueue.delay, interval '0')) AS run_at) s
    LEFT JOIN leasehold.queues q ON q.name = enqueue.queue
    ON CONFLICT ON CONSTRAINT jobs_pkey DO NOTHING;
    GET DIAGNOSTICS written = ROW_COUNT;
    IF written = 0 THEN
      -- Raising also undoes the key taken above: the call wrote nothing.
      RAISE EXCEPTION USING
        ERRCODE = 'unique_violation',
        MESSAGE = format('leasehold.enqueue refused the job: a job with id %s already exists (ids must be unique; use idempotency_key to deduplicate).', new_id),
        HINT = 'Nothing was written.';
    END IF;
    IF enqueue.notify THEN
      PERFORM pg_notify('leasehold_jobs', enqueue.queue);
    END IF;
    id := new_id;
    created := true;
    RETURN NEXT;
    RETURN;
  END LOOP;
  RAISE EXCEPTION USING
    ERRCODE = 'serialization_failure',
    MESSAGE = format('leasehold.enqueue: idempotency key %L kept changing owner; try again.', left(enqueue.idempotency_key, 140));
END
$$;
--> statement-breakpoint
-- Only the roles given it (db/roles.sql) call it; its owner always may.
REVOKE ALL ON FUNCTION "leasehold"."enqueue"(text, jsonb, text, timestamptz, interval, integer, integer, text,
  interval, text, interval, integer, uuid, boolean) FROM PUBLIC;
--> statement-breakpoint
-- Every job with its derived sub-state (db/states.ts subStateOf, db/queries/sub-states.ts), as
-- the dashboard's badge names it. Left out: the lease token (it identifies the attempt that may
-- settle the job), the claim sort key (internal) and the payload (it may hold data the
-- dashboard redacts per kind). Indexed for id, (queue, id) and (kind, id); a filter on state or
-- sub_state walks every job: count with queue_stats instead.
CREATE VIEW "leasehold"."jobs_view" AS
SELECT j.id, j.queue, j.kind, j.kind_version, j.state,
       CASE
         WHEN j.state = 'ready' AND j.attempts > 0 THEN 'retrying'
         WHEN j.state = 'ready' AND j.run_at > now() THEN 'scheduled'
         WHEN j.state = 'ready' THEN 'ready'
         WHEN j.state = 'running' AND j.lease_until <= now() THEN 'lease_expired'
         ELSE j.state
       END AS sub_state,
       j.priority, j.attempts, j.max_attempts, j.run_at, j.created_at, j.started_at, j.finished_at, j.updated_at,
       j.lease_until, j.worker_id, j.failure_class, j.last_error, j.idempotency_key,
       coalesce(j.trace_id, replace(j.id::text, '-', '')) AS trace_id, j.expires_at
FROM leasehold.jobs j;
--> statement-breakpoint
-- Per queue, what db/queries/overview.ts backlog() counts, the same way: live counts from the
-- ready rows and the lease rows (a lease row's deadline is never later than its jobs', so only
-- due lease rows can hold expired jobs), dead and cancelled from the class indexes (every dead
-- or cancelled job has a class), done from the per-minute rollup. No part walks the jobs by
-- state. A queue is listed once it has a ready row, a lease row, a dead or cancelled job, a
-- job done in the last hour, or a `queues` row.
CREATE VIEW "leasehold"."queue_stats" AS
WITH ready AS (
  SELECT r.queue,
         count(*) FILTER (WHERE r.attempts = 0 AND r.run_at <= now()) AS ready,
         count(*) FILTER (WHERE r.attempts = 0 AND r.run_at > now()) AS scheduled,
         count(*) FILTER (WHERE r.attempts > 0) AS retrying,
         extract(epoch FROM now() - min(r.run_at) FILTER (WHERE r.run_at <= now()))::float8 AS oldest
  FROM leasehold.ready_jobs r GROUP BY r.queue
), expired AS (
  SELECT d.queue, count(*) AS n
  FROM leasehold.leases d JOIN leasehold.jobs j ON j.id = ANY(d.job_ids)
  WHERE d.lease_until <= now() AND j.lease_token = d.token AND j.state = 'running' AND j.lease_until <= now()
  GROUP BY d.queue
), running AS (
  SELECT l.queue, sum(l.running) - coalesce(max(x.n), 0) AS running, coalesce(max(x.n), 0) AS lease_expired
  FROM leasehold.leases l LEFT JOIN expired x ON x.queue = l.queue
  GROUP BY l.queue
), ended AS (
  SELECT j.queue, count(*) FILTER (WHERE j.state = 'dead') AS dead, count(*) FILTER (WHERE j.state = 'cancelled') AS cancelled
  FROM leasehold.jobs j
  WHERE j.failure_class IS NOT NULL AND j.state IN ('dead', 'cancelled')
  GROUP BY j.queue
), done AS (
  SELECT f.queue, sum(f.jobs) AS n FROM leasehold.finished_rollup f
  WHERE f.state = 'done' AND f.minute > now() - interval '1 hour'
  GROUP BY f.queue
), names AS (
  SELECT queue FROM ready UNION SELECT queue FROM running UNION SELECT queue FROM ended
  UNION SELECT queue FROM done UNION SELECT name FROM leasehold.queues
)
SELECT n.queue,
       coalesce(q.paused, false) AS paused,
       coalesce(r.ready, 0)::bigint AS ready,
       coalesce(r.scheduled, 0)::bigint AS scheduled,
       coalesce(r.retrying, 0)::bigint AS retrying,
       coalesce(u.running, 0)::bigint AS running,
       coalesce(u.lease_expired, 0)::bigint AS lease_expired,
       coalesce(e.dead, 0)::bigint AS dead,
       coalesce(e.cancelled, 0)::bigint AS cancelled,
       coalesce(d.n, 0)::bigint AS done_last_hour,
       -- Null when nothing is due (greatest() would make that 0).
       (CASE WHEN r.oldest < 0 THEN 0 ELSE r.oldest END)::float8 AS oldest_ready_age_seconds
FROM names n
LEFT JOIN ready r ON r.queue = n.queue
LEFT JOIN running u ON u.queue = n.queue
LEFT JOIN ended e ON e.queue = n.queue
LEFT JOIN done d ON d.queue = n.queue
LEFT JOIN leasehold.queues q ON q.name = n.queue;
