/**
 * Installing Leasehold beside an application: the app (test/fixtures/coexist-app) lives in
 * `public` with tables named as a queue's would be (users, jobs, workers, queues) and its own
 * Drizzle journal, one row dated in 2100. Whichever is installed first, Leasehold's migrations
 * change nothing outside schema `leasehold`, and the app ends up exactly as it is alone.
 *
 * Until Leasehold's tables move into schema `leasehold` (the v1 baseline) this fails: today's
 * migrations create their tables in `public`, beside (or onto) the app's.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ScratchDatabase } from '../../test/db.ts';
import { migrateDatabase } from './index.ts';
import { catalogOutside } from '../../test/catalog.ts';
import { declaredTables, scratchDatabase, withClient } from '../../test/migrations.ts';

const APP_MIGRATIONS = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'test',
  'fixtures',
  'coexist-app',
);

const scratches: ScratchDatabase[] = [];
afterEach(async () => {
  await Promise.all(scratches.splice(0).map((s) => s.drop()));
});
async function fresh(): Promise<string> {
  const scratch = await scratchDatabase('leasehold_coexist');
  scratches.push(scratch);
  return scratch.url;
}

/** The app's own install: Drizzle's migrator with its default journal, drizzle.__drizzle_migrations. */
function installApp(url: string): Promise<void> {
  return withClient(url, (client) => migrate(drizzle(client), { migrationsFolder: APP_MIGRATIONS }));
}

/** Everything outside schema leasehold, and the app's journal rows. */
function outsideLeasehold(url: string) {
  return withClient(url, async (client) => {
    const { rows } = await client.query(`SELECT to_regclass('drizzle.__drizzle_migrations') IS NOT NULL AS present`);
    const appJournal = rows[0]?.present
      ? (await client.query('SELECT id, hash, created_at FROM drizzle.__drizzle_migrations ORDER BY id')).rows
      : [];
    return { catalog: await catalogOutside(client), appJournal };
  });
}

const leaseholdTables = (url: string) =>
  withClient(url, async (client) =>
    (
      await client.query<{ name: string }>(
        `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = 'leasehold' AND c.relkind IN ('r', 'p') ORDER BY 1`,
      )
    ).rows.map((r) => r.name),
  );

describe('Leasehold installed beside an application', () => {
  let appAlone: Awaited<ReturnType<typeof outsideLeasehold>>;
  let reference: ScratchDatabase;
  beforeAll(async () => {
    reference = await scratchDatabase('leasehold_coexist_ref');
    await installApp(reference.url);
    appAlone = await outsideLeasehold(reference.url);
  });
  afterAll(async () => {
    await reference?.drop();
  });

  it.each([
    { order: 'the app first', steps: ['app', 'leasehold'] as const },
    { order: 'Leasehold first', steps: ['leasehold', 'app'] as const },
  ])('changes nothing outside schema leasehold, with $order', async ({ steps }) => {
    const url = await fresh();
    const install = {
      app: () => installApp(url),
      // Leasehold's step checks itself: the catalog outside its schema is as it was before it.
      leasehold: async () => {
        const before = await outsideLeasehold(url);
        await migrateDatabase(url);
        expect(await outsideLeasehold(url)).toEqual(before);
      },
    };
    for (const step of steps) await install[step]();

    // The app is as it is without Leasehold: its tables, its journal with the row from 2100.
    expect(await outsideLeasehold(url)).toEqual(appAlone);
    expect(appAlone.appJournal).toEqual([expect.objectContaining({ created_at: '4102444800000' })]);
    // And Leasehold has its tables, all of them in its own schema.
    expect(await leaseholdTables(url)).toEqual(
      ['migrations', ...declaredTables().map((t) => t.name)].sort((a, b) => a.localeCompare(b)),
    );
    expect(declaredTables().map((t) => t.schema)).toEqual(declaredTables().map(() => 'leasehold'));
  });
});
