import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import {
  claim,
  completeIfLeaseHeld,
  enqueueMany,
  LeaseholdInputError,
  listGroups,
  pauseGroup,
  pruneGroupClaims,
  reapExpiredLeases,
  resumeGroup,
  setGroupLimit,
  whyWaiting,
  type ClaimedJob,
} from '.';
import { ClaimOptionsCache, GROUP_LIMITS_RECHECK_MS } from './claim.ts';
import { run, runText } from './executor.ts';
import { groupedClaimText } from './transitions.ts';
import { useTestDatabase } from '../../test/db.ts';
import { uniqueQueue } from '../../test/factories.ts';

const t = useTestDatabase({ max: 20 });

/** A queue of its own with `perGroup` ready jobs in each of `groups`, and a claimer of its grouped jobs. */
async function setUp(groups: string[], perGroup: number) {
  const queue = uniqueQueue();
  const kind = `gl-${queue}`;
  await enqueueMany(
    t.db,
    groups.flatMap((group) => Array.from({ length: perGroup }, () => ({ queue, kind, group }))),
  );
  const claimer = (limit: number, options: { leaseSeconds?: number } = {}) =>
    claim(t.db, {
      queues: [queue],
      workerId: `w-${queue}`,
      limit,
      kinds: [{ kind, versions: [1] }],
      grouped: true,
      ...options,
    });
  return { queue, kind, claimer };
}

const countBy = (jobs: ClaimedJob[]) => {
  const counts: Record<string, number> = {};
  for (const j of jobs) counts[j.group!] = (counts[j.group!] ?? 0) + 1;
  return counts;
};

/** Running jobs per group of `queue`, from the jobs themselves. */
async function runningByGroup(queue: string): Promise<Record<string, number>> {
  const rows = await run<{ group_key: string; n: number }>(
    t.db,
    sql`SELECT group_key, count(*)::int AS n FROM leasehold.jobs WHERE queue = ${queue} AND state = 'running' GROUP BY group_key`,
  );
  return Object.fromEntries(rows.map((r) => [r.group_key, r.n]));
}

const audits = (queue: string) =>
  run<{
    action: string;
    actor: string;
    detail: { group: string | null; before: unknown; after: unknown; reason: string | null };
  }>(t.db, sql`SELECT action, actor, detail FROM leasehold.audit_log WHERE detail->>'queue' = ${queue} ORDER BY id`);

describe('per-group limits', () => {
  it("caps each group at the queue's default and a named group at its own, until a slot frees", async () => {
    const { queue, claimer } = await setUp(['a', 'b', 'c'], 10);
    await setGroupLimit(t.db, { queue, max: 2, actor: 'admin@example.com', reason: 'tenant fairness' });
    await setGroupLimit(t.db, { queue, group: 'b', max: 3, actor: 'admin@example.com' });
    const first = await claimer(50);
    expect(countBy(first)).toEqual({ a: 2, b: 3, c: 2 });
    // Every group is at its maximum: nothing more starts, and the jobs say why.
    expect(await claimer(50)).toEqual([]);
    const [waitingA] = await run<{ id: string }>(
      t.db,
      sql`SELECT id FROM leasehold.jobs WHERE queue = ${queue} AND group_key = 'a' AND state = 'ready' LIMIT 1`,
    );
    expect((await whyWaiting(t.db, [waitingA!.id])).get(waitingA!.id)).toEqual([
      { limit: `group:${queue}:a`, cause: 'group_max', text: 'waiting: group a at its limit of 2', until: null },
    ]);
    // One of a's ends: one more of a's starts, no other.
    await completeIfLeaseHeld(t.db, first.find((j) => j.group === 'a')!);
    expect(countBy(await claimer(50))).toEqual({ a: 1 });
    expect(await runningByGroup(queue)).toEqual({ a: 2, b: 3, c: 2 });
    expect((await audits(queue)).map((a) => [a.action, a.actor, a.detail.group, a.detail.after])).toEqual([
      ['set_group_limit', 'admin@example.com', null, { max: 2, paused: false }],
      ['set_group_limit', 'admin@example.com', 'b', { max: 3, paused: false }],
    ]);
  });

  it("never lets claimers at once take more than a group's maximum", async () => {
    const groups = ['a', 'b', 'c', 'd'];
    const { queue, kind } = await setUp(groups, 50);
    await setGroupLimit(t.db, { queue, max: 3, actor: 'ops' });
    // Twelve claimers on their own connections, all at once, several times over.
    for (let round = 0; round < 3; round++) {
      await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          claim(t.db, {
            queues: [queue],
            workerId: `w${i}`,
            limit: 5,
            kinds: [{ kind, versions: [1] }],
            grouped: true,
          }),
        ),
      );
    }
    // Each group reached its maximum and none passed it.
    expect(await runningByGroup(queue)).toEqual({ a: 3, b: 3, c: 3, d: 3 });
  });

  it("counts a crashed worker's attempts until the reaper ends them", async () => {
    const { queue, claimer } = await setUp(['a'], 5);
    await setGroupLimit(t.db, { queue, group: 'a', max: 1, actor: 'ops' });
    expect(await claimer(5, { leaseSeconds: 1 })).toHaveLength(1);
    // Its worker never settles: the slot stays taken while the lease holds.
    expect(await claimer(5)).toEqual([]);
    await new Promise((r) => setTimeout(r, 1100));
    expect(await claimer(5)).toEqual([]);
    const reaped = await reapExpiredLeases(t.db, { leaseExpiredDelayMs: 0 });
    expect(reaped.reaped).toBe(1);
    // Its attempt ended: the slot is free, and its claim's row goes at the next look.
    expect(await claimer(5)).toHaveLength(1);
    expect(await runningByGroup(queue)).toEqual({ a: 1 });
  });

  it('takes nothing of a queue whose first limit came since its claimer last looked, until it looks again', async () => {
    const { queue, kind } = await setUp(['a'], 5);
    const clock = { ms: 0 };
    const cache = new ClaimOptionsCache({ bound: { now: () => clock.ms } });
    const options = {
      queues: [queue],
      workerId: 'w-cached',
      limit: 1,
      kinds: [{ kind, versions: [1] }],
      grouped: true,
    };
    // The first claim looks (no limits), the next ones within GROUP_LIMITS_RECHECK_MS do not.
    expect(await claim(t.db, options, cache)).toHaveLength(1);
    await setGroupLimit(t.db, { queue, max: 2, actor: 'ops' });
    clock.ms += GROUP_LIMITS_RECHECK_MS / 2;
    expect(cache.groupLimitsDue()).toBe(false);
    // Its statement leaves the limited queue out rather than pass the limit unlocked.
    expect(await claim(t.db, { ...options, limit: 5 }, cache)).toEqual([]);
    clock.ms += GROUP_LIMITS_RECHECK_MS;
    expect(cache.groupLimitsDue()).toBe(true);
    expect(await claim(t.db, { ...options, limit: 5 }, cache)).toHaveLength(1);
    expect(await runningByGroup(queue)).toEqual({ a: 2 });
    // Its queue has limits now: every claim looks.
    expect(cache.groupLimitsDue()).toBe(true);
  });

  it('waits for a grouped claim in flight when a queue gets its first limit, and counts its jobs', async () => {
    const { queue, kind } = await setUp(['a'], 6);
    const client = await t.pool.connect();
    try {
      await client.query('BEGIN');
      // A claim whose snapshot came before the limit: it neither sees nor counts it.
      const inFlight = await claim(client, {
        queues: [queue],
        workerId: 'w-early',
        limit: 3,
        kinds: [{ kind, versions: [1] }],
        grouped: true,
      });
      expect(inFlight).toHaveLength(3);
      let set = false;
      const setting = setGroupLimit(t.db, { queue, max: 3, actor: 'ops' }).then(() => (set = true));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(set, 'the first limit waits for the claim in flight').toBe(false);
      await client.query('COMMIT');
      await setting;
    } finally {
      client.release();
    }
    // The three it took count: the group is at its maximum.
    expect(
      await claim(t.db, { queues: [queue], workerId: 'w', limit: 5, kinds: [{ kind, versions: [1] }], grouped: true }),
    ).toEqual([]);
    expect(await runningByGroup(queue)).toEqual({ a: 3 });
  });

  it('takes nothing of a queue whose first limit came after its claim locked the others', async () => {
    const first = await setUp(['x'], 2);
    const second = await setUp(['y'], 2);
    await setGroupLimit(t.db, { queue: first.queue, max: 5, actor: 'ops' });
    await setGroupLimit(t.db, { queue: second.queue, max: 5, actor: 'ops' });
    // The limited text as a claim runs it that locked the first queue's row alone.
    const rows = await runText<{ queue: string }>(t.db, groupedClaimText('given', true, true), [
      [first.queue, second.queue],
      10,
      randomUUID(),
      60,
      'w-unlocked',
      [first.kind, second.kind],
      [1, 1],
      [first.queue],
    ]);
    expect(rows.map((r) => r.queue)).toEqual([first.queue, first.queue]);
  });

  it('counts what a group runs already when its queue gets its first limit', async () => {
    const { queue, claimer } = await setUp(['a', 'b'], 5);
    expect(countBy(await claimer(6))).toEqual({ a: 3, b: 3 });
    await setGroupLimit(t.db, { queue, max: 3, actor: 'ops' });
    expect(await claimer(10)).toEqual([]);
    await setGroupLimit(t.db, { queue, group: 'b', max: 4, actor: 'ops' });
    expect(countBy(await claimer(10))).toEqual({ b: 1 });
  });

  it('pauses one group and resumes it, each audited, while the others run', async () => {
    const { queue, claimer } = await setUp(['a', 'b'], 3);
    await pauseGroup(t.db, { queue, group: 'b', actor: 'support@example.com', reason: 'tenant asked us to hold' });
    expect(countBy(await claimer(10))).toEqual({ a: 3 });
    const [held] = await run<{ id: string }>(
      t.db,
      sql`SELECT id FROM leasehold.jobs WHERE queue = ${queue} AND group_key = 'b' LIMIT 1`,
    );
    expect((await whyWaiting(t.db, [held!.id])).get(held!.id)).toEqual([
      {
        limit: `group:${queue}:b`,
        cause: 'group_paused',
        text: `group b of queue ${queue} is paused (tenant asked us to hold)`,
        until: null,
      },
    ]);
    expect((await listGroups(t.db, { queue })).groups.find((g) => g.group === 'b')).toMatchObject({
      paused: true,
      waiting: 3,
    });
    await resumeGroup(t.db, { queue, group: 'b', actor: 'support@example.com' });
    expect(countBy(await claimer(10))).toEqual({ b: 3 });
    expect((await audits(queue)).map((a) => [a.action, a.detail.group, a.detail.before, a.detail.after])).toEqual([
      ['pause_group', 'b', { max: null, paused: false }, { max: null, paused: true }],
      ['resume_group', 'b', { max: null, paused: true }, { max: null, paused: false }],
    ]);
    // Nothing limits the queue any more: its rows are gone, so its claims lock nothing.
    const left = await run(t.db, sql`SELECT 1 FROM leasehold.group_limits WHERE queue = ${queue}`);
    expect(left).toEqual([]);
  });

  it('refuses bad input with a sentence and writes nothing', async () => {
    const queue = uniqueQueue();
    const bad: [string, () => Promise<unknown>, RegExp][] = [
      ['max 0', () => setGroupLimit(t.db, { queue, max: 0, actor: 'ops' }), /max: expected at least 1/],
      ['max -1', () => setGroupLimit(t.db, { queue, max: -1, actor: 'ops' }), /max: expected at least 1/],
      ['max 1.5', () => setGroupLimit(t.db, { queue, max: 1.5, actor: 'ops' }), /max: expected an integer/],
      ['empty group', () => setGroupLimit(t.db, { queue, group: '', max: 2, actor: 'ops' }), /group/],
      ['long group', () => pauseGroup(t.db, { queue, group: 'x'.repeat(257), actor: 'ops' }), /group/],
      ['bad queue', () => setGroupLimit(t.db, { queue: 'no spaces', max: 2, actor: 'ops' }), /queue/],
      ['no actor', () => resumeGroup(t.db, { queue, group: 'a', actor: '' }), /actor/],
    ];
    for (const [, attempt, message] of bad) {
      const error = await attempt().then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(LeaseholdInputError);
      expect(String(error)).toMatch(message);
    }
    // The database refuses a caller that skipped the checks, with a sentence, too.
    await expect(
      run(t.db, sql`SELECT * FROM leasehold.set_group_limit('set_group_limit', ${queue}, NULL, 0, 'ops', NULL)`),
    ).rejects.toThrow(/the set_group_limit action was refused: .*a maximum of 1 to 1,000,000/);
    await expect(
      run(t.db, sql`SELECT * FROM leasehold.set_group_limit('pause_group', ${queue}, NULL, NULL, 'ops', NULL)`),
    ).rejects.toThrow(/the pause_group action was refused/);
    expect(await run(t.db, sql`SELECT 1 FROM leasehold.group_limits WHERE queue = ${queue}`)).toEqual([]);
    expect(await audits(queue)).toEqual([]);
  });

  it('refuses a maximum or a pause while a worker of the release before is live, naming it', async () => {
    const queue = uniqueQueue();
    const old = `w15-${queue}`;
    await run(
      t.db,
      sql`INSERT INTO leasehold.workers (id, host, pid, queues, concurrency, code_version) VALUES (${old}, 'host-b', 7, '{q}', 5, 15)`,
    );
    try {
      const sentence = new RegExp(
        `1 live worker runs Leasehold code older than per-group limits and would not enforce them on queue ${queue}: ${old} \\(host-b pid 7\\)`,
      );
      await expect(setGroupLimit(t.db, { queue, max: 2, actor: 'ops' })).rejects.toThrow(sentence);
      await expect(pauseGroup(t.db, { queue, group: 'a', actor: 'ops' })).rejects.toThrow(sentence);
      expect(await run(t.db, sql`SELECT 1 FROM leasehold.group_limits WHERE queue = ${queue}`)).toEqual([]);
      // Clearing and resuming loosen nothing such a worker ignores: they go through.
      await expect(resumeGroup(t.db, { queue, group: 'a', actor: 'ops' })).resolves.toMatchObject({ applied: true });
    } finally {
      await run(t.db, sql`DELETE FROM leasehold.workers WHERE id = ${old}`);
    }
  });

  it('lists the groups by their oldest waiting job, the rest summed as other', async () => {
    const queue = uniqueQueue();
    const kind = `list-${queue}`;
    // c's jobs have waited longest, then b's, then a's.
    for (const [group, n, agoMs] of [
      ['c', 2, 30_000],
      ['b', 3, 20_000],
      ['a', 4, 10_000],
    ] as const) {
      await enqueueMany(
        t.db,
        Array.from({ length: n }, () => ({ queue, kind, group })),
      );
      await run(
        t.db,
        sql`UPDATE leasehold.grouped_ready_jobs SET run_at = now() - make_interval(secs => ${agoMs / 1000}::float8)
            WHERE queue = ${queue} AND group_key = ${group}`,
      );
    }
    await setGroupLimit(t.db, { queue, max: 2, actor: 'ops' });
    await claim(t.db, { queues: [queue], workerId: 'w', limit: 1, kinds: [{ kind, versions: [1] }], grouped: true });
    const listed = await listGroups(t.db, { queue, top: 2 });
    expect(listed.defaultMax).toBe(2);
    expect(listed.groups.map((g) => g.group)).toEqual(['c', 'b']);
    expect(listed.groups[0]!.oldestWaitingMs).toBeGreaterThanOrEqual(30_000);
    expect(listed.groups[0]).toMatchObject({ max: 2, ownMax: null, paused: false });
    const total = listed.groups.reduce((n, g) => n + g.waiting + g.running, 0);
    expect(total + listed.other!.waiting + listed.other!.running).toBe(9);
    expect(listed.other).toMatchObject({ groups: 1 });
  });

  it("prunes a claim's rows once its jobs ended", async () => {
    const { queue, claimer } = await setUp(['a', 'b'], 2);
    await setGroupLimit(t.db, { queue, max: 5, actor: 'ops' });
    const jobs = await claimer(4);
    const rows = () => run(t.db, sql`SELECT group_key FROM leasehold.group_claims WHERE queue = ${queue}`);
    expect(await rows()).toHaveLength(2);
    for (const job of jobs) await completeIfLeaseHeld(t.db, job);
    expect(await pruneGroupClaims(t.db)).toBeGreaterThanOrEqual(2);
    expect(await rows()).toEqual([]);
  });
});
