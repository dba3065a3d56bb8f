import { createHash } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { ScratchDatabase } from '../../test/db.ts';
import { MigrationFailed, MigrationLockBusy, migrateDatabase, MIGRATIONS_FOLDER, readMigrations } from './index.ts';
import { declaredTables, journal, query, scratchDatabase, writeMigrations } from '../../test/migrations.ts';
import { until } from '../../test/wait.ts';

const scratches: ScratchDatabase[] = [];
afterEach(async () => {
  await Promise.all(scratches.splice(0).map((s) => s.drop()));
});
async function fresh(): Promise<string> {
  const scratch = await scratchDatabase('leasehold_mig');
  scratches.push(scratch);
  return scratch.url;
}

const table = (name: string) => ({ name, sql: `CREATE TABLE leasehold.${name} (id integer PRIMARY KEY);` });

describe('the migration runner', () => {
  it('applies every migration once, in journal order, when run twice and from two runners at once', async () => {
    const url = await fresh();
    const runs = await Promise.all([migrateDatabase(url), migrateDatabase(url)]);
    const again = await migrateDatabase(url);

    const list = readMigrations(MIGRATIONS_FOLDER);
    // One runner took the lock first and applied everything; the other found nothing to do.
    expect(runs.map((r) => r.applied.length).sort((a, b) => a - b)).toEqual([0, list.length]);
    expect(again.applied).toEqual([]);
    const rows = await query<{ name: string; position: number; checksum: string }>(
      url,
      'SELECT name, position, checksum FROM leasehold.migrations ORDER BY position',
    );
    expect(rows).toEqual(
      list.map((m, position) => ({
        name: m.name,
        position,
        checksum: createHash('sha256')
          .update(readFileSync(path.join(MIGRATIONS_FOLDER, `${m.name}.sql`)))
          .digest('hex'),
      })),
    );
    const tables = await query<{ schema: string; name: string }>(
      url,
      `SELECT n.nspname AS schema, c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
         AND (n.nspname, c.relname) <> ('leasehold', 'migrations') ORDER BY 1, 2`,
    );
    expect(tables).toEqual(declaredTables().map(({ schema, name }) => ({ schema, name })));
  });

  it('ignores an application journal dated later than its migrations (the bug Drizzle had)', async () => {
    const url = await fresh();
    // What an application using Drizzle's migrator leaves: its journal, one row from the future.
    await query(
      url,
      `CREATE SCHEMA drizzle;
       CREATE TABLE drizzle.__drizzle_migrations (id serial PRIMARY KEY, hash text NOT NULL, created_at bigint);
       INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES ('app', 4102444800000);`,
    );
    const { applied } = await migrateDatabase(url);
    expect(applied).toEqual(readMigrations(MIGRATIONS_FOLDER).map((m) => m.name));
    expect(await query(url, 'SELECT hash, created_at FROM drizzle.__drizzle_migrations')).toEqual([
      { hash: 'app', created_at: '4102444800000' },
    ]);
  });

  it('runs each migration in its own transaction: a failing one is rolled back with its journal row', async () => {
    const url = await fresh();
    const folder = writeMigrations([
      table('first'),
      {
        name: '0001_fails',
        sql: 'CREATE TABLE leasehold.second (id integer);\n--> statement-breakpoint\nSELECT 1 / 0;',
      },
    ]);
    await expect(migrateDatabase(url, { migrationsFolder: folder })).rejects.toThrow(
      /^Leasehold migration "0001_fails" failed at statement 2 of 2 and was rolled back with its journal row .*division by zero/,
    );
    expect(await journal(url)).toEqual(['first']);
    expect(
      await query(url, `SELECT to_regclass('leasehold.first') AS first, to_regclass('leasehold.second') AS second`),
    ).toEqual([{ first: 'leasehold.first', second: null }]);
  });

  it('fails a migration that waits longer than lock_timeout for a lock, naming it, and applies it once free', async () => {
    const url = await fresh();
    await migrateDatabase(url, { migrationsFolder: writeMigrations([table('busy')]) });
    const folder = writeMigrations([
      table('busy'),
      { name: '0001_alter', sql: 'ALTER TABLE leasehold.busy ADD COLUMN note text;' },
    ]);
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE leasehold.busy IN ACCESS SHARE MODE');
      const started = Date.now();
      const error = await migrateDatabase(url, { migrationsFolder: folder, lockTimeoutMs: 300 }).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(MigrationFailed);
      expect((error as Error).message).toMatch(
        /^Leasehold migration "0001_alter" failed at statement 1 of 1 .*\[SQLSTATE 55P03\] It waited more than the lock timeout \(300 ms\)/,
      );
      expect(Date.now() - started).toBeLessThan(5000);
      expect(await journal(url)).toEqual(['busy']);
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
    expect((await migrateDatabase(url, { migrationsFolder: folder, lockTimeoutMs: 300 })).applied).toEqual([
      '0001_alter',
    ]);
  });

  it('stops waiting for a migration lock another session holds, naming its pid, user and application, and applies nothing', async () => {
    const url = await fresh();
    const folder = writeMigrations([table('late')]);
    const holder = new pg.Client({ connectionString: url, application_name: 'red-holder' });
    await holder.connect();
    try {
      const { rows } = await holder.query<{ pid: number; who: string }>(
        'SELECT pg_backend_pid() AS pid, current_user AS who, pg_advisory_lock(19528, 1) IS NOT NULL AS held',
      );
      const started = Date.now();
      const error = await migrateDatabase(url, { migrationsFolder: folder, lockWaitMs: 600 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(MigrationLockBusy);
      expect((error as Error).message).toBe(
        'Leasehold will not migrate: another session has held the migration lock (pg_advisory_lock(19528, 1)) for the ' +
          `600 ms this run waited: pid ${rows[0]!.pid}, user ${rows[0]!.who}, application "red-holder". Let that ` +
          'migration finish, or end that session (SELECT pg_terminate_backend(pid)) if it is not one, then run again; ' +
          'nothing was applied.',
      );
      expect(Date.now() - started).toBeGreaterThanOrEqual(600);
      expect(await query(url, "SELECT to_regclass('leasehold.late') AS late")).toEqual([{ late: null }]);
    } finally {
      await holder.end();
    }
    expect((await migrateDatabase(url, { migrationsFolder: folder, lockWaitMs: 600 })).applied).toEqual(['late']);
  });

  it.each([
    {
      refusal: 'an applied migration this version does not know (a newer version migrated)',
      applied: [table('a'), table('b')],
      list: [table('a')],
      message:
        /^Leasehold will not migrate: the database has migration "b" \(applied .*\) that this version of Leasehold does not know: it was migrated by a newer version of Leasehold/,
    },
    {
      refusal: 'an earlier migration unapplied while a later one is applied (a gap)',
      applied: [table('a'), table('c')],
      list: [table('a'), table('b'), table('c')],
      message: /^Leasehold will not migrate: migration "b" is not applied, but the later "c" is/,
    },
    {
      refusal: 'an applied migration whose file changed since',
      applied: [table('a')],
      list: [{ name: 'a', sql: 'CREATE TABLE leasehold.a (id bigint PRIMARY KEY);' }],
      message:
        /^Leasehold will not migrate: migration "a" was applied .* from a file with checksum [0-9a-f]{12}…, and .*a\.sql now has [0-9a-f]{12}…: someone edited a migration that had already landed/,
    },
    {
      refusal: 'applied migrations listed in another order',
      applied: [table('a'), table('b')],
      list: [table('b'), table('a')],
      message:
        /^Leasehold will not migrate: migration "a" was applied as number 1, and meta\/_journal.json now lists it as number 2/,
    },
  ])('refuses $refusal, with a sentence, and applies nothing', async ({ applied, list, message }) => {
    const url = await fresh();
    await migrateDatabase(url, { migrationsFolder: writeMigrations(applied) });
    const before = await journal(url);
    const next = writeMigrations([...list, table('later')]);
    await expect(migrateDatabase(url, { migrationsFolder: next })).rejects.toThrow(message);
    expect(await journal(url)).toEqual(before);
    expect(await query(url, `SELECT to_regclass('leasehold.later') AS later`)).toEqual([{ later: null }]);
  });

  it.each([
    {
      disagreement: 'a listed migration has no file',
      change: (folder: string) => rmSync(path.join(folder, 'b.sql')),
      message: /meta\/_journal.json lists "b" but b.sql is missing/,
    },
    {
      disagreement: 'a file is not listed',
      change: (folder: string) => writeFileSync(path.join(folder, 'c.sql'), 'SELECT 1;'),
      message: /c.sql is not listed in meta\/_journal.json/,
    },
  ])(
    'refuses when the journal and the files disagree ($disagreement), before connecting',
    async ({ change, message }) => {
      const folder = writeMigrations([table('a'), table('b')]);
      change(folder);
      // No server listens on port 1: the refusal comes from the folder alone.
      await expect(migrateDatabase('postgres://nobody@127.0.0.1:1/none', { migrationsFolder: folder })).rejects.toThrow(
        message,
      );
    },
  );

  it('keeps a separate journal per list of migrations (the demo has its own)', async () => {
    const url = await fresh();
    await migrateDatabase(url);
    const { applied } = await migrateDatabase(url, {
      migrationsFolder: writeMigrations([{ name: '0000_orders', sql: 'CREATE TABLE public.orders (id integer);' }]),
      migrationsTable: 'demo_migrations',
    });
    expect(applied).toEqual(['0000_orders']);
    expect(await journal(url, 'demo_migrations')).toEqual(['0000_orders']);
    expect(await journal(url)).toEqual(readMigrations(MIGRATIONS_FOLDER).map((m) => m.name));
  });

  it('creates its journal when another session creates schema leasehold at the same moment', async () => {
    const url = await fresh();
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query('CREATE SCHEMA IF NOT EXISTS leasehold');
      const migrating = migrateDatabase(url, { migrationsFolder: writeMigrations([table('a')]) });
      // The runner's own CREATE SCHEMA waits on the other session's uncommitted one.
      // (Asked on a connection of its own: in a transaction, pg_stat_activity stays as first read.)
      await until('the runner waits on the other CREATE SCHEMA', async () => {
        const rows = await query(
          url,
          `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'leasehold-migrate'
             AND wait_event_type = 'Lock' AND query LIKE 'CREATE SCHEMA%'`,
        );
        return rows.length > 0;
      });
      // Its commit makes the runner's statement fail on pg_namespace's unique index (23505).
      await other.query('COMMIT');
      expect((await migrating).applied).toEqual(['a']);
    } finally {
      await other.end();
    }
    expect(await journal(url)).toEqual(['a']);
  });
});

describe('a migration headed -- leasehold:no-transaction', () => {
  it('runs statement by statement in autocommit, under the runner lock, and is recorded after', async () => {
    const url = await fresh();
    const folder = writeMigrations([
      { name: '0000_widgets', sql: 'CREATE TABLE leasehold.widgets (id integer PRIMARY KEY, code text);' },
      {
        name: '0001_concurrent',
        sql: [
          '-- leasehold:no-transaction',
          `CREATE TABLE leasehold.seen AS SELECT txid_current() AS xid, EXISTS (
             SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
               AND classid = 19528 AND objid = 1 AND objsubid = 2) AS locked;`,
          'INSERT INTO leasehold.seen SELECT txid_current(), false;',
          'CREATE INDEX CONCURRENTLY IF NOT EXISTS widgets_code_idx ON leasehold.widgets (code);',
        ].join('\n--> statement-breakpoint\n'),
      },
    ]);
    expect((await migrateDatabase(url, { migrationsFolder: folder })).applied).toEqual([
      '0000_widgets',
      '0001_concurrent',
    ]);
    const seen = await query<{ xid: string; locked: boolean }>(
      url,
      'SELECT xid, locked FROM leasehold.seen ORDER BY xid',
    );
    // Two statements, two transactions; the first saw the runner's session lock held.
    expect(seen).toHaveLength(2);
    expect(seen[0]!.xid).not.toEqual(seen[1]!.xid);
    expect(seen[0]!.locked).toBe(true);
    expect(
      await query(url, `SELECT indisvalid FROM pg_index WHERE indexrelid = 'leasehold.widgets_code_idx'::regclass`),
    ).toEqual([{ indisvalid: true }]);
    expect(await journal(url)).toEqual(['0000_widgets', '0001_concurrent']);
  });

  it('drops the index a failed concurrent build left invalid, and the re-run builds it valid', async () => {
    const url = await fresh();
    await query(
      url,
      `CREATE SCHEMA leasehold; CREATE TABLE leasehold.widgets (id integer PRIMARY KEY, code text);
       INSERT INTO leasehold.widgets VALUES (1, 'a'), (2, 'a'), (3, 'b');`,
    );
    const folder = writeMigrations([
      {
        name: '0000_unique_code',
        sql: '-- leasehold:no-transaction\nCREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS widgets_code_key ON leasehold.widgets (code);',
      },
    ]);
    await expect(migrateDatabase(url, { migrationsFolder: folder })).rejects.toThrow(
      /^Leasehold migration "0000_unique_code" \(outside a transaction\) failed at statement 1 of 1: could not create unique index "widgets_code_key"/,
    );
    const validity = `SELECT indexrelid::regclass::text AS index, indisvalid FROM pg_index
      WHERE indrelid = 'leasehold.widgets'::regclass AND indexrelid <> 'leasehold.widgets_pkey'::regclass`;
    // The failed build left the index behind, invalid: IF NOT EXISTS alone would now skip it.
    expect(await query(url, validity)).toEqual([{ index: 'leasehold.widgets_code_key', indisvalid: false }]);
    expect(await journal(url)).toEqual([]);

    await query(url, `DELETE FROM leasehold.widgets WHERE id = 2`);
    const { applied, repairs } = await migrateDatabase(url, { migrationsFolder: folder });
    expect(applied).toEqual(['0000_unique_code']);
    expect(repairs).toEqual([
      'index leasehold."widgets_code_key" on widgets is invalid (a concurrent build failed); migration "0000_unique_code" builds it again',
    ]);
    expect(await query(url, validity)).toEqual([{ index: 'leasehold.widgets_code_key', indisvalid: true }]);
    await expect(query(url, `INSERT INTO leasehold.widgets VALUES (4, 'b')`)).rejects.toMatchObject({ code: '23505' });
  });

  it("rebuilds an applied migration's invalid index with REINDEX CONCURRENTLY, refusing while it cannot", async () => {
    const url = await fresh();
    const folder = writeMigrations([
      { name: '0000_widgets', sql: 'CREATE TABLE leasehold.widgets (id integer PRIMARY KEY, code text);' },
    ]);
    await migrateDatabase(url, { migrationsFolder: folder });
    await query(url, `INSERT INTO leasehold.widgets VALUES (1, 'a'), (2, 'a')`);
    // An operator's concurrent build that failed on duplicates: an invalid index no migration builds.
    await expect(
      query(url, 'CREATE UNIQUE INDEX CONCURRENTLY widgets_code_key ON leasehold.widgets (code)'),
    ).rejects.toMatchObject({
      code: '23505',
    });
    const indexes = `SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      WHERE i.indrelid = 'leasehold.widgets'::regclass AND c.relname <> 'widgets_pkey' ORDER BY 1`;
    expect(await query(url, indexes)).toEqual([{ relname: 'widgets_code_key', indisvalid: false }]);

    await expect(migrateDatabase(url, { migrationsFolder: folder })).rejects.toThrow(
      /^Leasehold will not migrate: index leasehold."widgets_code_key" on widgets is invalid .* `REINDEX INDEX CONCURRENTLY leasehold."widgets_code_key"` failed: .*Fix what stops the build \(for a unique index: the duplicate rows\)/,
    );
    // The failed rebuild's own leftover (widgets_code_key_ccnew) is gone.
    expect(await query(url, indexes)).toEqual([{ relname: 'widgets_code_key', indisvalid: false }]);

    await query(url, 'DELETE FROM leasehold.widgets WHERE id = 2');
    const { repairs } = await migrateDatabase(url, { migrationsFolder: folder });
    expect(repairs).toEqual([
      'index leasehold."widgets_code_key" on widgets is invalid (a concurrent build failed); rebuilding it',
    ]);
    expect(await query(url, indexes)).toEqual([{ relname: 'widgets_code_key', indisvalid: true }]);
  });
});
