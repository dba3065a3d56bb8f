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
  listLimits,
  reapExpiredLeases,
  releaseIfLeaseHeld,
  setLimit,
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
    expect(raised).toMatchObject({ applied: true, before: null, after: 3 });
    // A worker restarting with its old declaration does not undo the run-time value.
    await declareLimits(t.db, [{ scope: 'kind', name: kind, max: 1 }]);
    expect(await claimSome(10)).toHaveLength(3);
    expect((await listLimits(t.db)).find((l) => l.key === `kind:${kind}`)).toMatchObject({
      declaredMax: 1,
      setMax: 3,
      max: 3,
      running: 3,
      setBy: 'ops@example.com',
    });
    // Lowered below what runs: nothing running stops, nothing more starts.
    await setLimit(t.db, { scope: 'kind', name: kind, max: 2, actor: 'ops@example.com' });
    expect(await claimSome(10)).toEqual([]);
    expect(await running(`kind:${kind}`)).toBe(3);
    const cleared = await setLimit(t.db, { scope: 'kind', name: kind, max: null, actor: 'ops@example.com' });
    expect(cleared).toMatchObject({ before: 2, after: null });
    expect((await listLimits(t.db)).find((l) => l.key === `kind:${kind}`)?.max).toBe(1);
    const audit = await run<{ detail: { limit: string; before: number | null; after: number | null } }>(
      t.db,
      sql`SELECT detail FROM leasehold.audit_log WHERE action = 'set_limit' AND detail->>'limit' = ${`kind:${kind}`} ORDER BY id`,
    );
    expect(audit.map((a) => [a.detail.before, a.detail.after])).toEqual([
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
      expect((await listLimits(t.db)).find((l) => l.name === kind)).toMatchObject({ setMax: null, max: 1 });
      // Clearing a run-time value stays possible.
      await expect(setLimit(t.db, { scope: 'kind', name: kind, max: null, actor: 'ops' })).resolves.toMatchObject({
        applied: true,
      });
    } finally {
      await run(t.db, sql`DELETE FROM leasehold.workers WHERE id = ${old}`);
    }
    await expect(setLimit(t.db, { scope: 'kind', name: kind, max: 2, actor: 'ops' })).resolves.toMatchObject({
      after: 2,
    });
  });

  it('reads O(limit) ready rows whatever waits: 100,000 jobs of the kind, 3 slots left of 5', async () => {
    const kind = `backlog-${uniqueQueue()}`;
    const queue = uniqueQueue('limit-backlog');
    await run(
      t.db,
      sql`INSERT INTO leasehold.jobs (id, queue, kind, run_at, claim_at)
            SELECT gen_random_uuid(), ${queue}, ${kind}, now() - interval '1 hour', now() - interval '1 hour'
            FROM generate_series(1, 100000) g`,
    );
    await declareLimits(t.db, [{ scope: 'kind', name: kind, max: 5 }]);
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
