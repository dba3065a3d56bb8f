/**
 * The sign-in throttle's counts in the database: a pair (account, address) waits after
 * PAIR.free failures, every address together after ACCOUNT.free, the waits double up to their
 * cap, rows past the window are pruned and start afresh, a success forgets the pair. Real
 * PostgreSQL.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../test/db.ts';
import { run } from './queue/executor.ts';
import {
  ACCOUNT,
  backoffSeconds,
  clearSignInFailures,
  PAIR,
  recordSignInFailure,
  signInWait,
  WINDOW_SECONDS,
} from './sign-in.ts';

const t = useTestDatabase();
let n = 0;
const account = () => `guess-${n++}@throttle.example.com`;

async function fail(who: string, client: string, times: number) {
  let last = { wait: 0, pairFailures: 0, accountFailures: 0 };
  for (let i = 0; i < times; i++) last = await recordSignInFailure(t.db, who, client);
  return last;
}

describe('the backoff', () => {
  it('is free for the first failures, then doubles up to the cap', () => {
    expect(PAIR).toEqual({ free: 5, baseSeconds: 2, maxSeconds: 900 });
    expect(ACCOUNT).toEqual({ free: 25, baseSeconds: 2, maxSeconds: 900 });
    expect([4, 5, 6, 7, 10, 13, 100].map((f) => backoffSeconds(f, PAIR))).toEqual([0, 2, 4, 8, 64, 512, 900]);
  });
});

describe('one address guessing at one account', () => {
  it('is free for five failures, then waits a growing time', async () => {
    const who = account();
    expect(await fail(who, '192.0.2.1', 4)).toMatchObject({ wait: 0, pairFailures: 4 });
    expect(await signInWait(t.db, who, '192.0.2.1')).toBe(0);
    expect(await fail(who, '192.0.2.1', 1)).toMatchObject({ wait: 2, pairFailures: 5 });
    expect(await signInWait(t.db, who, '192.0.2.1')).toBeGreaterThanOrEqual(1);
    expect((await fail(who, '192.0.2.1', 1)).wait).toBe(4);
    // Another address is not held back by this one's failures (the account is far from its ceiling).
    expect(await signInWait(t.db, who, '192.0.2.2')).toBe(0);
  });

  it('forgets the pair on a success, but not the account’s count', async () => {
    const who = account();
    await fail(who, '192.0.2.1', 5);
    await clearSignInFailures(t.db, who, '192.0.2.1');
    expect(await signInWait(t.db, who, '192.0.2.1')).toBe(0);
    const [row] = await run<{ failures: number }>(
      t.db,
      sql`SELECT failures FROM leasehold.sign_in_throttle WHERE account = ${who} AND client = ''`,
    );
    expect(row?.failures).toBe(5);
  });
});

describe('every address together', () => {
  it('meets the account’s ceiling after 25 failures, from an address never seen', async () => {
    const who = account();
    for (let i = 0; i < ACCOUNT.free - 1; i++) await fail(who, `198.51.100.${i}`, 1);
    expect(await signInWait(t.db, who, '203.0.113.1')).toBe(0);
    expect((await fail(who, '198.51.100.200', 1)).accountFailures).toBe(ACCOUNT.free);
    expect(await signInWait(t.db, who, '203.0.113.1')).toBeGreaterThanOrEqual(1);
  });
});

describe('old rows', () => {
  it('are pruned by a later failure, and a pair past the window starts again from one', async () => {
    const old = account();
    const who = account();
    await fail(old, '192.0.2.9', 7);
    await fail(who, '192.0.2.9', 7);
    const past = sql`now() - make_interval(secs => ${WINDOW_SECONDS + 60})`;
    await run(
      t.db,
      sql`UPDATE leasehold.sign_in_throttle SET last_failure_at = ${past}, blocked_until = ${past}
          WHERE account IN (${old}, ${who})`,
    );
    expect(await fail(who, '192.0.2.9', 1)).toMatchObject({ wait: 0, pairFailures: 1, accountFailures: 1 });
    const rows = await run<{ account: string }>(
      t.db,
      sql`SELECT account FROM leasehold.sign_in_throttle WHERE account = ${old}`,
    );
    expect(rows).toEqual([]);
  });
});
