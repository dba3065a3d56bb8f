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
import { randomBytes } from 'node:crypto';
import {
  ACCOUNT,
  AUDITED_PER_CLIENT_PER_MINUTE,
  AUDITED_PER_MINUTE,
  MAX_SIGN_IN_AUDIT_ROWS_PER_MINUTE,
  recordSignIn,
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

describe('sign-in audit rows', () => {
  const signInRows = (since: string) =>
    run<{ minute: string; client: string | null; outcome: string; requested: number; detail: Record<string, unknown> }>(
      t.db,
      sql`SELECT date_trunc('minute', at)::text AS minute, detail->>'client' AS client, outcome, requested, detail
          FROM leasehold.audit_log WHERE action = 'sign_in' AND id > ${since}::bigint ORDER BY id`,
    );
  const lastId = async () =>
    (await run<{ id: string }>(t.db, sql`SELECT coalesce(max(id), 0)::text AS id FROM leasehold.audit_log`))[0]!.id;

  it('stay within the caps while 16 clients try random e-mails for 20 s, and no row is ever updated', async () => {
    expect([AUDITED_PER_CLIENT_PER_MINUTE, AUDITED_PER_MINUTE, MAX_SIGN_IN_AUDIT_ROWS_PER_MINUTE]).toEqual([
      30, 120, 121,
    ]);
    const since = await lastId();
    const until = Date.now() + 20_000;
    let attempts = 0;
    // Halfway, the rows so far and where each row version lies: an UPDATE would move it.
    const midway = new Promise<{ id: string; ctid: string; row: string }[]>((resolve, reject) => {
      setTimeout(() => {
        run<{ id: string; ctid: string; row: string }>(
          t.db,
          sql`SELECT id::text, ctid::text, a::text AS row FROM leasehold.audit_log a WHERE id > ${since}::bigint ORDER BY id`,
        ).then(resolve, reject);
      }, 10_000);
    });
    await Promise.all(
      Array.from({ length: 16 }, async (_, c) => {
        while (Date.now() < until) {
          const email = `${randomBytes(6).toString('hex')}@flood.example.com`;
          await recordSignIn(t.db, { actor: email, outcome: 'failed', via: 'credentials', client: `203.0.113.${c}` });
          attempts += 1;
        }
      }),
    );
    const rows = await signInRows(since);
    // The flood happened: far more attempts than rows.
    expect(attempts).toBeGreaterThan(1000);
    // 20 s touch at most two minutes: at most 121 rows each, at most 30 per client and minute.
    expect(rows.length).toBeLessThanOrEqual(2 * MAX_SIGN_IN_AUDIT_ROWS_PER_MINUTE);
    expect(rows.length).toBeGreaterThanOrEqual(AUDITED_PER_MINUTE);
    const perMinute = new Map<string, number>();
    const perClient = new Map<string, number>();
    for (const r of rows.filter((r) => r.outcome === 'failed')) {
      perMinute.set(r.minute, (perMinute.get(r.minute) ?? 0) + 1);
      perClient.set(`${r.minute} ${r.client}`, (perClient.get(`${r.minute} ${r.client}`) ?? 0) + 1);
    }
    expect(Math.max(...perMinute.values())).toBeLessThanOrEqual(AUDITED_PER_MINUTE);
    expect(Math.max(...perClient.values())).toBeLessThanOrEqual(AUDITED_PER_CLIENT_PER_MINUTE);
    // What was left out is counted, and the next minute's first sign-in writes its one summary row.
    await run(
      t.db,
      sql`UPDATE leasehold.sign_in_throttle SET audit_minute = audit_minute - interval '1 minute' WHERE account = 'AUDIT'`,
    );
    const [pending] = await run<{ unaudited: number; audited: number }>(
      t.db,
      sql`SELECT unaudited, audited FROM leasehold.sign_in_throttle WHERE account = 'AUDIT' AND client = ''`,
    );
    expect(pending!.unaudited).toBeGreaterThan(0);
    const before = await lastId();
    await recordSignIn(t.db, {
      actor: 'late@flood.example.com',
      outcome: 'failed',
      via: 'credentials',
      client: '198.51.100.1',
    });
    const after = await signInRows(before);
    expect(after.map((r) => [r.outcome, r.requested])).toEqual([
      ['not_audited', pending!.unaudited],
      ['failed', 1],
    ]);
    expect(after[0]!.detail).toMatchObject({
      not_audited: pending!.unaudited,
      per_client_per_minute: 30,
      all_clients_per_minute: 120,
    });
    // Audit rows are only inserted: every row there halfway is still there, the same version.
    const seen = await midway;
    expect(seen.length).toBeGreaterThan(0);
    const now = await run<{ id: string; ctid: string; row: string }>(
      t.db,
      sql`SELECT id::text, ctid::text, a::text AS row FROM leasehold.audit_log a WHERE id = ANY(${sql.param(seen.map((r) => r.id))}::bigint[]) ORDER BY id`,
    );
    expect(now).toEqual(seen);
  }, 90_000);

  it('keep thirty rows per client address and minute whatever accounts it names, count the rest, and always write a success', async () => {
    const client = '192.0.2.77';
    // As if a new minute had begun, without the flood above in it.
    await run(t.db, sql`UPDATE leasehold.sign_in_throttle SET audited = 0, unaudited = 0 WHERE account = 'AUDIT'`);
    const since = await lastId();
    const audited = [];
    for (let i = 0; i < 35; i++) {
      audited.push(
        await recordSignIn(t.db, { actor: `a${i}@cap.example.com`, outcome: 'failed', via: 'credentials', client }),
      );
    }
    const success = await recordSignIn(t.db, {
      actor: 'real@cap.example.com',
      outcome: 'succeeded',
      via: 'credentials',
      client,
    });
    expect(success).toBe(true);
    // Unless this ran across a minute's end, the first thirty were written and the rest counted.
    const rows = await signInRows(since);
    expect(rows.at(-1)).toMatchObject({ outcome: 'succeeded', client });
    const minutes = new Set(rows.map((r) => r.minute));
    if (minutes.size === 1) {
      expect(audited).toEqual([...Array(30).fill(true), ...Array(5).fill(false)]);
      expect(rows).toHaveLength(31);
      const [count] = await run<{ audited: number; unaudited: number }>(
        t.db,
        sql`SELECT audited, unaudited FROM leasehold.sign_in_throttle WHERE account = 'AUDIT' AND client = ${`@${client}`}`,
      );
      expect(count).toEqual({ audited: 31, unaudited: 5 });
    } else {
      expect(rows.length).toBeLessThanOrEqual(2 * AUDITED_PER_CLIENT_PER_MINUTE + 2);
    }
  });
});
