/**
 * Attempt history: every ended attempt (completed, failed, reaped, released, cancelled) gets
 * one `job_attempts` row written by the same statement that ended it.
 */
import { sql, type SQL } from 'drizzle-orm';
import type { AttemptOutcome } from '../schema';

/**
 * An INSERT for the rows of the CTE `settled`, which returns the ended jobs' `id, attempts,
 * queue, kind, worker_id, started_at` (values after the update). The token, class and error
 * are SQL so callers can pass parameters or columns of `settled` (`s.…`).
 */
export function recordAttempts(outcome: AttemptOutcome, token: SQL, failureClass: SQL, error: SQL): SQL {
  return sql`
    INSERT INTO job_attempts (job_id, attempt, queue, kind, worker_id, lease_token, started_at, ended_at,
                              outcome, failure_class, error, duration_ms)
    SELECT s.id, s.attempts, s.queue, s.kind, s.worker_id, ${token}, s.started_at, statement_timestamp(), ${outcome},
           ${failureClass}, ${error}, least(greatest(0, extract(epoch FROM statement_timestamp() - s.started_at) * 1000), 2147483647)::int
    FROM settled s`;
}
