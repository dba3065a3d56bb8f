import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueueMany, registerKinds, addSearchPath, removeSearchPath } from '../queue/index.ts';
import { run } from '../queue/executor.ts';
import { jobListSchema, listJobs, searchListSql, type PayloadSearch } from '../queries/jobs.ts';
import { listKinds, searchableKinds } from '../queries/kinds.ts';
import { testDatabase, type TestDatabase } from '../../test/db.ts';
import { planNodes, type PlanNode } from '../../test/plans.ts';
import { buildSearchIndexes } from './index.ts';
import { createSearchIndexSql, searchIndexName, syncSearchIndexes } from './search-indexes.ts';

let t: TestDatabase;
const KIND = 'search.order';
const OTHER = 'search.other';
const registration = (kind: string, searchablePaths: string[]) => ({
  kind,
  version: 1,
  defaultQueue: 'default',
  displayName: kind,
  redactedPaths: [],
  rerunSafe: false,
  searchablePaths,
});

async function indexes(): Promise<{ name: string; valid: boolean; definition: string }[]> {
  return run(
    t.db,
    sql`SELECT c.relname AS name, i.indisvalid AS valid, pg_get_indexdef(c.oid) AS definition
        FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE i.indrelid = 'leasehold.jobs'::regclass AND c.relname LIKE 'jobs\\_search\\_%' ORDER BY 1`,
  );
}

async function sync() {
  const client = await t.pool.connect();
  try {
    return await syncSearchIndexes(client, { lockTimeoutMs: 5_000 });
  } finally {
    client.release();
  }
}

beforeAll(async () => {
  t = await testDatabase();
  await registerKinds(t.db, [registration(KIND, ['orderId', 'customer.region']), registration(OTHER, [])]);
  // 6,000 orders (half in one region) and as many jobs of another kind, then statistics.
  for (let part = 0; part < 3; part++) {
    await enqueueMany(
      t.db,
      Array.from({ length: 2_000 }, (_, i) => ({
        queue: 'search-q',
        kind: KIND,
        payload: { orderId: `o-${part}-${i}`, customer: { region: i % 2 ? 'north' : 'south' } },
      })),
    );
    await enqueueMany(
      t.db,
      Array.from({ length: 2_000 }, (_, i) => ({
        queue: 'search-q',
        kind: OTHER,
        payload: { orderId: `o-${part}-${i}` },
      })),
    );
  }
  await run(t.db, sql`ANALYZE leasehold.jobs`);
});
afterAll(async () => {
  await t?.close();
});

describe('search indexes', () => {
  it('names each index by md5(kind:path) as SQL does, and builds it on that kind alone', async () => {
    const [row] = await run<{ name: string }>(
      t.db,
      sql`SELECT 'jobs_search_' || left(md5(${KIND} || ':' || 'customer.region'), 16) AS name`,
    );
    expect(searchIndexName(KIND, 'customer.region')).toBe(row!.name);
    expect(createSearchIndexSql(KIND, 'customer.region')).toBe(
      `CREATE INDEX CONCURRENTLY IF NOT EXISTS ${row!.name} ON leasehold.jobs ` +
        `(left((payload #>> '{customer,region}'), 512), created_at DESC, id DESC) WHERE kind = 'search.order'`,
    );
    expect(() => createSearchIndexSql(KIND, "a'b")).toThrow(/not a searchable path/);
    expect(() => createSearchIndexSql("k'", 'a')).toThrow(/not a kind name/);
  });

  it('builds one index per declared path, says so on the kinds page, and leaves a second run with nothing to do', async () => {
    expect((await listKinds(t.db)).find((k) => k.kind === KIND)?.searchPaths).toEqual([
      { path: 'customer.region', added: false, index: 'missing' },
      { path: 'orderId', added: false, index: 'missing' },
    ]);
    const first = await sync();
    expect(first.created.sort()).toEqual(
      [searchIndexName(KIND, 'orderId'), searchIndexName(KIND, 'customer.region')].sort(),
    );
    const built = await indexes();
    expect(built).toHaveLength(2);
    for (const index of built) {
      expect(index.valid).toBe(true);
      expect(index.definition).toContain(`WHERE (kind = '${KIND}'::text)`);
    }
    expect((await listKinds(t.db)).find((k) => k.kind === KIND)?.searchPaths.map((p) => p.index)).toEqual([
      'ready',
      'ready',
    ]);
    expect(await sync()).toMatchObject({ created: [], rebuilt: [], dropped: [], ready: expect.any(Array) });
  });

  const search = (path: string, value: string): PayloadSearch => ({ path, value, kinds: [KIND] });
  const explain = async (query: Record<string, string>, s: PayloadSearch) => {
    const rows = await run<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
      t.db,
      sql`EXPLAIN (FORMAT JSON) ${searchListSql(jobListSchema.parse({ ...query, path: s.path, value: s.value }), s)}`,
    );
    return planNodes(rows[0]!['QUERY PLAN'][0].Plan);
  };

  it('answers a search through its index: a value of one job, and one of half the kind, a time range', async () => {
    for (const [path, value] of [
      ['orderId', 'o-1-7'],
      ['customer.region', 'north'],
    ] as const) {
      const nodes = await explain({}, search(path, value));
      expect(
        nodes.some((n) => n['Index Name'] === searchIndexName(KIND, path)),
        `${path}: ${JSON.stringify(nodes.map((n) => [n['Node Type'], n['Index Name']]))}`,
      ).toBe(true);
      expect(nodes.some((n) => n['Node Type'] === 'Seq Scan')).toBe(false);
    }
    // A created time range stays on the index too.
    const ranged = await explain(
      { from: '2000-01-01T00:00', to: '2999-01-01T00:00', state: 'ready' },
      search('customer.region', 'north'),
    );
    expect(ranged.some((n) => n['Index Name'] === searchIndexName(KIND, 'customer.region'))).toBe(true);
  });

  it('finds the jobs by value in that kind only, newest first, and pages by (created_at, id)', async () => {
    const one = await listJobs(
      t.db,
      jobListSchema.parse({ path: 'orderId', value: 'o-2-5' }),
      search('orderId', 'o-2-5'),
    );
    expect(one.jobs.map((j) => [j.kind, j.payload])).toEqual([
      [KIND, { orderId: 'o-2-5', customer: { region: 'north' } }],
    ]);
    const query = { path: 'customer.region', value: 'south', limit: '1000' };
    const first = await listJobs(
      t.db,
      jobListSchema.parse({ ...query, limit: '200' }),
      search('customer.region', 'south'),
    );
    expect(first.jobs).toHaveLength(200);
    const second = await listJobs(
      t.db,
      jobListSchema.parse({ ...query, limit: '200', after: first.next! }),
      search('customer.region', 'south'),
    );
    const all = [...first.jobs, ...second.jobs];
    expect(new Set(all.map((j) => j.id)).size).toBe(400);
    const keys = all.map((j) => `${j.createdAt.toISOString()} ${j.id}`);
    expect(keys).toEqual([...keys].sort().reverse());
    // Without a resolved search (no kind may be searched): nothing.
    expect((await listJobs(t.db, jobListSchema.parse({ path: 'orderId', value: 'o-2-5' }))).jobs).toEqual([]);
  });

  it('rebuilds an index a failed concurrent build left invalid', async () => {
    const name = searchIndexName(KIND, 'orderId');
    await run(t.db, sql`UPDATE pg_index SET indisvalid = false WHERE indexrelid = ${`leasehold.${name}`}::regclass`);
    expect((await listKinds(t.db)).find((k) => k.kind === KIND)?.searchPaths).toContainEqual({
      path: 'orderId',
      added: false,
      index: 'building',
    });
    const again = await sync();
    expect(again.rebuilt).toEqual([name]);
    expect((await indexes()).find((i) => i.name === name)?.valid).toBe(true);
  });

  it("adds an admin's path (audited) and drops an index once no one declares its path", async () => {
    const added = await addSearchPath(t.db, {
      kind: OTHER,
      path: 'orderId',
      actor: 'admin@example.com',
      reason: 'tickets',
    });
    expect(added.applied).toBe(true);
    expect(await addSearchPath(t.db, { kind: OTHER, path: 'orderId', actor: 'admin@example.com' })).toMatchObject({
      applied: false,
      reason: 'already_searchable',
    });
    expect(
      await addSearchPath(t.db, { kind: 'no.such.kind', path: 'orderId', actor: 'admin@example.com' }),
    ).toMatchObject({ applied: false, reason: 'not_found' });
    expect(await searchableKinds(t.db, 'orderId')).toEqual([
      { kind: KIND, index: 'ready' },
      { kind: OTHER, index: 'missing' },
    ]);
    const built = await buildSearchIndexes(t.url, { allowProxy: true });
    expect(built.created).toEqual([searchIndexName(OTHER, 'orderId')]);
    // The handlers stop declaring customer.region; the admin's path is removed.
    await registerKinds(t.db, [registration(KIND, ['orderId'])]);
    expect(await removeSearchPath(t.db, { kind: OTHER, path: 'orderId', actor: 'admin@example.com' })).toMatchObject({
      applied: true,
    });
    expect(await removeSearchPath(t.db, { kind: KIND, path: 'orderId', actor: 'admin@example.com' })).toMatchObject({
      applied: false,
      reason: 'not_added',
      declared: true,
    });
    const after = await sync();
    expect(after.dropped.sort()).toEqual(
      [searchIndexName(KIND, 'customer.region'), searchIndexName(OTHER, 'orderId')].sort(),
    );
    expect((await indexes()).map((i) => i.name)).toEqual([searchIndexName(KIND, 'orderId')]);
    const audit = await run<{ action: string; outcome: string }>(
      t.db,
      sql`SELECT action, outcome FROM leasehold.audit_log WHERE action IN ('add_search_path', 'remove_search_path') ORDER BY id`,
    );
    expect(audit).toEqual([
      { action: 'add_search_path', outcome: 'applied' },
      { action: 'add_search_path', outcome: 'refused' },
      { action: 'add_search_path', outcome: 'refused' },
      { action: 'remove_search_path', outcome: 'applied' },
      { action: 'remove_search_path', outcome: 'refused' },
    ]);
  });
});
