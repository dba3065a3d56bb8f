-- leasehold:schema-version 5
-- leasehold:compatible-from 1
-- Back-pressure on wake-ups (docs/operations.md, Wake-ups and the NOTIFY queue): leasehold.enqueue
-- sends its wake-up NOTIFY only while pg_notification_queue_usage() is below 0.5, as the
-- TypeScript enqueue does (db/queue/wake.ts NOTIFY_QUEUE_LIMIT). A LISTENing session that stops
-- reading keeps the server's bounded NOTIFY queue from draining; once it is full every
-- transaction that NOTIFYs fails at COMMIT, so an enqueue from a trigger or an outbox would take
-- the caller's transaction down with it. Above the limit the job is found by polling.
--
-- The same signature and body as 0002 but for the guard. CREATE OR REPLACE keeps the owner and
-- the grants (db/roles.sql), and code of every schema version runs on it: nothing it reads changed.
CREATE OR REPLACE FUNCTION "leasehold"."enqueue"(
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
    -- Above half the NOTIFY queue in use, no wake-up: workers poll (db/queue/wake.ts).
    IF enqueue.notify AND pg_catalog.pg_notification_queue_usage() < 0.5 THEN
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
