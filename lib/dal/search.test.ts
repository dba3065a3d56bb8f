/**
 * The Jobs page's payload search and its CSV export, through the data-access layer: a declared
 * path finds its jobs (combined with the other filters); a path masked for the viewer's role
 * answers as if nothing matched; bad input is a sentence, nothing read or written; the export
 * is masked as the pages are, guarded against formulas, capped, and audited before it is sent.
 * Real PostgreSQL; only next-auth's session read is stubbed.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { enqueueMany, registerKinds } from '../../db/queue/index.ts';
import { run } from '../../db/queue/executor.ts';
import { syncSearchIndexes } from '../../db/migrate/search-indexes.ts';
import { useTestDatabase } from '../../test/db.ts';
import { dalSession } from '../../test/dal-session.ts';
import { uniqueQueue } from '../../test/factories.ts';
import { MASK } from '../redaction.ts';
import { exportJobs, getJobs, getNewJobCount, previewBulk } from './index.ts';

vi.mock('next-auth', () => ({ getServerSession: vi.fn<() => Promise<unknown>>() }));

const t = useTestDatabase();
const session = dalSession(t, 'search.example.com');
const { signIn } = session;

const KIND = uniqueQueue('search.receipt');
const HIDDEN = uniqueQueue('search.hidden');
const queue = uniqueQueue('search');

async function buildIndexes() {
  const client = await t.pool.connect();
  try {
    await syncSearchIndexes(client, { lockTimeoutMs: 5_000 });
  } finally {
    client.release();
  }
}

beforeAll(async () => {
  await session.start({ LEASEHOLD_REDACT_PATHS: 'customer.phone' });
  const reg = (kind: string, redactedPaths: string[]) => ({
    kind,
    version: 1,
    defaultQueue: 'default',
    displayName: kind,
    redactedPaths,
    rerunSafe: false,
    searchablePaths: ['orderId', 'customer.email', 'customer.phone', 'region'],
  });
  await registerKinds(t.db, [reg(KIND, ['customer.email']), reg(HIDDEN, [])]);
  await enqueueMany(t.db, [
    ...Array.from({ length: 5 }, (_, i) => ({
      queue,
      kind: KIND,
      payload: { orderId: `A-${i}`, region: 'north', customer: { email: `c${i}@example.com`, phone: '555' } },
    })),
    {
      queue,
      kind: KIND,
      payload: { orderId: '=HYPERLINK("http://evil")', region: 'south', customer: { email: 'x@example.com' } },
      tags: ['=SUM(A1)', 'vip, "gold"'],
    },
  ]);
  await buildIndexes();
});
afterAll(() => session.close());

describe('the Jobs page’s payload search', () => {
  it('finds the job by a declared path, in the kind asked for or in every kind declaring it', async () => {
    signIn('operator');
    const one = await getJobs({ path: 'orderId', value: 'A-3', kind: KIND });
    expect(one.jobs.map((j) => j.kind)).toEqual([KIND]);
    expect((await getJobs({ path: 'orderId', value: 'A-3' })).jobs).toHaveLength(1);
    // Combined with the others: the queue and a created time range.
    expect((await getJobs({ path: 'region', value: 'north', queue })).jobs).toHaveLength(5);
    expect((await getJobs({ path: 'region', value: 'north', queue: 'elsewhere' })).jobs).toEqual([]);
    expect((await getJobs({ path: 'region', value: 'north', to: '2000-01-01T00:00' })).jobs).toEqual([]);
    expect((await getJobs({ path: 'region', value: 'north', from: '2000-01-01' })).jobs).toHaveLength(5);
  });

  it('answers as if nothing matched when the path is masked for the role, and finds it for an admin', async () => {
    for (const role of ['viewer', 'operator'] as const) {
      signIn(role);
      // Declared by the kind (customer.email) and configured (LEASEHOLD_REDACT_PATHS: customer.phone).
      expect((await getJobs({ path: 'customer.email', value: 'c1@example.com' })).jobs, role).toEqual([]);
      expect(await getJobs({ path: 'customer.phone', value: '555', kind: KIND }), role).toMatchObject({
        jobs: [],
        next: null,
      });
    }
    signIn('admin');
    expect((await getJobs({ path: 'customer.email', value: 'c1@example.com' })).jobs).toHaveLength(1);
  });

  it('pages only over the kind versions the role may see: no cursor points at a masked match', async () => {
    // Version 1 leaves `code` open, version 2 masks it; the newer match is version 2's.
    const kind = uniqueQueue('search.versions');
    const reg = (version: number, redactedPaths: string[]) => ({
      kind,
      version,
      defaultQueue: 'default',
      displayName: kind,
      redactedPaths,
      rerunSafe: false,
      searchablePaths: ['code'],
    });
    await registerKinds(t.db, [reg(1, []), reg(2, ['code'])]);
    await enqueueMany(t.db, [{ queue, kind, kindVersion: 1, payload: { code: 'K-1' } }]);
    await enqueueMany(t.db, [{ queue, kind, kindVersion: 2, payload: { code: 'K-1' } }]);
    await buildIndexes();
    signIn('viewer');
    const page = await getJobs({ path: 'code', value: 'K-1', kind, limit: '1' });
    expect(page.jobs.map((j) => j.kindVersion)).toEqual([1]);
    expect(page.next).toBeNull();
    signIn('admin');
    expect((await getJobs({ path: 'code', value: 'K-1', kind })).jobs.map((j) => j.kindVersion)).toEqual([2, 1]);
  });

  it('matches a string, number or boolean only: an object’s text never confirms what is masked beneath it', async () => {
    const kind = uniqueQueue('search.parent');
    await registerKinds(t.db, [
      {
        kind,
        version: 1,
        defaultQueue: 'default',
        displayName: kind,
        redactedPaths: ['customer.email'],
        rerunSafe: false,
        searchablePaths: ['customer', 'note'],
      },
    ]);
    const long = 'n'.repeat(3000);
    await enqueueMany(t.db, [{ queue, kind, payload: { customer: { email: 'secret@example.com' }, note: long } }]);
    // A value past the index's 512 characters is indexed cut (the build and the enqueue work).
    await buildIndexes();
    await enqueueMany(t.db, [{ queue, kind, payload: { customer: { email: 'other@example.com' }, note: long } }]);
    for (const role of ['viewer', 'admin'] as const) {
      signIn(role);
      expect((await getJobs({ path: 'customer', value: '{"email": "secret@example.com"}', kind })).jobs, role).toEqual(
        [],
      );
    }
    expect((await getJobs({ path: 'note', value: 'n'.repeat(512), kind })).jobs).toEqual([]);
  });

  it('says what is wrong with bad input, as a sentence, and reads nothing', async () => {
    signIn('operator');
    const refusal = (params: Record<string, string>) =>
      getJobs(params).then(
        () => 'answered',
        (e: Error) => e.message,
      );
    expect(await refusal({ path: 'notes', value: 'x' })).toMatch(/^No kind declares notes searchable/);
    expect(await refusal({ path: 'notes', value: 'x', kind: KIND })).toMatch(/notes is not declared searchable in/);
    expect(await refusal({ path: 'items[0].sku', value: 'x' })).toMatch(/a payload path is keys joined by dots/);
    expect(await refusal({ path: 'orderId', value: 'x'.repeat(513) })).toMatch(/at most 512 characters/);
    expect(await refusal({ path: 'orderId' })).toMatch(/needs both a path and a value/);
    expect(await refusal({ from: '2026-05-02T00:00', to: '2026-05-01T00:00' })).toMatch(/ends before it starts/);
    expect(await refusal({ from: 'yesterday' })).toMatch(/expected a time such as/);
    expect(await getNewJobCount({ path: 'orderId', value: 'A-1' }).catch((e: Error) => e.message)).toMatch(
      /not counted for a payload search/,
    );
  });

  it('refuses a search whose index is not built yet, naming the command', async () => {
    signIn('admin');
    await run(
      t.db,
      sql`INSERT INTO leasehold.kind_search_paths (kind, path, added_by) VALUES (${KIND}, 'sku', 'seed')`,
    );
    expect(await getJobs({ path: 'sku', value: 'x' }).catch((e: Error) => e.message)).toMatch(
      /not built yet: run leasehold search-index/,
    );
    await buildIndexes();
    expect((await getJobs({ path: 'sku', value: 'x' })).jobs).toEqual([]);
  });

  it('previews a bulk action over a search result', async () => {
    signIn('admin');
    expect(await previewBulk({ action: 'cancel', filter: { path: 'region', value: 'north', queue } })).toMatchObject({
      matched: 5,
      overCap: false,
    });
  });
});

describe('the CSV export of a search', () => {
  it('holds the jobs masked as the pages show them, formulas defused, quoted, audited first', async () => {
    signIn('operator');
    const file = await exportJobs({
      filter: { path: 'orderId', value: '=HYPERLINK("http://evil")' },
      reason: 'ticket 9',
    });
    expect(file.filename).toMatch(/^leasehold-jobs-.*\.csv$/);
    const [header, row, end] = file.csv.split('\r\n');
    expect(header).toBe(
      'id,state,queue,kind,kind_version,tags,attempts,failure_class,created_at,run_at,finished_at,idempotency_key,last_error,payload',
    );
    expect(end).toBe('');
    // A cell starting with = is prefixed with a quote; a comma or a quote makes it quoted.
    expect(row).toContain(`,ready,${queue},${KIND},1,"'=SUM(A1) vip, ""gold""",0,`);
    // The payload as the page shows it (jsonb's key order): customer.email masked.
    expect(row).toContain(
      `"{""region"":""south"",""orderId"":""=HYPERLINK(\\""http://evil\\"")"",""customer"":{""email"":""${MASK}""}}"`,
    );
    const formula = await exportJobs({ filter: { queue, path: 'region', value: 'south' } });
    expect(formula.rows).toBe(1);
    const [audit] = await run<{
      actor: string;
      affected: number;
      detail: { filter: Record<string, string>; reason: string };
    }>(
      t.db,
      sql`SELECT actor, affected, detail FROM leasehold.audit_log WHERE action = 'export_jobs' ORDER BY id LIMIT 1`,
    );
    expect(audit).toMatchObject({
      affected: 1,
      detail: { filter: { path: 'orderId' }, reason: 'ticket 9' },
    });
  });

  it('refuses more than 10,000 rows with a sentence, and records nothing', async () => {
    signIn('operator');
    const big = uniqueQueue('export-big');
    await enqueueMany(
      t.db,
      Array.from({ length: 10_001 }, () => ({ queue: big, kind: 'k' })),
    );
    const before = await run<{ n: number }>(
      t.db,
      sql`SELECT count(*)::int AS n FROM leasehold.audit_log WHERE action = 'export_jobs'`,
    );
    expect(await exportJobs({ filter: { queue: big } }).catch((e: Error) => e.message)).toMatch(
      /^More than 10,000 jobs match, more than one export may hold/,
    );
    const after = await run<{ n: number }>(
      t.db,
      sql`SELECT count(*)::int AS n FROM leasehold.audit_log WHERE action = 'export_jobs'`,
    );
    expect(after).toEqual(before);
  });
});
