import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { ScratchDatabase } from '../test/db.ts';
import { migrateDatabase } from './migrate/index.ts';
import { SCHEMA_VERSION, schemaCompatibility, SUPPORTED_SCHEMA } from './schema-version.ts';
import { query, scratchDatabase, writeMigrations, type MigrationFile } from '../test/migrations.ts';

const scratches: ScratchDatabase[] = [];
afterEach(async () => {
  await Promise.all(scratches.splice(0).map((s) => s.drop()));
});

// Expand (v2, old code still works), then contract (v3, code before v2 no longer does).
const LIST: MigrationFile[] = [
  { name: '0000_base', sql: 'CREATE TABLE leasehold.items (id integer PRIMARY KEY, label text);' },
  {
    name: '0001_expand',
    sql: '-- leasehold:schema-version 2\n-- leasehold:compatible-from 1\nALTER TABLE leasehold.items ADD COLUMN title text;',
  },
  {
    name: '0002_contract',
    sql: '-- leasehold:schema-version 3\n-- leasehold:compatible-from 2\nALTER TABLE leasehold.items DROP COLUMN label;',
  },
];

async function databaseWith(applied: number): Promise<string> {
  const scratch = await scratchDatabase('leasehold_ver');
  scratches.push(scratch);
  if (applied > 0) await migrateDatabase(scratch.url, { migrationsFolder: writeMigrations(LIST.slice(0, applied)) });
  return scratch.url;
}

async function compatibility(url: string, codeVersion?: number, minSchema?: number) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await schemaCompatibility(client, codeVersion, minSchema);
  } finally {
    await client.end();
  }
}

describe('the schema version', () => {
  it('is declared once: this code is at SCHEMA_VERSION and supports schemas up to it', () => {
    expect(SUPPORTED_SCHEMA.max).toBe(SCHEMA_VERSION);
    expect(SUPPORTED_SCHEMA.min).toBeLessThanOrEqual(SCHEMA_VERSION);
  });

  it("records each migration's schema version and compatibility in the journal", async () => {
    const url = await databaseWith(3);
    expect(
      await query(url, 'SELECT name, schema_version, compatible_from FROM leasehold.migrations ORDER BY position'),
    ).toEqual([
      { name: '0000_base', schema_version: 1, compatible_from: 1 },
      { name: '0001_expand', schema_version: 2, compatible_from: 1 },
      { name: '0002_contract', schema_version: 3, compatible_from: 2 },
    ]);
  });

  it.each([
    {
      schema: 'none (never migrated)',
      applied: 0,
      code: 1,
      min: 1,
      verdict:
        /^Leasehold: this database has no Leasehold schema: run the migrations first \(npx leasehold migrate, or start the worker with --migrate/,
    },
    { schema: 'v1', applied: 1, code: 1, min: 1, verdict: { ok: true, schemaVersion: 1, compatibleFrom: 1 } },
    {
      schema: 'v2, expanded (compatible from 1)',
      applied: 2,
      code: 1,
      min: 1,
      verdict: { ok: true, schemaVersion: 2, compatibleFrom: 1 },
    },
    {
      schema: 'v3, contracted (compatible from 2)',
      applied: 3,
      code: 1,
      min: 1,
      verdict:
        /^Leasehold: this code is too old for the database: the schema is at version 3 and needs code of schema version 2 or later, and this code is at 1\./,
    },
    {
      schema: 'v3, contracted (compatible from 2)',
      applied: 3,
      code: 2,
      min: 2,
      verdict: { ok: true, schemaVersion: 3, compatibleFrom: 2 },
    },
    {
      schema: 'v1, behind the code',
      applied: 1,
      code: 2,
      min: 2,
      verdict:
        /^Leasehold: the database is too old for this code: the schema is at version 1, and this code needs version 2 or later\. Run the migrations/,
    },
  ])(
    'with the schema at $schema, code at version $code (needing $min) gets its verdict',
    async ({ applied, code, min, verdict }) => {
      const result = await compatibility(await databaseWith(applied), code, min);
      expect(result).toEqual(
        verdict instanceof RegExp ? { ok: false, reason: expect.stringMatching(verdict) } : verdict,
      );
    },
  );
});
