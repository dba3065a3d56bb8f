/**
 * Sign-in throttling, in the database so that the limit holds across every dashboard process
 * (leasehold.sign_in_throttle). Failures count per (account, client address) and per account
 * (client ''): each pair gets PAIR.free failures without delay, then waits that double with
 * every further failure, up to PAIR.maxSeconds; all addresses together get ACCOUNT.free, then
 * the same doubling. A row whose last failure is older than WINDOW_SECONDS starts again from
 * nothing; every failure deletes such rows. A refused guess is answered before any password
 * hash runs (lib/auth.ts). Sign-ins are audit rows (action `sign_in`), capped per client address
 * and minute and for all addresses together (recordSignIn).
 */
import { sql, type SQL } from 'drizzle-orm';
import { run, type Executor, type PgTimestamp } from './queue/executor.ts';

/** A row older than this (last failure) is forgotten: the counts start again. */
export const WINDOW_SECONDS = 3600;

export interface Backoff {
  /** Failures taken without any wait. */
  free: number;
  /** The wait after the first failure past `free`, doubling with each further one. */
  baseSeconds: number;
  maxSeconds: number;
}

/** One address guessing at one account. */
export const PAIR: Backoff = { free: 5, baseSeconds: 2, maxSeconds: 900 };
/** Every address together, at one account: a higher ceiling, the same doubling. */
export const ACCOUNT: Backoff = { free: 25, baseSeconds: 2, maxSeconds: 900 };

/** The wait after `failures` failures (0 while free). */
export function backoffSeconds(failures: number, b: Backoff): number {
  if (failures < b.free) return 0;
  return Math.min(b.maxSeconds, b.baseSeconds * 2 ** Math.min(30, failures - b.free));
}

/** The key an account is counted under: the email as typed, trimmed and lower-cased. */
export function throttleAccount(email: string): string {
  return email.trim().toLowerCase().slice(0, 254) || '-';
}

const PER_ACCOUNT = '';

/** Seconds until this account may be tried from this client again; 0 when it may now. */
export async function signInWait(executor: Executor, account: string, client: string): Promise<number> {
  const rows = await run<{ wait: number | null }>(
    executor,
    sql`SELECT ceil(extract(epoch FROM max(blocked_until) - now()))::int AS wait
        FROM leasehold.sign_in_throttle
        WHERE account = ${account} AND client IN (${client}, ${PER_ACCOUNT}) AND blocked_until > now()
          AND last_failure_at > now() - make_interval(secs => ${WINDOW_SECONDS})`,
  );
  return Math.max(0, rows[0]?.wait ?? 0);
}

/**
 * Counts a failure for the pair and the account (one statement), forgets rows past the window,
 * and says the wait it imposes now (0 while still free) and the counts.
 */
export async function recordSignInFailure(
  executor: Executor,
  account: string,
  client: string,
): Promise<{ wait: number; pairFailures: number; accountFailures: number }> {
  const backoff = (b: Backoff, failures: SQL) =>
    sql`CASE WHEN ${failures} < ${b.free} THEN NULL
             ELSE now() + make_interval(secs => least(${b.maxSeconds}::float8,
                    ${b.baseSeconds}::float8 * power(2::float8, least(30, ${failures} - ${b.free}))))
        END`;
  const fresh = sql`t.last_failure_at <= now() - make_interval(secs => ${WINDOW_SECONDS})`;
  const failures = sql`CASE WHEN ${fresh} THEN 1 ELSE t.failures + 1 END`;
  // One failure more for (account, `who`): the pair's row, or the account's (PER_ACCOUNT).
  const counted = (who: string, b: Backoff) =>
    sql`INSERT INTO leasehold.sign_in_throttle AS t (account, client, failures, blocked_until)
          VALUES (${account}, ${who}, 1, ${backoff(b, sql`1`)})
          ON CONFLICT (account, client) DO UPDATE SET
            failures = ${failures},
            first_failure_at = CASE WHEN ${fresh} THEN now() ELSE t.first_failure_at END,
            last_failure_at = now(),
            blocked_until = ${backoff(b, failures)}
          RETURNING client, failures, blocked_until`;
  const rows = await run<{ client: string; failures: number; blocked_until: PgTimestamp | null; wait: number }>(
    executor,
    sql`WITH pruned AS (
          DELETE FROM leasehold.sign_in_throttle
          WHERE last_failure_at < now() - make_interval(secs => ${WINDOW_SECONDS})
            AND NOT (account = ${account} AND client IN (${client}, ${PER_ACCOUNT}))
            -- The audit cap's count for every address: it holds the last minute's summary.
            AND NOT (account = 'AUDIT' AND client = '')
        ),
        pair AS (${counted(client, PAIR)}),
        whole AS (${counted(PER_ACCOUNT, ACCOUNT)})
        SELECT client, failures, blocked_until,
               coalesce(ceil(extract(epoch FROM blocked_until - now())), 0)::int AS wait
        FROM (SELECT * FROM pair UNION ALL SELECT * FROM whole) AS counted`,
  );
  const pair = rows.find((r) => r.client === client && client !== PER_ACCOUNT) ?? rows[0];
  const whole = rows.find((r) => r.client === PER_ACCOUNT);
  return {
    wait: Math.max(0, ...rows.map((r) => r.wait)),
    pairFailures: pair?.failures ?? 0,
    accountFailures: whole?.failures ?? 0,
  };
}

/** A success forgets the pair's failures (not the account's: other addresses still count). */
export async function clearSignInFailures(executor: Executor, account: string, client: string): Promise<void> {
  await run(
    executor,
    sql`DELETE FROM leasehold.sign_in_throttle WHERE account = ${account} AND client = ${client} AND client <> ${PER_ACCOUNT}`,
  );
}

export type SignInOutcome = 'succeeded' | 'failed' | 'throttled' | 'refused';

/**
 * The audit caps of sign-ins (leasehold.record_sign_in, drizzle/0011): at most this many
 * sign-in audit rows per client address and minute, whatever accounts it names …
 */
export const AUDITED_PER_CLIENT_PER_MINUTE = 30;
/** … and at most this many per minute for every address together … */
export const AUDITED_PER_MINUTE = 120;
/**
 * … plus one summary row (action `sign_in`, outcome `not_audited`, `requested` = how many were
 * left out) for a minute past either cap, written by the first sign-in of a later minute. So a
 * minute never gets more than AUDITED_PER_MINUTE + 1 sign-in rows, whoever floods it without a
 * password: a success is always written (and counts toward the caps).
 */
export const MAX_SIGN_IN_AUDIT_ROWS_PER_MINUTE = AUDITED_PER_MINUTE + 1;

/**
 * One audit row per sign-in (who, as typed, or the SSO identity; how it went; from where),
 * within the caps above: past them the attempt is counted (sign_in_throttle, account `AUDIT`),
 * not written. Returns whether this one got its row. Audit rows are never updated.
 */
export async function recordSignIn(
  executor: Executor,
  entry: { actor: string; outcome: SignInOutcome; via: 'credentials' | 'oidc'; client: string; retryAfter?: number },
): Promise<boolean> {
  const rows = await run<{ audited: boolean }>(
    executor,
    sql`SELECT leasehold.record_sign_in(${entry.actor}, ${entry.outcome}, ${entry.via}, ${entry.client},
                                        ${entry.retryAfter ?? null}::integer) AS audited`,
  );
  return rows[0]?.audited === true;
}
