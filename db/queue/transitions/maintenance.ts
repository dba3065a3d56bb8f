/**
 * The maintenance transitions: the reaper (running → ready | dead) and the end of jobs of kind
 * versions no live worker runs (ready → dead). db/queue/transitions.ts is the face; only it
 * imports this one.
 */
import { sql, type SQL } from 'drizzle-orm';
import { MAX_ATTEMPTS, noAttemptsLeftSql } from '../attempt-cap.ts';
import { recordAttempts } from '../history.ts';
import { END_LEASE, rollup, workerLeaseCovers } from './guards.ts';

// ---------------------------------------------------------------------------------------------
// running → ready | dead: the reaper

/**
 * Ends up to `limit` attempts whose effective deadline passed. First it locks the worker
 * leases that ran out (FOR UPDATE: a renewal in flight is waited for, and a lease it renewed is
 * then left alone), removing those whose worker has no lease row left. It walks the lease rows due (their deadline is never later
 * than any of their running jobs' own) whose claim no live worker lease covers, takes those
 * jobs whose own deadline passed (a per-job heartbeat may have moved some), re-checks `running
 * AND lease_until <= now()` on the locked row (river#1302 overwrote jobs completed meanwhile),
 * and then sets each
 * due lease row to what is left: deleted when none of its jobs runs, else its count and the
 * earliest remaining deadline (which also repairs a count that writes from outside put wrong).
 * A crash consumes an attempt: `ready` (class `lease_expired`) while attempts and max age
 * allow, else `dead`. The attempts are the charged ones (`attempts - released`) against the
 * same cap as a failure's: the job's max_attempts, or the handler's `maxAttempts` when lower
 * (the kinds registry's `max_attempts`, written by the workers that run the kind version).
 *
 * @internal
 */
export function reapStatement(limit: number, delaySeconds: number): SQL {
  const next = sql`(statement_timestamp() + make_interval(secs => ${delaySeconds}::float8))`;
  const cap = sql`least(j.max_attempts, coalesce(e.handler_cap, ${sql.raw(String(MAX_ATTEMPTS))}))`;
  const left = sql`(j.attempts - j.released < ${cap})`;
  const retrying = sql`(${left} AND NOT coalesce(j.expires_at <= ${next}, false))`;
  return sql`
    WITH ended_worker_lease AS MATERIALIZED (
      SELECT w.worker_id, w.lease_until FROM leasehold.worker_leases w
      WHERE w.lease_until <= statement_timestamp()
      FOR UPDATE
    ),
    -- A worker lease that ran out goes once no lease row of its worker is left (a round after
    -- its last claim's): until then it still says until when those jobs were held.
    worker_lease_gone AS (
      DELETE FROM leasehold.worker_leases w USING ended_worker_lease e
      WHERE w.worker_id = e.worker_id AND NOT EXISTS (SELECT 1 FROM leasehold.leases l WHERE l.worker_id = e.worker_id)
      RETURNING 1
    ),
    due AS (
      SELECT l.token, l.queue, l.job_ids, e.lease_until AS worker_until FROM leasehold.leases l
      LEFT JOIN leasehold.worker_leases w ON ${sql.raw(workerLeaseCovers('l', 'w'))}
      LEFT JOIN ended_worker_lease e ON e.worker_id = w.worker_id
      WHERE l.lease_until <= statement_timestamp() AND (w.worker_id IS NULL OR e.worker_id IS NOT NULL)
      ORDER BY l.lease_until
      LIMIT ${limit}
      FOR UPDATE OF l SKIP LOCKED
    ),
    expired AS (
      SELECT j.id, d.token, d.worker_until, k.max_attempts AS handler_cap FROM due d JOIN leasehold.jobs j ON j.id = ANY(d.job_ids)
      LEFT JOIN leasehold.kinds k ON k.kind = j.kind AND k.version = j.kind_version
      WHERE j.lease_token = d.token AND j.state = 'running' AND j.lease_until <= statement_timestamp()
      LIMIT ${limit}
      FOR UPDATE OF j SKIP LOCKED
    ),
    settled AS (
      UPDATE leasehold.jobs j SET
        state = CASE WHEN ${retrying} THEN 'ready' ELSE 'dead' END,
        failure_class = CASE WHEN ${left} AND NOT ${retrying} THEN 'expired' ELSE 'lease_expired' END,
        last_error = format('lease expired: attempt %s (worker %s) did not settle before its lease ended at %s%s',
                            j.attempts, coalesce(j.worker_id, '?'), greatest(j.lease_until, e.worker_until),
                            CASE WHEN ${retrying} THEN '' WHEN NOT ${left} THEN '; ' || ${noAttemptsLeftSql(sql`j.attempts - j.released`, cap)}
                                 ELSE '; max age reached' END),
        run_at = CASE WHEN ${retrying} THEN ${next} ELSE j.run_at END,
        claim_at = CASE WHEN ${retrying} THEN ${next} - (j.run_at - j.claim_at) ELSE j.claim_at END,
        ${sql.raw(END_LEASE)},
        finished_at = CASE WHEN ${retrying} THEN NULL ELSE statement_timestamp() END,
        updated_at = statement_timestamp()
      FROM expired e
      WHERE j.id = e.id AND j.state = 'running' AND j.lease_token = e.token AND j.lease_until <= statement_timestamp()
      RETURNING j.id, j.attempts, j.queue, j.kind, j.worker_id, j.started_at, j.state, j.failure_class, j.last_error,
                e.token AS lease_token
    ),
    history AS (${recordAttempts('lease_expired', sql`s.lease_token`, sql`s.failure_class`, sql`s.last_error`)}),
    ${sql.raw(rollup('settled'))},
    -- What each due lease row still covers: its running jobs under its token, less those
    -- settled just now (this statement's snapshot still sees them running).
    still AS (
      SELECT d.token, d.queue, count(j.id)::int AS running, min(j.lease_until) AS lease_until
      FROM due d LEFT JOIN leasehold.jobs j
        ON j.id = ANY(d.job_ids) AND j.lease_token = d.token AND j.state = 'running'
       AND j.id NOT IN (SELECT id FROM settled)
      GROUP BY d.token, d.queue
    ),
    lease_gone AS (
      DELETE FROM leasehold.leases l USING still s
      WHERE l.token = s.token AND l.queue = s.queue AND s.running = 0
      RETURNING 1
    ),
    lease_moved AS (
      UPDATE leasehold.leases l SET running = s.running, lease_until = s.lease_until FROM still s
      WHERE l.token = s.token AND l.queue = s.queue AND s.running > 0
      RETURNING 1
    )
    SELECT id, state FROM settled`;
}

// ---------------------------------------------------------------------------------------------
// ready → dead: jobs of a kind version no live worker runs, after the grace period

/**
 * Ends `dead` (class `permanent`) up to `limit` due ready jobs whose kind version no live
 * worker has run for `graceSeconds`: no worker seen within `liveSeconds` has registered it
 * (worker_kinds), and the job has been due, has existed (jobs.created_at), and the kind version
 * was last seen live (kinds.live_at) and last registered (kinds.last_seen_at) all longer than
 * the grace ago. A job of a kind that was never registered waits the grace from the later of
 * when it became due and when it was enqueued: a back-dated `runAt` (an outbox replay, a
 * backfill keeping its timestamps) still gets the whole grace, so producers first stays safe.
 *
 * First it records `live_at = now` on the kind versions live workers run (so a worker that
 * dies starts the grace then, not at its start), taking those rows in registerKinds' order so
 * the two never deadlock. Then, as the claim does, it locks the ready rows (SKIP LOCKED: a
 * claim holding one is about to run it), deletes them and updates the jobs still ready and due
 * (by primary key): a ready row before its job.
 *
 * Grouped jobs' ready rows (grouped_ready_jobs) are walked the same way: a grouped job of a
 * kind nobody runs ends `dead` too.
 *
 * Cost: a walk of every ready row not of a live kind version (the set is small, and the
 * maintenance round that calls it runs once a minute).
 *
 * @internal
 */
/**
 * The ready rows of `table` (`ready_jobs`, or a grouped job's `grouped_ready_jobs`) whose kind
 * version no live worker runs and has not for the grace, locked as the claim locks them.
 */
const unrunRows = (name: string, table: string, since: SQL, limit: number) => sql`${sql.raw(name)} AS (
      SELECT r.ctid FROM ${sql.raw(`leasehold.${table}`)} r
      JOIN leasehold.jobs jc ON jc.id = r.id
      LEFT JOIN leasehold.kinds k ON k.kind = r.kind AND k.version = r.kind_version
      WHERE r.kind_version IS NOT NULL AND r.run_at <= ${since} AND jc.created_at <= ${since}
        AND NOT EXISTS (SELECT 1 FROM live l WHERE l.kind = r.kind AND l.version = r.kind_version)
        AND coalesce(greatest(k.live_at, k.last_seen_at) <= ${since}, true)
      LIMIT ${limit}
      FOR UPDATE OF r SKIP LOCKED
    )`;

export function deadIfKindUnrunStatement(p: { graceSeconds: number; liveSeconds: number; limit: number }): SQL {
  const since = sql`(statement_timestamp() - make_interval(secs => ${p.graceSeconds}::float8))`;
  return sql`
    WITH live AS (
      SELECT DISTINCT wk.kind, wk.version FROM leasehold.worker_kinds wk
      JOIN leasehold.workers w ON w.id = wk.worker_id
      WHERE w.last_seen_at >= statement_timestamp() - make_interval(secs => ${p.liveSeconds}::float8)
    ),
    seen AS (
      UPDATE leasehold.kinds k SET live_at = statement_timestamp()
      FROM (
        SELECT k2.kind, k2.version FROM leasehold.kinds k2 JOIN live l ON l.kind = k2.kind AND l.version = k2.version
        ORDER BY k2.kind COLLATE "C", k2.version
        FOR UPDATE OF k2
      ) s
      WHERE k.kind = s.kind AND k.version = s.version
      RETURNING 1
    ),
    ${unrunRows('unrun', 'ready_jobs', since, p.limit)},
    ${unrunRows('unrun_grouped', 'grouped_ready_jobs', since, p.limit)},
    gone AS (
      DELETE FROM leasehold.ready_jobs r WHERE r.ctid = ANY(ARRAY(SELECT ctid FROM unrun)) RETURNING r.id
    ),
    gone_grouped AS (
      DELETE FROM leasehold.grouped_ready_jobs r WHERE r.ctid = ANY(ARRAY(SELECT ctid FROM unrun_grouped)) RETURNING r.id
    ),
    settled AS (
      UPDATE leasehold.jobs j SET
        state = 'dead', failure_class = 'permanent',
        last_error = format('no live worker ran kind %s version %s for the unknown-kind grace period (%s): '
                            'start a worker with a handler for it, then retry the job', j.kind, j.kind_version,
                            justify_interval(make_interval(secs => ${p.graceSeconds}::float8))),
        finished_at = statement_timestamp(), updated_at = statement_timestamp()
      WHERE j.id = ANY(ARRAY(SELECT id FROM gone UNION ALL SELECT id FROM gone_grouped))
        AND j.state = 'ready' AND j.run_at <= ${since} AND j.created_at <= ${since}
      RETURNING j.id, j.queue, j.kind, j.state, j.attempts
    ),${sql.raw(rollup('settled'))}
    SELECT id FROM settled`;
}
