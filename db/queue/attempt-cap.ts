/**
 * The attempt cap, and the one sentence every path says when a job reaches it: a failure with
 * no attempts left (failStatement), a reaped job with none left (reapStatement), an operator's
 * retry of a job that has used the limit (retryIfTerminal), and an enqueue that asks for more
 * than the limit. The SQL paths build it with `noAttemptsLeftSql`, which is the same text as
 * `noAttemptsLeft` (db/queue/attempt-cap.test.ts compares them through real PostgreSQL).
 *
 * The budget: `attempts - released` (a release at shutdown is not charged) against the cap,
 * `least(job's max_attempts, handler's maxAttempts)`, itself never above MAX_ATTEMPTS.
 */
import { sql, type SQL } from 'drizzle-orm';

/** The most attempts a job can be given (the jobs and kinds CHECKs say the same). */
export const MAX_ATTEMPTS = 1000;

/** Said whenever the cap in the way is the limit itself. */
export const ATTEMPT_LIMIT_SENTENCE = `a job gets at most ${MAX_ATTEMPTS} attempts`;

/** `no attempts left: 3 of 3 used`, with the limit's sentence when the cap is the limit. */
export function noAttemptsLeft(used: number, cap: number): string {
  return `no attempts left: ${used} of ${cap} used${cap >= MAX_ATTEMPTS ? ` (${ATTEMPT_LIMIT_SENTENCE})` : ''}`;
}

/** noAttemptsLeft in SQL, for the statements that decide in the database. */
export function noAttemptsLeftSql(used: SQL, cap: SQL): SQL {
  return sql`format('no attempts left: %s of %s used%s', ${used}, ${cap},
                    CASE WHEN ${cap} >= ${sql.raw(String(MAX_ATTEMPTS))} THEN ${sql.raw(`' (${ATTEMPT_LIMIT_SENTENCE})'`)} ELSE '' END)`;
}

/** The enqueue refusal for `maxAttempts` above the limit. */
export function overAttemptLimit(asked: number): string {
  return `${asked} asked for (${ATTEMPT_LIMIT_SENTENCE})`;
}
