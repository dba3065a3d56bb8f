import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import {
  claim,
  completeManyIfLeaseHeld,
  declareLimits,
  defineJob,
  enqueue,
  enqueueMany,
  failIfLeaseHeld,
  LeaseholdInputError,
  type ClaimedJob,
  type StandardSchemaV1,
} from '.';
import { claimStatement } from './claim.ts';
import { run } from './executor.ts';
import { useTestDatabase } from '../../test/db.ts';
import { uniqueQueue } from '../../test/factories.ts';
import { type PlanNode, rowsRead } from '../../test/plans.ts';

const t = useTestDatabase({ max: 20 });

const kindsOf = (kind: string) => [{ kind, versions: [1] }];

/** A queue of its own and a claimer of its grouped jobs (or its ungrouped ones). */
function setUp(name: string) {
  const queue = uniqueQueue();
  const kind = `${name}-${queue}`;
  const claimer = (options: { limit: number; grouped?: boolean; workerId?: string }) =>
    claim(t.db, {
      queues: [queue],
      workerId: options.workerId ?? `w-${queue}`,
      limit: options.limit,
      kinds: kindsOf(kind),
      grouped: options.grouped ?? true,
    });
  return { queue, kind, claimer };
}

const groupsOf = (jobs: ClaimedJob[]) => jobs.map((j) => j.group);

describe('fair groups', () => {
  it("starts every small group's job within 2 claims after a flood of 100,000 from one group", async () => {
    const { queue, kind, claimer } = setUp('flood');
    await enqueueMany(
      t.db,
      Array.from({ length: 100_000 }, () => ({ queue, kind, group: 'A' })),
    );
    // The flood is being served: claims take A's jobs.
    expect(groupsOf(await claimer({ limit: 10 }))).toEqual(Array(10).fill('A'));
    const small = 'BCDEFGHIJK'.split('');
    for (const group of small)
      await enqueueMany(
        t.db,
        Array.from({ length: 10 }, () => ({ queue, kind, group })),
      );
    const first = await claimer({ limit: 20 });
    const second = await claimer({ limit: 20 });
    const served = new Set([...groupsOf(first), ...groupsOf(second)]);
    for (const group of small) expect(served).toContain(group);
    // Turns, not a share by backlog: A had one turn in each claim, as each small group did.
    expect(groupsOf(first).filter((g) => g === 'A').length).toBeLessThanOrEqual(2);
  });

  it('serves one group alone as fast as an ungrouped queue: whole batches', async () => {
    const { queue, kind, claimer } = setUp('alone');
    await enqueueMany(
      t.db,
      Array.from({ length: 120 }, () => ({ queue, kind, group: 'only' })),
    );
    expect(await claimer({ limit: 50 })).toHaveLength(50);
    expect(await claimer({ limit: 50 })).toHaveLength(50);
    expect(await claimer({ limit: 50 })).toHaveLength(20);
  });

  it('lets racing claims share one flooding group, each a whole batch, none waiting on another', async () => {
    const { queue, kind, claimer } = setUp('racing');
    await enqueueMany(
      t.db,
      Array.from({ length: 100 }, () => ({ queue, kind, group: 'flood' })),
    );
    const batches = await Promise.all(Array.from({ length: 4 }, (_, i) => claimer({ limit: 10, workerId: `w${i}` })));
    expect(batches.map((b) => b.length)).toEqual([10, 10, 10, 10]);
    expect(new Set(batches.flat().map((j) => j.id)).size).toBe(40);
  });

  it("counts toward its kind's limit: a limited grouped claim takes no more than the limit leaves", async () => {
    const { queue, kind } = setUp('limited');
    await declareLimits(t.db, [{ scope: 'kind', name: kind, max: 2 }]);
    await enqueueMany(
      t.db,
      ['a', 'b', 'c'].flatMap((group) => Array.from({ length: 3 }, () => ({ queue, kind, group }))),
    );
    const options = {
      queues: [queue],
      workerId: 'w',
      limit: 10,
      kinds: kindsOf(kind),
      grouped: true,
      limits: [`kind:${kind}`],
    };
    const first = await claim(t.db, options);
    expect(first).toHaveLength(2);
    expect(new Set(groupsOf(first)).size).toBe(2); // two groups' turns, not one group's two jobs
    expect(await claim(t.db, options)).toEqual([]);
    await completeManyIfLeaseHeld(t.db, first);
    expect(await claim(t.db, options)).toHaveLength(2);
  });

  it('keeps the aging order inside a group and takes turns across groups', async () => {
    const { queue, kind, claimer } = setUp('order');
    const ids: Record<string, string[]> = { a: [], b: [] };
    for (let i = 0; i < 3; i++) {
      for (const group of ['a', 'b']) {
        const { id } = await enqueue(t.db, { queue, kind, group, payload: { i } });
        ids[group]!.push(id);
      }
    }
    const taken: ClaimedJob[] = [];
    for (let i = 0; i < 6; i++) taken.push(...(await claimer({ limit: 1 })));
    expect(taken.map((j) => j.group)).toEqual(['a', 'b', 'a', 'b', 'a', 'b']);
    expect(taken.filter((j) => j.group === 'a').map((j) => j.id)).toEqual(ids.a);
    expect(taken.filter((j) => j.group === 'b').map((j) => j.id)).toEqual(ids.b);
  });

  it('is never taken by the ungrouped claim, and the grouped claim takes no ungrouped job', async () => {
    const { queue, kind, claimer } = setUp('apart');
    await enqueue(t.db, { queue, kind, group: 'g' });
    await enqueue(t.db, { queue, kind });
    const plain = await claimer({ limit: 10, grouped: false });
    expect(groupsOf(plain)).toEqual([null]);
    const grouped = await claimer({ limit: 10 });
    expect(groupsOf(grouped)).toEqual(['g']);
    // Any kind (tests, tools): the same split.
    await enqueue(t.db, { queue, kind, group: 'h' });
    expect(await claim(t.db, { queues: [queue], workerId: 'w', limit: 5 })).toEqual([]);
    const any = await claim(t.db, { queues: [queue], workerId: 'w', limit: 5, grouped: true });
    expect(groupsOf(any)).toEqual(['h']);
  });

  it('brings a retried job back to its group, and a scheduled one in when it is due', async () => {
    const { queue, kind, claimer } = setUp('back');
    await enqueue(t.db, { queue, kind, group: 'g' });
    const [job] = await claimer({ limit: 1 });
    expect(job?.group).toBe('g');
    const failed = await failIfLeaseHeld(t.db, job!, {
      error: 'try again',
      failureClass: 'transient',
      retryAfterMs: 0,
    });
    expect(failed).toMatchObject({ applied: true, state: 'ready' });
    // Not before its back-off: nothing of the group is due, and the claim says so.
    expect(await claimer({ limit: 1 })).toEqual([]);
    const runAt = 'runAt' in failed && failed.runAt ? failed.runAt.getTime() : Date.now();
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, runAt - Date.now()) + 50));
    const [again] = await claimer({ limit: 1 });
    expect(again?.id).toBe(job!.id);
    expect(again?.attempts).toBe(2);
    await completeManyIfLeaseHeld(t.db, [again!]);
    await enqueue(t.db, { queue, kind, group: 'later', delayMs: 300 });
    expect(await claimer({ limit: 1 })).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(groupsOf(await claimer({ limit: 1 }))).toEqual(['later']);
  });

  it('reads O(limit) rows with 100,000 groups holding ready jobs', async () => {
    const { queue, kind } = setUp('wide');
    await enqueueMany(
      t.db,
      Array.from({ length: 100_000 }, (_, i) => ({ queue, kind, group: `tenant-${i}` })),
    );
    await run(t.db, sql`ANALYZE leasehold.grouped_ready_jobs`);
    await run(t.db, sql`ANALYZE leasehold.ready_groups`);
    const statement = claimStatement({
      queues: [queue],
      workerId: 'w',
      limit: 50,
      kinds: kindsOf(kind),
      grouped: true,
    });
    const [row] = await run<{ 'QUERY PLAN': PlanNode[] }>(t.db, sql`EXPLAIN (ANALYZE, FORMAT JSON) ${statement}`);
    const plan = row!['QUERY PLAN'][0]!;
    // 50 group rows and 50 ready rows read (and the served groups' next rows): not 100,000.
    expect(rowsRead(plan, 'grouped_ready_jobs')).toBeLessThanOrEqual(200);
    expect(rowsRead(plan, 'ready_groups')).toBeLessThanOrEqual(200);
  });
});

describe('a group key', () => {
  it('comes from the job contract, made from the payload, unless the call gives its own', async () => {
    const queue = uniqueQueue();
    const job = defineJob({
      kind: `contract-${queue}`,
      version: 1,
      queue,
      schema: {
        '~standard': {
          version: 1,
          vendor: 'test',
          validate: (value: unknown) => ({ value: value as { accountId: string } }),
        },
      } as StandardSchemaV1<{ accountId: string }>,
      group: (p) => p.accountId,
    });
    const one = await enqueue(t.db, job, { accountId: 'acme' });
    expect(one.job?.group).toBe('acme');
    const own = await enqueue(t.db, job, { accountId: 'acme' }, { group: 'override' });
    expect(own.job?.group).toBe('override');
    await enqueueMany(t.db, job, [{ accountId: 'x' }, { accountId: 'y' }]);
    const [stored] = await run<{ groups: string[] }>(
      t.db,
      sql`SELECT array_agg(group_key ORDER BY group_key) AS groups FROM leasehold.jobs WHERE queue = ${queue}`,
    );
    expect(stored?.groups).toEqual(['acme', 'override', 'x', 'y']);
  });

  it('refuses bad keys and group functions with a clear error, writing nothing', async () => {
    const queue = uniqueQueue();
    const kind = `bad-${queue}`;
    const refused = async (work: () => Promise<unknown>, says: RegExp) => {
      const error = await work().then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(LeaseholdInputError);
      expect(String((error as Error).message)).toMatch(says);
    };
    await refused(() => enqueue(t.db, { queue, kind, group: '' }), /group/);
    await refused(() => enqueue(t.db, { queue, kind, group: 'x'.repeat(257) }), /group/);
    await refused(() => enqueue(t.db, { queue, kind, group: 'a\u0000b' }), /group.*U\+0000/);
    const schema = { '~standard': { version: 1 as const, vendor: 'test', validate: (value: unknown) => ({ value }) } };
    const throwing = defineJob({
      kind,
      version: 1,
      queue,
      schema,
      group: () => {
        throw new Error('no account');
      },
    });
    await refused(() => enqueue(t.db, throwing, {}), /group function threw: no account/);
    const numeric = defineJob({ kind, version: 1, queue, schema, group: () => 42 as unknown as string });
    await refused(() => enqueueMany(t.db, numeric, [{}, {}]), /jobs\[0\]\.group: .*returned 42, not a string/);
    expect(() => defineJob({ kind, version: 1, queue, schema, group: 'acme' as never })).toThrow(
      /group: expected a function/,
    );
    const [count] = await run<{ n: number }>(
      t.db,
      sql`SELECT count(*)::int AS n FROM leasehold.jobs WHERE queue = ${queue}`,
    );
    expect(count?.n).toBe(0);
  });

  it('is refused by the database past 256 characters, and never changes', async () => {
    const queue = uniqueQueue();
    await expect(
      run(t.db, sql`SELECT * FROM leasehold.enqueue(kind => 'k', queue => ${queue}, group_key => ${'x'.repeat(257)})`),
    ).rejects.toThrow(/group_key must be 1 to 256 characters/);
    const [made] = await run<{ id: string }>(
      t.db,
      sql`SELECT id FROM leasehold.enqueue(kind => 'k', queue => ${queue}, group_key => 'g')`,
    );
    await expect(
      run(t.db, sql`UPDATE leasehold.jobs SET group_key = 'other' WHERE id = ${made!.id}::uuid`),
    ).rejects.toThrow(/group_key is written once/);
    const [rows] = await run<{ grouped: number; plain: number }>(
      t.db,
      sql`SELECT (SELECT count(*)::int FROM leasehold.grouped_ready_jobs WHERE id = ${made!.id}::uuid) AS grouped,
                 (SELECT count(*)::int FROM leasehold.ready_jobs WHERE id = ${made!.id}::uuid) AS plain`,
    );
    expect(rows).toEqual({ grouped: 1, plain: 0 });
  });
});
