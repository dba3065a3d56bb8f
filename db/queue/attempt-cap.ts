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

/**
 * noAttemptsLeft in SQL, for the statements that decide in the database.
 *
 * @internal
 */
export function noAttemptsLeftSql(used: SQL, cap: SQL): SQL {
  return sql`format('no attempts left: %s of %s used%s', ${used}, ${cap},
                    CASE WHEN ${cap} >= ${sql.raw(String(MAX_ATTEMPTS))} THEN ${sql.raw(`' (${ATTEMPT_LIMIT_SENTENCE})'`)} ELSE '' END)`;
}

/** The enqueue refusal for `maxAttempts` above the limit. */
export function overAttemptLimit(asked: number): string {
  return `${asked} asked for (${ATTEMPT_LIMIT_SENTENCE})`;
}

/** Which cap a job's attempts are counted against: its handler's `maxAttempts`, its own, or the limit. */
export type AttemptCapSource = 'handler' | 'job' | 'limit';

/**
 * A job's attempts as the queue counts them: what every surface shows (job page, jobs list,
 * retry plan, `leasehold jobs`). `charged` is `attempts - released` against `cap`, the lowest of
 * the job's `maxAttempts`, the handler's (`handlerMax`, from the kinds registry) and MAX_ATTEMPTS:
 * the same cap failStatement and the reaper apply. `released` (shutdown releases and hand-backs)
 * is counted apart: those attempts are not charged.
 */
export interface AttemptBudget {
  charged: number;
  released: number;
  cap: number;
  source: AttemptCapSource;
  /** The job's own `maxAttempts`. */
  jobMax: number;
  /** The handler's `maxAttempts` for the job's kind version, null when it declares none or no worker registered it. */
  handlerMax: number | null;
  /** Charged attempts still allowed before the job ends dead (0 when spent). */
  left: number;
}

export function attemptBudget(
  job: { attempts: number; released: number; maxAttempts: number },
  handlerMax: number | null,
): AttemptBudget {
  const charged = job.attempts - job.released;
  const handler = handlerMax === null ? Number.POSITIVE_INFINITY : Math.min(handlerMax, MAX_ATTEMPTS);
  const cap = Math.min(job.maxAttempts, handler, MAX_ATTEMPTS);
  const source: AttemptCapSource =
    handler < job.maxAttempts ? 'handler' : job.maxAttempts < MAX_ATTEMPTS ? 'job' : 'limit';
  return {
    charged,
    released: job.released,
    cap,
    source,
    jobMax: job.maxAttempts,
    handlerMax,
    left: Math.max(cap - charged, 0),
  };
}

/**
 * How many charged attempts an operator's retry allows (retryIfTerminal raises the job's own
 * cap to `charged + 1` when it was spent; the handler's cap still applies, so a retry past it
 * runs once): at least one, none when the limit itself is spent.
 */
export function attemptsAfterRetry(budget: AttemptBudget): number {
  if (budget.charged >= MAX_ATTEMPTS) return 0;
  const jobMax = Math.max(budget.jobMax, budget.charged + 1);
  const handler = budget.handlerMax === null ? MAX_ATTEMPTS : Math.min(budget.handlerMax, MAX_ATTEMPTS);
  return Math.max(Math.min(jobMax, handler, MAX_ATTEMPTS) - budget.charged, 1);
}
