import { execFile } from 'node:child_process';
import { renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { checkMigrationsFolder, MIGRATIONS_FOLDER, readMigrations } from './index.ts';
import { SCHEMA_VERSION } from '../schema-version.ts';
import { writeMigrations, type MigrationFile } from '../../test/migrations.ts';

const plain = (name: string, sql = 'SELECT 1;'): MigrationFile => ({ name, sql });

describe('the list of migrations', () => {
  it("reads Leasehold's own folder: the journal's order, every file, version 1 without headers", () => {
    const list = readMigrations(MIGRATIONS_FOLDER);
    expect(list.length).toBeGreaterThan(0);
    expect(list.map((m) => m.position)).toEqual(list.map((_, i) => i));
    expect(checkMigrationsFolder(MIGRATIONS_FOLDER)).toEqual([]);
    // SCHEMA_VERSION is what the migrations reach (npm run db:check says so in CI too).
    expect(list.at(-1)?.schemaVersion).toBe(SCHEMA_VERSION);
  });

  it('splits a file on statement breakpoints and reads its header', () => {
    const folder = writeMigrations([
      plain('0000_a', 'CREATE TABLE x (id int);\n--> statement-breakpoint\nCREATE TABLE y (id int);'),
      {
        name: '0001_b',
        sql: '-- leasehold:no-transaction\n-- leasehold:schema-version 2\n-- leasehold:compatible-from 1\n-- why\nCREATE INDEX CONCURRENTLY x_idx ON x (id);',
      },
      plain('0002_c'),
      { name: '0003_d', sql: '-- leasehold:schema-version 3\nALTER TABLE x DROP COLUMN id;' },
    ]);
    const list = readMigrations(folder);
    expect(list.map((m) => [m.name, m.statements.length, m.transaction, m.schemaVersion, m.compatibleFrom])).toEqual([
      ['0000_a', 2, true, 1, 1],
      ['0001_b', 1, false, 2, 1],
      // No header: as the one before it.
      ['0002_c', 1, true, 2, 1],
      // A version without compatible-from: compatible from that version only.
      ['0003_d', 1, true, 3, 3],
    ]);
  });

  it.each([
    {
      problem: 'a listed migration without its file',
      files: [plain('0000_a'), plain('0001_b')],
      change: (folder: string) => renameSync(path.join(folder, '0001_b.sql'), path.join(folder, 'b.txt')),
      says: 'meta/_journal.json lists "0001_b" but 0001_b.sql is missing',
    },
    {
      problem: 'a file the journal does not list',
      files: [plain('0000_a')],
      change: (folder: string) => writeFileSync(path.join(folder, '0001_by_hand.sql'), 'SELECT 1;'),
      says: '0001_by_hand.sql is not listed in meta/_journal.json',
    },
    {
      problem: 'names that do not sort in journal order',
      files: [plain('0001_b'), plain('0000_a')],
      change: () => {},
      says: 'the names do not sort in journal order: "0001_b" is number 1 in meta/_journal.json but "0000_a" sorts there',
    },
    {
      problem: 'a misspelt header',
      files: [plain('0000_a', '-- leasehold:no-transactions\nSELECT 1;')],
      change: () => {},
      says: '0000_a.sql: "-- leasehold:no-transactions" is not a Leasehold header (no-transaction, schema-version N, compatible-from N)',
    },
    {
      problem: 'a header after the first statement',
      files: [plain('0000_a', 'SELECT 1;\n-- leasehold:no-transaction\n')],
      change: () => {},
      says: '0000_a.sql has "-- leasehold:no-transaction" on line 2: put it in the header, before the first statement',
    },
    {
      problem: 'CONCURRENTLY inside a transaction',
      files: [plain('0000_a', 'CREATE INDEX CONCURRENTLY a_idx ON a (id);')],
      change: () => {},
      says: '0000_a.sql uses CONCURRENTLY, which cannot run in a transaction: make "-- leasehold:no-transaction" its first line',
    },
    {
      problem: 'a schema version going down',
      files: [
        plain('0000_a', '-- leasehold:schema-version 2\nSELECT 1;'),
        plain('0001_b', '-- leasehold:schema-version 1\nSELECT 1;'),
      ],
      change: () => {},
      says: '0001_b.sql declares schema version 1, below the 2 before it',
    },
  ])('finds $problem', ({ files, change, says }) => {
    const folder = writeMigrations(files);
    change(folder);
    expect(checkMigrationsFolder(folder)).toEqual([says]);
  });

  it('makes `npm run db:check` fail on a folder with a problem, naming it', async () => {
    const good = writeMigrations([plain('0000_a')]);
    const bad = writeMigrations([plain('0001_b'), plain('0000_a')]);
    const run = promisify(execFile);
    const outcome = await run('npx', ['tsx', 'scripts/check-migrations.ts', good, bad]).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => ({ code: error.code, stderr: error.stderr }),
    );
    expect(outcome.code).toBe(1);
    expect(outcome.stderr).toContain(`${path.relative(process.cwd(), good)}: ok`);
    expect(outcome.stderr).toContain(
      `${path.relative(process.cwd(), bad)}: the names do not sort in journal order: "0001_b" is number 1`,
    );
  });
});
