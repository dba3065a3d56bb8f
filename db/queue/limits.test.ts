import { sql } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { describe, expect, it } from 'vitest';
import {
  claim,
  completeManyIfLeaseHeld,
  declareLimits,
  enqueueMany,
  failIfLeaseHeld,
  LeaseholdInputError,
  limitedQueues,
  limitWaitMs,
  listLimits,
  pauseLimit,
  reapExpiredLeases,
  renewQueueLimits,
  releaseIfLeaseHeld,
  setLimit,
  whyWaiting,
} from '.';
import { claimStatement } from './claim.ts';
import { run } from './executor.ts';
import { useTestDatabase } from '../../test/db.ts';
import { expireLease, uniqueQueue } from '../../test/factories.ts';
import { type PlanNode, rowsRead } from '../../test/plans.ts';

const t = useTestDatabase({ max: 30 });
const textOf = (query: ReturnType<typeof claimStatement>) => new PgDialect().sqlToQuery(query).sql;

const running = async (key: string) => (await listLimits(t.db)).find((l) => l.key === key)?.running ?? 0;

/** Jobs of `kind` in a queue of their own, and a claim of them counting toward `limits`. */
async function setUp(kind: string, jobs: number, limits: string[]) {
  const queue = uniqueQueue();
  await enqueueMany(
    t.db,
    Array.from({ length: jobs }, () => ({ queue, kind })),
  );
  const claimSome = (limit: number, leaseSeconds = 30) =>
    claim(t.db, { queues: [queue], workerId: `w-${queue}`, limit, leaseSeconds, limits });
  return { queue, claimSome };
}

describe('a concurrency limit', () => {
  it('lets racing claimers take exactly the free slots between them, never the last one twice', async () => {
    const kind = `race-${uniqueQueue()}`;
    await declareLimits(t.db, [{ scope: 'kind', name: kind, max: 7 }]);
    const { claimSome } = await setUp(kind, 100, [`kind:${kind}`]);
    // Twenty claims of 2 at once on twenty connections: 40 asked for, 7 slots.
    const batches = await Promise.all(Array.from({ length: 20 }, () => claimSome(2)));
    const taken = batches.flat();
    expect(taken).toHaveLength(7);
    expect(new Set(taken.map((j) => j.id)).size).toBe(7);
    expect(batches.filter((b) => b.length < 2).length).toBeGreaterThan(0); // the limit cut claims short
    expect(await running(`kind:${kind}`)).toBe(7);
    expect(await claimSome(5)).toEqual([]);
  });

  it('frees a slot at once when an attempt is acknowledged, fails or is released', async () => {
    const kind = `free-${uniqueQueue()}`;
    await declareLimits(t.db, [{ scope: 'kind', name: kind, max: 3 }]);
    const { claimSome } = await setUp(kind, 20, [`kind:${kind}`]);
    const [a, b, c] = await claimSome(10);
    expect(c).toBeDefined();
    expect(await claimSome(10)).toEqual([]);

    await completeManyIfLeaseHeld(t.db, [{ id: a!.id, leaseToken: a!.leaseToken }]);
    expect(await running(`kind:${kind}`)).toBe(2);
    expect(await claimSome(10)).toHaveLength(1);

    await failIfLeaseHeld(t.db, { ...b!, maxAttempts: 5 }, { error: 'boom', failureClass: 'transient' });
    expect(await claimSome(10)).toHaveLength(1);

    await releaseIfLeaseHeld(t.db, { id: c!.id, leaseToken: c!.leaseToken });
    expect(await claimSome(10)).toHaveLength(1);
    expect(await running(`kind:${kind}`)).toBe(3);
  });

  it("keeps a crashed worker's slot until the reaper ends its attempt, then frees it", async () => {
    const kind = `crash-${uniqueQueue()}`;
    await declareLimits(t.db, [{ scope: 'kind', name: kind, max: 2 }]);
    const { claimSome } = await setUp(kind, 10, [`kind:${kind}`]);
    const crashed = await claimSome(2);
    expect(crashed).toHaveLength(2);
    // The worker died: nobody settles. Its lease passes, but until the reaper ends the attempts
    // they still count.
    for (const job of crashed) await expireLease(t.db, job.id);
    expect(await claimSome(2)).toEqual([]);
    const reaped = await reapExpiredLeases(t.db, { leaseExpiredDelayMs: 0 });
    expect(reaped.retried.sort()).toEqual(crashed.map((j) => j.id).sort());
    expect(await running(`kind:${kind}`)).toBe(0);
    expect(await claimSome(5)).toHaveLength(2);
  });

  it('counts every kind that names a resource toward it, and the tightest of several limits wins', async () => {
    const resource = `smtp-${uniqueQueue()}`;
    await declareLimits(t.db, [{ scope: 'resource', name: resource, max: 4 }]);
    const mail = await setUp(`mail-${resource}`, 10, [`resource:${resource}`]);
    const digest = await setUp(`digest-${resource}`, 10, [`resource:${resource}`]);
    expect(await mail.claimSome(3)).toHaveLength(3);
    expect(await digest.claimSome(3)).toHaveLength(1);
    expect(await running(`resource:${resource}`)).toBe(4);

    const kind = `tight-${resource}`;
    await declareLimits(t.db, [{ scope: 'kind', name: kind, max: 1 }]);
    const tight = await setUp(kind, 5, [`resource:tight-${resource}`, `kind:${kind}`]);
    await declareLimits(t.db, [{ scope: 'resource', name: `tight-${resource}`, max: 10 }]);
    expect(await tight.claimSome(5)).toHaveLength(1);
  });

  it('takes a run-time value over the declaration, audited, and the declaration again once cleared', async () => {
    const kind = `set-${uniqueQueue()}`;
    await declareLimits(t.db, [{ scope: 'kind', name: kind, max: 1 }]);
    const { claimSome } = await setUp(kind, 10, [`kind:${kind}`]);
    const raised = await setLimit(t.db, {
      scope: 'kind',
      name: kind,
      max: 3,
      actor: 'ops@example.com',
      reason: 'more',
    });
    expect(raised).toMatchObject({ applied: true, before: { max: null, rate: null }, after: { max: 3, rate: null } });
    // A worker restarting with its old declaration does not undo the run-time value.
    await declareLimits(t.db, [{ scope: 'kind', name: kind, max: 1 }]);
    expect(await claimSome(10)).toHaveLength(3);
    expect((await listLimits(t.db)).find((l) => l.key === `kind:${kind}`)).toMatchObject({
      declared: { max: 1, rate: null },
      set: { max: 3, rate: null },
      max: 3,
      running: 3,
      setBy: 'ops@example.com',
    });
    // Lowered below what runs: nothing running stops, nothing more starts.
    await setLimit(t.db, { scope: 'kind', name: kind, max: 2, actor: 'ops@example.com' });
    expect(await claimSome(10)).toEqual([]);
    expect(await running(`kind:${kind}`)).toBe(3);
    const cleared = await setLimit(t.db, { scope: 'kind', name: kind, max: null, actor: 'ops@example.com' });
    expect(cleared).toMatchObject({ before: { max: 2 }, after: { max: null } });
    expect((await listLimits(t.db)).find((l) => l.key === `kind:${kind}`)?.max).toBe(1);
    const audit = await run<{
      detail: { limit: string; before: { max: number | null }; after: { max: number | null } };
    }>(
      t.db,
      sql`SELECT detail FROM leasehold.audit_log WHERE action = 'set_limit' AND detail->>'limit' = ${`kind:${kind}`} ORDER BY id`,
    );
    expect(audit.map((a) => [a.detail.before.max, a.detail.after.max])).toEqual([
      [null, 3],
      [3, 2],
      [2, null],
    ]);
  });

  it('limits nothing until a maximum is declared or set, and a claim without limits runs the texts it ran before', async () => {
    const kind = `none-${uniqueQueue()}`;
    const { claimSome, queue } = await setUp(kind, 5, [`kind:${kind}`]);
    expect(await claimSome(5)).toHaveLength(5);
    const options = { queues: [queue], workerId: 'w', limit: 5, leaseSeconds: 30 };
    // The unlimited texts stay byte for byte (db/queue/statement-texts.test.ts's snapshots).
    expect(textOf(claimStatement(options))).not.toMatch(/limit_claims|leasehold\.limits/);
    expect(textOf(claimStatement({ ...options, limits: [`kind:${kind}`] }))).toMatch(
      /limit_claims[\s\S]*leasehold\.limits|leasehold\.limits[\s\S]*limit_claims/,
    );
  });

  it('refuses a run-time value for a limit no handler declares, and while a live worker runs older code, naming it', async () => {
    const kind = `undeclared-${uniqueQueue()}`;
    await expect(setLimit(t.db, { scope: 'kind', name: kind, max: 2, actor: 'ops' })).rejects.toThrow(
      new RegExp(`no handler declares the limit kind:${kind}`),
    );
    expect((await listLimits(t.db)).filter((l) => l.name === kind)).toEqual([]);

    await declareLimits(t.db, [{ scope: 'kind', name: kind, max: 1 }]);
    const old = `old-${kind}`;
    await run(
      t.db,
      sql`INSERT INTO leasehold.workers (id, host, pid, queues, concurrency) VALUES (${old}, 'host-a', 42, '{q}', 5)`,
    );
    try {
      await expect(setLimit(t.db, { scope: 'kind', name: kind, max: 2, actor: 'ops' })).rejects.toThrow(
        new RegExp(
          `1 live worker runs Leasehold code older than concurrency limits and would not enforce kind:${kind}: ${old} \\(host-a pid 42\\)`,
        ),
      );
      expect((await listLimits(t.db)).find((l) => l.name === kind)).toMatchObject({ set: { max: null }, max: 1 });
      // Clearing a run-time value stays possible.
      await expect(setLimit(t.db, { scope: 'kind', name: kind, max: null, actor: 'ops' })).resolves.toMatchObject({
        applied: true,
      });
    } finally {
      await run(t.db, sql`DELETE FROM leasehold.workers WHERE id = ${old}`);
    }
    await expect(setLimit(t.db, { scope: 'kind', name: kind, max: 2, actor: 'ops' })).resolves.toMatchObject({
      after: { max: 2 },
    });
  });

  it('reads O(limit) ready rows whatever waits: 100,000 jobs of the kind, 3 slots left of 5, under a rate too', async () => {
    const kind = `backlog-${uniqueQueue()}`;
    const queue = uniqueQueue('limit-backlog');
    await run(
      t.db,
      sql`INSERT INTO leasehold.jobs (id, queue, kind, run_at, claim_at)
            SELECT gen_random_uuid(), ${queue}, ${kind}, now() - interval '1 hour', now() - interval '1 hour'
            FROM generate_series(1, 100000) g`,
    );
    // A rate too, so the walk is the one a limit with both runs: its window's log is read once.
    await declareLimits(t.db, [{ scope: 'kind', name: kind, max: 5, rate: { max: 1000, perMs: 60_000 } }]);
    const options = {
      queues: [queue],
      workerId: 'w',
      limit: 100,
      kinds: [{ kind, versions: [1] }],
      limits: [`kind:${kind}`],
    };
    expect(await claim(t.db, { ...options, limit: 2 })).toHaveLength(2);
    await run(t.db, sql`ANALYZE leasehold.ready_jobs, leasehold.leases, leasehold.limits`);
    const client = await t.pool.connect();
    try {
      // As the worker runs it: prepared, on its generic plan, after the lock.
      await client.query('BEGIN');
      await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
      const { sql: text, params } = new PgDialect().sqlToQuery(claimStatement(options));
      const result = await client.query({
        name: 'limited_backlog_claim',
        text: `EXPLAIN (ANALYZE, FORMAT JSON) ${text}`,
        values: params,
      });
      await client.query('ROLLBACK');
      const read = rowsRead(result.rows[0]['QUERY PLAN'][0].Plan as PlanNode, 'ready_jobs');
      // A few passes over the 3 rows the limit leaves (the walk, the lock, the delete by
      // address): none of the other 99,995.
      expect(read).toBeGreaterThanOrEqual(3);
      expect(read).toBeLessThanOrEqual(15);
    } finally {
      client.release();
    }
    expect(await claim(t.db, options)).toHaveLength(3);
  }, 60_000);

  it('refuses bad input with a clear error and writes nothing', async () => {
    const name = `bad-${uniqueQueue()}`;
    const bad: unknown[] = [
      { scope: 'kind', name, max: 0 },
      { scope: 'kind', name, max: 1.5 },
      { scope: 'kind', name, max: -3 },
      { scope: 'tenant', name, max: 1 },
      { scope: 'resource', name: '', max: 1 },
      { scope: 'resource', name: 'x'.repeat(129), max: 1 },
      { scope: 'resource', name: 'a\u0000b', max: 1 },
    ];
    for (const limit of bad) {
      await expect(declareLimits(t.db, [limit as never])).rejects.toBeInstanceOf(LeaseholdInputError);
      await expect(setLimit(t.db, { ...(limit as object), actor: 'ops' } as never)).rejects.toBeInstanceOf(
        LeaseholdInputError,
      );
    }
    await expect(setLimit(t.db, { scope: 'kind', name, max: 0, actor: 'ops' })).rejects.toThrow(
      /max: expected at least 1/,
    );
    await expect(claim(t.db, { queues: ['q'], workerId: 'w', limits: ['smtp'] })).rejects.toThrow(
      /limits\.0: expected queue:NAME, kind:NAME or resource:NAME/,
    );
    expect((await listLimits(t.db)).filter((l) => l.name.includes(name))).toEqual([]);
  });
});

describe('a rate limit', () => {
  /** The starts of `kind`'s jobs, as the database recorded them (started_at), in order. */
  const startsOf = async (queue: string) =>
    (
      await run<{ at: string }>(
        t.db,
        sql`SELECT to_char(started_at, 'YYYY-MM-DD HH24:MI:SS.US') AS at FROM leasehold.jobs
            WHERE queue = ${queue} AND started_at IS NOT NULL ORDER BY started_at`,
      )
    ).map((r) => Date.parse(`${r.at.replace(' ', 'T')}Z`) + Number(r.at.slice(-3)) / 1000);

  it('starts at most N in any interval across racing claimers, the rest waiting ready with no attempt spent', async () => {
    const kind = `rate-${uniqueQueue()}`;
    // A minute's window first, so nothing of it passes while the test looks.
    await declareLimits(t.db, [{ scope: 'kind', name: kind, rate: { max: 5, perMs: 60_000 }, kinds: [kind] }]);
    const { claimSome, queue } = await setUp(kind, 40, [`kind:${kind}`]);
    // Ten claimers of 3 at once: 30 asked for, 5 starts allowed in the window.
    const first = (await Promise.all(Array.from({ length: 10 }, () => claimSome(3)))).flat();
    expect(first).toHaveLength(5);
    const [status] = (await listLimits(t.db)).filter((l) => l.key === `kind:${kind}`);
    expect(status).toMatchObject({ rate: { max: 5, perMs: 60_000 }, started: 5, waiting: 35 });
    expect(status!.nextStartAt).not.toBeNull();
    const waiting = await run<{ state: string; attempts: number; n: number }>(
      t.db,
      sql`SELECT state, attempts, count(*)::int AS n FROM leasehold.jobs WHERE queue = ${queue} AND state <> 'running' GROUP BY 1, 2`,
    );
    expect(waiting).toEqual([{ state: 'ready', attempts: 0, n: 35 }]);
    // Settling frees no start: the rate counts starts, not running attempts.
    await completeManyIfLeaseHeld(
      t.db,
      first.map((j) => ({ id: j.id, leaseToken: j.leaseToken })),
    );
    expect(await claimSome(3)).toEqual([]);
    // A run-time rate of 5 per 400 ms takes effect at the next claim; claim until all 40 have
    // started, as fast as the window lets them.
    await setLimit(t.db, { scope: 'kind', name: kind, rate: { max: 5, perMs: 400 }, actor: 'ops' });
    const deadline = Date.now() + 15_000;
    let started = 5;
    while (started < 40 && Date.now() < deadline) {
      const jobs = (await Promise.all([claimSome(4), claimSome(4)])).flat();
      started += jobs.length;
      if (jobs.length > 0)
        await completeManyIfLeaseHeld(
          t.db,
          jobs.map((j) => ({ id: j.id, leaseToken: j.leaseToken })),
        );
      else await new Promise((r) => setTimeout(r, 20));
    }
    expect(started).toBe(40);
    // From the database's start times: no window of 400 ms (open at its start) holds more than 5.
    const starts = await startsOf(queue);
    expect(starts).toHaveLength(40);
    const most = Math.max(...starts.map((end) => starts.filter((s) => s > end - 400 && s <= end).length));
    expect(most).toBe(5);
    // The log keeps one interval: what is older has gone.
    const kept = await run<{ n: number }>(
      t.db,
      sql`SELECT count(*)::int AS n FROM leasehold.limit_starts WHERE limit_key = ${`kind:${kind}`} AND at < now() - interval '1 second'`,
    );
    expect(kept[0]!.n).toBe(0);
  }, 30_000);

  it('composes with a maximum on the same limit, and takes a run-time rate over the declared one, audited', async () => {
    const resource = `api-${uniqueQueue()}`;
    const kind = `k-${resource}`;
    await declareLimits(t.db, [
      { scope: 'resource', name: resource, max: 2, rate: { max: 100, perMs: 60_000 }, kinds: [kind] },
    ]);
    const { claimSome } = await setUp(kind, 10, [`resource:${resource}`]);
    expect(await claimSome(10)).toHaveLength(2); // the maximum is the tighter
    const set = await setLimit(t.db, {
      scope: 'resource',
      name: resource,
      max: 50,
      rate: { max: 3, perMs: 60_000 },
      actor: 'ops',
    });
    expect(set).toMatchObject({
      before: { max: null, rate: null },
      after: { max: 50, rate: { max: 3, perMs: 60_000 } },
    });
    expect(await claimSome(10)).toHaveLength(1); // 2 started of 3 in the minute
    expect(await claimSome(10)).toEqual([]);
    const cleared = await setLimit(t.db, { scope: 'resource', name: resource, rate: null, actor: 'ops' });
    expect(cleared.after).toEqual({ max: 50, rate: null });
    expect(await claimSome(10)).toHaveLength(7); // the declared 100 a minute leaves room
  });

  it('waits while paused by a RateLimitedError, then starts again; a longer pause is never shortened', async () => {
    const kind = `paused-${uniqueQueue()}`;
    await declareLimits(t.db, [{ scope: 'kind', name: kind, max: 10, kinds: [kind] }]);
    const { claimSome } = await setUp(kind, 5, [`kind:${kind}`]);
    const until = await pauseLimit(t.db, `kind:${kind}`, 3000, 'upstream 429');
    expect(until).toBeInstanceOf(Date);
    expect(await pauseLimit(t.db, `kind:${kind}`, 10, 'shorter')).toEqual(until);
    expect(await claimSome(5)).toEqual([]);
    const wait = await limitWaitMs(t.db, [`kind:${kind}`]);
    expect(wait).toBeGreaterThan(1500);
    expect(wait).toBeLessThanOrEqual(3000);
    expect((await listLimits(t.db)).find((l) => l.key === `kind:${kind}`)).toMatchObject({
      pausedReason: 'shorter',
      waiting: 5,
    });
    await new Promise((r) => setTimeout(r, wait! + 50));
    expect(await claimSome(5)).toHaveLength(5);
    expect(await limitWaitMs(t.db, [`kind:${kind}`])).toBeNull();
  });

  it('refuses a bad rate with a clear error and writes nothing', async () => {
    const name = `badrate-${uniqueQueue()}`;
    for (const rate of [
      { max: 0, perMs: 1000 },
      { max: 5, perMs: 0 },
      { max: 5, perMs: -1 },
      { max: 1.5, perMs: 10 },
      { max: 5, perMs: 86_400_001 },
    ]) {
      await expect(declareLimits(t.db, [{ scope: 'resource', name, rate }])).rejects.toBeInstanceOf(
        LeaseholdInputError,
      );
      await expect(setLimit(t.db, { scope: 'resource', name, rate, actor: 'ops' })).rejects.toBeInstanceOf(
        LeaseholdInputError,
      );
    }
    await expect(declareLimits(t.db, [{ scope: 'resource', name } as never])).rejects.toThrow(
      /expected a max, a rate or both/,
    );
    await expect(setLimit(t.db, { scope: 'resource', name, actor: 'ops' } as never)).rejects.toThrow(
      /expected a max or a rate/,
    );
    expect((await listLimits(t.db)).filter((l) => l.name === name)).toEqual([]);
  });
});

describe('why a job waits', () => {
  it('says in words which limit holds a ready job back, and nothing for a job free to start', async () => {
    const kind = `why-${uniqueQueue()}`;
    const resource = `smtp-${kind}`;
    await declareLimits(t.db, [
      { scope: 'kind', name: kind, max: 1, kinds: [kind] },
      { scope: 'resource', name: resource, rate: { max: 2, perMs: 60_000 }, kinds: [kind] },
    ]);
    const { claimSome, queue } = await setUp(kind, 4, [`kind:${kind}`, `resource:${resource}`]);
    const ids = (await run<{ id: string }>(t.db, sql`SELECT id FROM leasehold.jobs WHERE queue = ${queue}`)).map(
      (r) => r.id,
    );
    expect((await whyWaiting(t.db, ids)).size).toBe(0); // nothing holds them back yet
    const [one] = await claimSome(4);
    expect(one).toBeDefined();
    let reasons = await whyWaiting(t.db, ids);
    expect(reasons.size).toBe(3); // the three still ready; the running one has no entry
    expect(reasons.get(one!.id)).toBeUndefined();
    const [first] = [...reasons.values()];
    expect(first!.map((r) => r.text)).toEqual([`waiting: kind ${kind} at its limit of 1`]);

    await completeManyIfLeaseHeld(t.db, [{ id: one!.id, leaseToken: one!.leaseToken }]);
    expect(await claimSome(4)).toHaveLength(1); // the second start of 2 in the minute
    reasons = await whyWaiting(t.db, ids);
    const texts = [...reasons.values()][0]!.map((r) => r.text);
    expect(texts).toContainEqual(`waiting: kind ${kind} at its limit of 1`);
    const rate = texts.find((x) => x.startsWith('rate'));
    expect(rate).toMatch(new RegExp(`^rate limit resource ${resource} \\(2 per 60 s\\): next start in \\d+\\.\\d s$`));
    // The window's first start ages out a minute after it was taken, a moment ago.
    expect(Number(/in ([\d.]+) s/.exec(rate!)![1])).toBeGreaterThan(45);
    expect(Number(/in ([\d.]+) s/.exec(rate!)![1])).toBeLessThanOrEqual(60);

    await pauseLimit(t.db, `kind:${kind}`, 5_000, 'RateLimitedError: 429');
    await run(t.db, sql`INSERT INTO leasehold.queues (name, paused) VALUES (${queue}, true)`);
    const paused = [...(await whyWaiting(t.db, ids)).values()][0]!;
    expect(paused.map((r) => r.cause).sort()).toEqual(['paused', 'queue_paused', 'rate']);
    const pause = paused.find((r) => r.cause === 'paused')!.text;
    expect(pause).toMatch(new RegExp(`^paused: kind ${kind} for \\d\\.\\d s more \\(RateLimitedError: 429\\)$`));
    expect(Number(/for ([\d.]+) s/.exec(pause)![1])).toBeGreaterThan(2);
    expect(paused.find((r) => r.cause === 'queue_paused')!.text).toBe(`queue ${queue} is paused`);
  });
});

describe('a rate in a mixed deploy', () => {
  it('refuses a run-time rate while a live worker runs code before rates, naming it, and still takes a maximum', async () => {
    const kind = `mixed-${uniqueQueue()}`;
    await declareLimits(t.db, [{ scope: 'kind', name: kind, max: 2, kinds: [kind] }]);
    const old = `w13-${kind}`;
    await run(
      t.db,
      sql`INSERT INTO leasehold.workers (id, host, pid, queues, concurrency, code_version) VALUES (${old}, 'host-b', 7, '{q}', 5, 13)`,
    );
    try {
      await expect(
        setLimit(t.db, { scope: 'kind', name: kind, rate: { max: 5, perMs: 1000 }, actor: 'ops' }),
      ).rejects.toThrow(
        new RegExp(
          `1 live worker runs Leasehold code older than rate limits and would not enforce kind:${kind}: ${old} \\(host-b pid 7\\)`,
        ),
      );
      expect((await listLimits(t.db)).find((l) => l.name === kind)).toMatchObject({ set: { max: null, rate: null } });
      // Release 13 enforces a maximum: that change goes through.
      await expect(setLimit(t.db, { scope: 'kind', name: kind, max: 3, actor: 'ops' })).resolves.toMatchObject({
        after: { max: 3, rate: null },
      });
    } finally {
      await run(t.db, sql`DELETE FROM leasehold.workers WHERE id = ${old}`);
    }
  });
});

describe('a limit, operated', () => {
  it('lifts a pause at run time, audited, and refuses any change of a limit nobody declared, writing nothing', async () => {
    const kind = `resume-${uniqueQueue()}`;
    await declareLimits(t.db, [{ scope: 'kind', name: kind, max: 5, kinds: [kind] }]);
    const { claimSome } = await setUp(kind, 2, [`kind:${kind}`]);
    const until = await pauseLimit(t.db, `kind:${kind}`, 60_000, 'RateLimitedError: 429');
    expect(await claimSome(2)).toEqual([]);
    const lifted = await setLimit(t.db, {
      scope: 'kind',
      name: kind,
      resume: true,
      actor: 'ops',
      reason: 'upstream back',
    });
    expect(lifted.pausedBefore).toEqual(until);
    expect(await claimSome(2)).toHaveLength(2);
    expect((await listLimits(t.db)).find((l) => l.key === `kind:${kind}`)?.pausedUntil).toBeNull();

    const typo = `typo-${kind}`;
    for (const change of [{ max: null }, { rate: null }, { resume: true as const }]) {
      await expect(setLimit(t.db, { scope: 'kind', name: typo, ...change, actor: 'ops' })).rejects.toThrow(
        new RegExp(`no handler declares the limit kind:${typo}`),
      );
    }
    const written = await run<{ rows: number; audits: number }>(
      t.db,
      sql`SELECT (SELECT count(*) FROM leasehold.limits WHERE name = ${typo})::int AS rows,
                 (SELECT count(*) FROM leasehold.audit_log WHERE detail->>'limit' = ${`kind:${typo}`})::int AS audits`,
    );
    expect(written[0]).toEqual({ rows: 0, audits: 0 });
  });

  it('tells the next start from the newest start the rate still counts, after the rate was lowered', async () => {
    const kind = `lowered-${uniqueQueue()}`;
    await declareLimits(t.db, [{ scope: 'kind', name: kind, rate: { max: 100, perMs: 60_000 }, kinds: [kind] }]);
    const { claimSome } = await setUp(kind, 6, [`kind:${kind}`]);
    // Three claims a little apart, then the rate lowered to 2 a minute: the window holds 3.
    for (let i = 0; i < 3; i++) {
      expect(await claimSome(1)).toHaveLength(1);
      await new Promise((r) => setTimeout(r, 30));
    }
    await setLimit(t.db, { scope: 'kind', name: kind, rate: { max: 2, perMs: 60_000 }, actor: 'ops' });
    const starts = await run<{ at: Date }>(
      t.db,
      sql`SELECT at FROM leasehold.limit_starts WHERE limit_key = ${`kind:${kind}`} ORDER BY at`,
    );
    expect(starts).toHaveLength(3);
    // Below 2 once the second of the three ages out: its time plus a minute, not the first's.
    const [status] = (await listLimits(t.db)).filter((l) => l.key === `kind:${kind}`);
    expect(status!.nextStartAt!.getTime()).toBe(new Date(starts[1]!.at).getTime() + 60_000);
    // A claim needs room in every limit: the wait is the latest of theirs.
    const other = `other-${kind}`;
    await declareLimits(t.db, [{ scope: 'resource', name: other, max: 10, kinds: [kind] }]);
    await pauseLimit(t.db, `resource:${other}`, 5_000, 'short');
    const wait = await limitWaitMs(t.db, [`kind:${kind}`, `resource:${other}`]);
    expect(wait).toBeGreaterThan(50_000);
  });

  it('stops counting a queue limit no live worker declares any more, and keeps one set at run time', async () => {
    const queue = uniqueQueue('lapsed');
    const kept = uniqueQueue('kept');
    await declareLimits(t.db, [
      { scope: 'queue', name: queue, max: 2 },
      { scope: 'queue', name: kept, rate: { max: 5, perMs: 1000 } },
    ]);
    expect(await limitedQueues(t.db, [queue, kept])).toEqual(
      [
        { queue, max: true },
        { queue: kept, max: false },
      ].sort((a, b) => a.queue.localeCompare(b.queue)),
    );
    await setLimit(t.db, { scope: 'queue', name: kept, max: 3, actor: 'ops' });
    // A minute and more without a worker renewing them.
    await run(
      t.db,
      sql`UPDATE leasehold.limits SET declared_at = now() - interval '2 minutes' WHERE name IN (${queue}, ${kept})`,
    );
    expect(await limitedQueues(t.db, [queue, kept])).toEqual([{ queue: kept, max: true }]);
    await renewQueueLimits(t.db, [`queue:${queue}`]);
    expect((await limitedQueues(t.db, [queue])).map((l) => l.queue)).toEqual([queue]);
  });
});
