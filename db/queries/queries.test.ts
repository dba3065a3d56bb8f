import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueueMany, pauseQueue } from '../queue/index.ts';
import { run } from '../queue/executor.ts';
import { testDatabase, type TestDatabase } from '../../test/db.ts';
import { mixedFixture, uniqueQueue, MIXED_FIXTURE_COUNTS } from '../../test/factories.ts';
import { backlog, overview } from './overview.ts';
import {
  auditListSchema,
  failureGroups,
  filterSql,
  jobListSchema,
  listAudit,
  listJobs,
  previewForAction,
  previewIds,
} from './jobs.ts';

let t: TestDatabase;
let queue: string;
let fixture: Awaited<ReturnType<typeof mixedFixture>>;
beforeAll(async () => {
  t = await testDatabase();
  queue = uniqueQueue('read');
  fixture = await mixedFixture(t.db, queue);
});
afterAll(async () => {
  await t?.close();
});

describe('overview read model', () => {
  it('counts every state and sub-state of a queue, with its lag', async () => {
    await pauseQueue(t.db, { queue, actor: 'admin' });
    const row = (await backlog(t.db)).find((q) => q.queue === queue)!;
    expect(row).toMatchObject({
      paused: true,
      ...MIXED_FIXTURE_COUNTS,
      doneLastHour: 1,
    });
    expect(row.oldestReadyAgeSeconds).toBeGreaterThanOrEqual(0);
  });

  it('reports attempts and failure classes from history', async () => {
    const o = await overview(t.db);
    expect(o.failureClasses.lastHour.map((c) => c.failureClass)).toEqual(
      expect.arrayContaining(['permanent', 'transient']),
    );
    expect(o.attempts.reduce((n, a) => n + a.jobs, 0)).toBeGreaterThanOrEqual(3);
  });
});

describe('jobs list', () => {
  const list = (q: Record<string, string>) => listJobs(t.db, jobListSchema.parse({ queue, ...q }));

  it('filters by state and derived sub-state', async () => {
    expect((await list({ state: 'dead' })).jobs.map((j) => j.id)).toEqual([fixture.dead!.id]);
    expect((await list({ state: 'scheduled' })).jobs.map((j) => j.id)).toEqual([fixture.scheduled!.id]);
    expect((await list({ state: 'lease_expired' })).jobs.map((j) => j.id)).toEqual([fixture.expired!.id]);
    expect((await list({ state: 'retrying' })).jobs.map((j) => j.id)).toEqual([fixture.retrying!.id]);
    expect((await list({ failureClass: 'transient' })).jobs.map((j) => j.id)).toEqual([fixture.retrying!.id]);
  });

  it('finds a job by id and by idempotency key', async () => {
    const keyed = uniqueQueue('keyed');
    const [job] = await enqueueMany(t.db, [{ queue: keyed, kind: 'k', idempotencyKey: `key-${keyed}` }]);
    expect((await listJobs(t.db, jobListSchema.parse({ search: job!.id }))).jobs.map((j) => j.id)).toEqual([job!.id]);
    expect((await listJobs(t.db, jobListSchema.parse({ search: `key-${keyed}` }))).jobs.map((j) => j.id)).toEqual([
      job!.id,
    ]);
  });

  it('pages by keyset without repeats or gaps', async () => {
    const paged = uniqueQueue('paged');
    await enqueueMany(
      t.db,
      Array.from({ length: 7 }, () => ({ queue: paged, kind: 'k' })),
    );
    const seen: string[] = [];
    let after: string | null | undefined;
    do {
      const page = await listJobs(t.db, jobListSchema.parse({ queue: paged, limit: 3, ...(after ? { after } : {}) }));
      seen.push(...page.jobs.map((j) => j.id));
      after = page.next;
    } while (after);
    expect(seen).toHaveLength(7);
    expect([...seen].sort().reverse()).toEqual(seen);
  });

  it('filters by one tag, exactly, through the partial GIN index jobs_tags_idx', async () => {
    const tagged = uniqueQueue('tagged');
    const tag = `t-${tagged}`;
    const jobs = await enqueueMany(t.db, [
      { queue: tagged, kind: 'k', tags: [tag, 'vip'] },
      { queue: tagged, kind: 'k' },
      { queue: tagged, kind: 'k', tags: ['vip'] },
      { queue: tagged, kind: 'k', tags: [tag] },
    ]);
    const ids = async (q: Record<string, string>) =>
      (await listJobs(t.db, jobListSchema.parse(q))).jobs.map((j) => j.id);
    const newestFirst = [jobs[3]!.id, jobs[0]!.id];
    expect(await ids({ tag })).toEqual(newestFirst);
    // With a state too (the ready rows' candidate path), and with a queue.
    expect(await ids({ tag, state: 'ready', queue: tagged })).toEqual(newestFirst);
    expect(await ids({ tag: 'vip', queue: tagged })).toEqual([jobs[2]!.id, jobs[0]!.id]);
    // Exact: no prefix, no other case.
    expect(await ids({ tag: 't-' })).toEqual([]);
    expect(await ids({ tag: tag.toUpperCase() })).toEqual([]);
    const listed = (await listJobs(t.db, jobListSchema.parse({ queue: tagged }))).jobs;
    expect(listed.map((j) => j.tags)).toEqual([[tag], ['vip'], [], [tag, 'vip']]);
    // A bulk preview by the same filter freezes the same jobs.
    expect((await previewForAction(t.db, 'cancel', { tag }, 100)).jobs.map((j) => j.id).sort()).toEqual(
      [...newestFirst].sort(),
    );

    // The index can answer the condition (its predicate `tags IS NOT NULL` is implied): with
    // sequential and plain index scans off, the plan is a bitmap scan of it, not a walk.
    const plan = await t.db.transaction(async (tx) => {
      await run(tx, sql`SET LOCAL enable_seqscan = off`);
      await run(tx, sql`SET LOCAL enable_indexscan = off`);
      const rows = await run<{ 'QUERY PLAN': string }>(
        tx,
        sql`EXPLAIN SELECT id FROM leasehold.jobs WHERE ${filterSql({ tag })} ORDER BY id DESC LIMIT 51`,
      );
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    });
    expect(plan).toMatch(/Bitmap Index Scan on jobs_tags_idx/);
    expect(plan).not.toMatch(/Seq Scan/);
  });

  it('refuses a tag filter that no tag could match, with a sentence', () => {
    const problems = (tag: string) => {
      const parsed = jobListSchema.safeParse({ tag });
      return parsed.success ? [] : parsed.error.issues.map((i) => i.message);
    };
    expect(problems('')).toEqual(['a tag is 1 to 64 characters']);
    expect(problems('x'.repeat(65))).toEqual(['a tag is 1 to 64 characters']);
    expect(problems('a\nb')).toEqual(['a tag holds no control characters']);
    expect(problems('a\u007fb')).toEqual(['a tag holds no control characters']);
    // Characters as PostgreSQL counts them: 64 emoji are 64 characters (128 UTF-16 units).
    expect(problems('🏷'.repeat(64))).toEqual([]);
    expect(problems('acme corp: EU/vip')).toEqual([]);
  });

  it('refuses filters and sorts outside the allowlists', () => {
    expect(jobListSchema.safeParse({ sort: 'created_at; DROP TABLE leasehold.jobs' }).success).toBe(false);
    expect(jobListSchema.safeParse({ state: 'zombie' }).success).toBe(false);
    expect(jobListSchema.safeParse({ limit: '100000' }).success).toBe(false);
    expect(jobListSchema.safeParse({ colour: 'red' }).success).toBe(false);
  });
});

describe('failure groups and bulk previews', () => {
  it('groups dead jobs whose errors differ only in numbers', async () => {
    const groupQueue = uniqueQueue('groups');
    await run(
      t.db,
      sql`INSERT INTO leasehold.jobs (id, queue, kind, state, attempts, failure_class, last_error, finished_at)
          SELECT gen_random_uuid(), ${groupQueue}, 'k', 'dead', 1, 'permanent', 'order ' || g || ' refused: 422', now()
          FROM generate_series(1, 3) g`,
    );
    const group = (await failureGroups(t.db)).find((g) => g.queue === groupQueue)!;
    expect(group).toMatchObject({ failureClass: 'permanent', fingerprint: 'order <n> refused: <n>', count: 3 });
    expect(group.trend.reduce((n, d) => n + d.count, 0)).toBe(3);
  });

  it('freezes at most the cap of ids and says when more match', async () => {
    const capped = uniqueQueue('capped');
    await enqueueMany(
      t.db,
      Array.from({ length: 12 }, () => ({ queue: capped, kind: 'k' })),
    );
    const preview = await previewIds(t.db, filterSql({ queue: capped }), 10);
    expect(preview).toMatchObject({ total: 11, overCap: true });
    expect(preview.jobs).toHaveLength(10);
  });

  it('previews a bulk action over only the states that action accepts, and leaves the others', async () => {
    const ids = async (action: 'retry' | 'cancel') =>
      (await previewForAction(t.db, action, { queue }, 100)).jobs.map((j) => j.id).sort();
    const of = (...names: string[]) => names.map((n) => fixture[n]!.id).sort();
    expect(await ids('retry')).toEqual(of('dead', 'cancelled'));
    expect(await ids('cancel')).toEqual(of('ready', 'scheduled', 'retrying', 'running', 'expired'));
    const running = (await previewForAction(t.db, 'cancel', { queue, state: 'running' }, 100)).jobs;
    expect(running.every((j) => j.leaseToken !== null)).toBe(true);
  });
});

describe('the audit log filters', () => {
  it('find one actor’s and one action’s rows by index, not by walking the whole log', async () => {
    await run(
      t.db,
      sql`INSERT INTO leasehold.audit_log (actor, action, requested, affected, outcome)
          SELECT 'flood-' || (g % 5000) || '@example.com', 'sign_in', 1, 0, 'failed' FROM generate_series(1, 50000) g`,
    );
    await run(t.db, sql`ANALYZE leasehold.audit_log`);
    const { entries } = await listAudit(t.db, auditListSchema.parse({ actor: 'flood-7@example.com' }));
    expect(entries).toHaveLength(10);
    type PlanNode = { 'Node Type': string; 'Index Name'?: string; 'Relation Name'?: string; Plans?: PlanNode[] };
    const nodes = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)];
    for (const [filter, index] of [
      [sql`actor = 'flood-7@example.com'`, 'audit_log_actor_idx'],
      [sql`action = 'pause'`, 'audit_log_action_idx'],
    ] as const) {
      const [explained] = await run<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
        t.db,
        sql`EXPLAIN (FORMAT JSON) SELECT * FROM leasehold.audit_log WHERE true AND ${filter} ORDER BY id DESC LIMIT 51`,
      );
      const plan = nodes(explained!['QUERY PLAN'][0].Plan);
      expect(plan.filter((n) => n['Node Type'] === 'Seq Scan')).toEqual([]);
      expect(plan.flatMap((n) => (n['Index Name'] ? [n['Index Name']] : []))).toEqual([index]);
    }
  });
});
