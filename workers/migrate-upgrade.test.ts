/**
 * The upgrade harness: a migration applied to a populated database while a worker drains it.
 * The fixture (test/fixtures/migrations-upgrade.ts) is the real list plus one expanding
 * migration outside a transaction: a new column on the jobs table, a batched backfill, and an
 * index built concurrently.
 */
import { workerSettings } from '../test/workers.ts';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateDatabase } from '../db/migrate/index.ts';
import { enqueueMany } from '../db/queue/index.ts';
import { schemaCompatibility } from '../db/schema-version.ts';
import { testDatabase, type TestDatabase } from '../test/db.ts';
import { silentLogger } from '../test/attempts.ts';
import { uniqueQueue } from '../test/factories.ts';
import { query } from '../test/migrations.ts';
import {
  buildUpgradeFolder,
  UPGRADE_COLUMN,
  UPGRADE_INDEX,
  UPGRADE_TABLE,
} from '../test/fixtures/migrations-upgrade.ts';
import { until } from '../test/wait.ts';
import { defineHandler, HandlerRegistry } from './handler.ts';
import { Worker } from './worker.ts';

const JOBS = 20_000;

let t: TestDatabase;
beforeAll(async () => {
  t = await testDatabase({ max: 30 });
});
afterAll(async () => {
  await t?.close();
});

describe('an upgrade under load', () => {
  it('adds, backfills and indexes a column while a worker drains 20,000 jobs, each done exactly once', async () => {
    const { folder, extra, schemaVersion } = buildUpgradeFolder();
    const queue = uniqueQueue('upgrade');
    await enqueueMany(
      t.db,
      Array.from({ length: JOBS }, () => ({ queue, kind: 'upgrade.count' })),
    );
    const runs = new Map<string, number>();
    const count = defineHandler({
      kind: 'upgrade.count',
      versions: [1],
      schema: z.unknown(),
      timeoutMs: 10_000,
      handle: async ({ job }) => {
        runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      },
    });
    const worker = new Worker(
      workerSettings(queue, `upgrade-${queue}`, { concurrency: 50, batchSize: 50, pollMs: 50, graceMs: 1000 }),
      { db: t.db, databaseUrl: t.url, registry: new HandlerRegistry([count]), logger: silentLogger },
    );
    const serverNow = async () => (await query<{ at: Date }>(t.url, 'SELECT clock_timestamp() AS at'))[0]!.at;
    const done = async () =>
      (
        await query<{ n: number }>(
          t.url,
          `SELECT count(*)::int AS n FROM ${UPGRADE_TABLE.qualified} WHERE state = 'done'`,
        )
      )[0]!.n;
    try {
      await worker.start();
      await until('the drain is under way', async () => (await done()) >= 1000, 30_000);

      const started = await serverNow();
      const { applied } = await migrateDatabase(t.url, { migrationsFolder: folder });
      const finished = await serverNow();
      expect(applied).toEqual(extra);
      await until('every job is done', async () => (await done()) === JOBS, 120_000);

      // The drain went on during the migration: jobs finished between its start and its end.
      const [during] = await query<{ n: number }>(
        t.url,
        `SELECT count(*)::int AS n FROM ${UPGRADE_TABLE.qualified} WHERE finished_at BETWEEN $1 AND $2`,
        [started, finished],
      );
      expect(during!.n).toBeGreaterThan(0);
    } finally {
      await worker.stop(0);
    }

    // Every job done exactly once: one handler run each, one attempt each.
    expect(runs.size).toBe(JOBS);
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
    expect(
      await query(
        t.url,
        `SELECT state, attempts, count(*)::int AS jobs, count(${UPGRADE_COLUMN})::int AS backfilled
         FROM ${UPGRADE_TABLE.qualified} WHERE queue = $1 GROUP BY 1, 2`,
        [queue],
      ),
    ).toEqual([{ state: 'done', attempts: 1, jobs: JOBS, backfilled: JOBS }]);
    expect(
      await query(t.url, `SELECT indisvalid FROM pg_index WHERE indexrelid = '${UPGRADE_INDEX}'::regclass`),
    ).toEqual([{ indisvalid: true }]);
    // An expanding migration: the schema is newer, and this code still suits it.
    expect(await schemaCompatibility(t.db)).toEqual({ ok: true, schemaVersion, compatibleFrom: schemaVersion - 1 });
  });
});
