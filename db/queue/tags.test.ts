/**
 * Tags (docs/jobs.md, "Tags"): stored once at enqueue, by every path, refused when they are not
 * short strings, and found through the partial index without taxing jobs that have none.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { enqueue, enqueueMany, LeaseholdInputError } from '.';
import type { EnqueueSpec } from './enqueue-spec.ts';
import { run } from './executor.ts';
import { useTestDatabase } from '../../test/db.ts';
import { getJob, uniqueQueue } from '../../test/factories.ts';

const t = useTestDatabase();

describe('tags', () => {
  it('are stored as given (repeats dropped) by enqueue and, job by job, by enqueueMany', async () => {
    const queue = uniqueQueue();
    const one = await enqueue(t.db, { queue, kind: 'tagged', tags: ['acme', 'vip', 'acme'] });
    expect(one.job).toMatchObject({ tags: ['acme', 'vip'] });
    const many = await enqueueMany(t.db, [
      { queue, kind: 'tagged', tags: ['acme'] },
      { queue, kind: 'tagged' },
      { queue, kind: 'tagged', tags: ['beta', 'acme'] },
    ]);
    expect((await getJob(t.db, many[0]!.id)).tags).toEqual(['acme']);
    expect((await getJob(t.db, many[1]!.id)).tags).toEqual([]);
    expect((await getJob(t.db, many[2]!.id)).tags).toEqual(['beta', 'acme']);
    const untagged = await run<{ tags: string[] | null }>(
      t.db,
      sql`SELECT tags FROM leasehold.jobs WHERE id = ${many[1]!.id}`,
    );
    expect(untagged[0]?.tags).toBeNull(); // no entry in the partial index
  });

  it('are found through the partial GIN index', async () => {
    const queue = uniqueQueue();
    await enqueueMany(
      t.db,
      Array.from({ length: 200 }, (_, i) => ({
        queue,
        kind: 'tagged',
        ...(i % 50 === 0 ? { tags: [`t-${queue}`] } : {}),
      })),
    );
    // On one connection: the planner's choice, then with sequential scans off.
    const client = await t.pool.connect();
    const explain = `EXPLAIN SELECT id FROM leasehold.jobs WHERE tags @> ARRAY['t-${queue}']::text[]`;
    let plans: string[];
    try {
      const chosen = await client.query<{ 'QUERY PLAN': string }>(explain);
      await client.query('SET enable_seqscan = off');
      const forced = await client.query<{ 'QUERY PLAN': string }>(explain);
      await client.query('RESET enable_seqscan');
      plans = [...chosen.rows, ...forced.rows].map((r) => r['QUERY PLAN']);
    } finally {
      client.release();
    }
    // Usable for the filter (the planner may still prefer a scan of a tiny table).
    expect(plans.join('\n')).toMatch(/jobs_tags_idx/);
    const found = await run<{ n: number }>(
      t.db,
      sql`SELECT count(*)::int AS n FROM leasehold.jobs WHERE tags @> ARRAY[${`t-${queue}`}]::text[]`,
    );
    expect(found[0]?.n).toBe(4);
  });

  const bad: [string, unknown, RegExp][] = [
    ['more than 16', Array.from({ length: 17 }, (_, i) => `t${i}`), /tags: at most 16 tags/],
    ['a tag over 64 characters', ['x'.repeat(65)], /tags\.0/],
    ['an empty tag', [''], /tags\.0/],
    ['a tag with a control character', ['a\nb'], /control characters/],
    ['a number', [42], /tags\.0/],
    ['not an array', 'acme', /tags/],
  ];
  for (const [name, tags, says] of bad) {
    it(`refuses ${name} at the call, writing nothing`, async () => {
      const queue = uniqueQueue();
      const spec: EnqueueSpec = JSON.parse(JSON.stringify({ queue, kind: 'tagged', tags }));
      await expect(enqueue(t.db, spec)).rejects.toBeInstanceOf(LeaseholdInputError);
      await expect(enqueue(t.db, spec)).rejects.toThrow(says);
      await expect(enqueueMany(t.db, [spec])).rejects.toThrow(/jobs\[0\]\.tags/);
      const rows = await run<{ n: number }>(
        t.db,
        sql`SELECT count(*)::int AS n FROM leasehold.jobs WHERE queue = ${queue}`,
      );
      expect(rows[0]?.n).toBe(0);
    });
  }
});
