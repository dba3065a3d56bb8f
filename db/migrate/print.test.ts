import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import type { ScratchDatabase } from '../../test/db.ts';
import { LEASEHOLD_LOCK_CLASS, MIGRATION_LOCK_KEY } from '../advisory-locks.ts';
import { BUSY_MESSAGE } from './print.ts';
import { migrateDatabase, MIGRATIONS_FOLDER, pendingMigrationsSql, readMigrations } from './index.ts';
import { catalogOutside } from '../../test/catalog.ts';
import { buildUpgradeFolder } from '../../test/fixtures/migrations-upgrade.ts';
import { journal, query, scratchDatabase, withClient } from '../../test/migrations.ts';

const scratches: ScratchDatabase[] = [];
afterEach(async () => {
  await Promise.all(scratches.splice(0).map((s) => s.drop()));
});
async function fresh(): Promise<string> {
  const scratch = await scratchDatabase('leasehold_print');
  scratches.push(scratch);
  return scratch.url;
}

/** Runs the SQL text with Debian's psql, stopping at the first error, as the printed header says. */
async function psql(url: string, sql: string): Promise<{ code: number; stderr: string }> {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'lh-print-')), 'pending.sql');
  writeFileSync(file, sql);
  return promisify(execFile)('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', file, url]).then(
    ({ stderr }) => ({ code: 0, stderr }),
    (error: { code: number; stderr: string }) => ({ code: error.code, stderr: error.stderr }),
  );
}

/** Everything the migrations made, and the journal without its timestamps. */
async function migratedState(url: string) {
  return withClient(url, async (client) => ({
    catalog: await catalogOutside(client, ''),
    journal: (
      await client.query(
        'SELECT name, position, checksum, schema_version, compatible_from FROM leasehold.migrations ORDER BY position',
      )
    ).rows,
  }));
}

describe('the pending migrations as SQL (npm run db:migrate -- --print)', () => {
  it.each([
    { list: "Leasehold's migrations", folder: () => MIGRATIONS_FOLDER },
    { list: 'the upgrade fixture (a step outside a transaction)', folder: () => buildUpgradeFolder().folder },
  ])(
    'applied with psql to a fresh database, leave it as the runner would, with nothing pending: $list',
    async ({ folder }) => {
      const migrationsFolder = folder();
      const printedFor = await fresh();
      const sql = await pendingMigrationsSql(printedFor, { migrationsFolder });
      expect(sql).toMatch(/^-- Leasehold: \d+ pending migrations? of /);

      const { code, stderr } = await psql(printedFor, sql);
      expect({ code, errors: stderr.split('\n').filter((l) => /ERROR/.test(l)) }).toEqual({ code: 0, errors: [] });
      expect(await journal(printedFor)).toEqual(readMigrations(migrationsFolder).map((m) => m.name));
      expect((await migrateDatabase(printedFor, { migrationsFolder })).applied).toEqual([]);
      expect(await pendingMigrationsSql(printedFor, { migrationsFolder })).toMatch(/^-- Leasehold: nothing to apply/);

      const byRunner = await fresh();
      await migrateDatabase(byRunner, { migrationsFolder });
      expect(await migratedState(printedFor)).toEqual(await migratedState(byRunner));
    },
  );

  it('fails, applying nothing, on a database that moved on after it was printed', async () => {
    const url = await fresh();
    const sql = await withClient(url, (client) => pendingMigrationsSql(client));
    await migrateDatabase(url);
    const before = await query(url, 'SELECT name, applied_at FROM leasehold.migrations ORDER BY position');

    const { code, stderr } = await psql(url, sql);
    expect(code).not.toBe(0);
    expect(stderr).toContain(
      `Leasehold: migration ${readMigrations(MIGRATIONS_FOLDER)[0]!.name} must follow exactly 0 applied migrations; this SQL was printed for another state of the database: print it again`,
    );
    expect(await query(url, 'SELECT name, applied_at FROM leasehold.migrations ORDER BY position')).toEqual(before);
  });

  it('stops with a sentence, applying nothing, while another runner holds the migration lock', async () => {
    const url = await fresh();
    const sql = await pendingMigrationsSql(url);
    // Waiting inside pg_advisory_lock would be a running statement that another runner's
    // CREATE INDEX CONCURRENTLY waits for: the script must not wait at all.
    await withClient(url, async (holder) => {
      await holder.query('SELECT pg_advisory_lock($1, $2)', [LEASEHOLD_LOCK_CLASS, MIGRATION_LOCK_KEY]);
      const { code, stderr } = await psql(url, sql);
      expect(code).not.toBe(0);
      expect(stderr).toContain(BUSY_MESSAGE);
    });
    expect(await query(url, "SELECT to_regclass('leasehold.jobs') IS NULL AS absent")).toEqual([{ absent: true }]);

    // Once the lock is free the same file applies.
    const { code } = await psql(url, sql);
    expect(code).toBe(0);
    expect(await journal(url)).toEqual(readMigrations(MIGRATIONS_FOLDER).map((m) => m.name));
  });
});
