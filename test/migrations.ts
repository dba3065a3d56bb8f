/**
 * Helpers for the migration runner's tests: migration folders written on the fly (drizzle-kit's
 * layout: meta/_journal.json and one .sql file per entry), scratch databases, one-off queries,
 * and the tables db/schema.ts declares (so tests follow the schema wherever its tables live).
 */
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { is } from 'drizzle-orm';
import { getTableConfig, PgTable } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { inject } from 'vitest';
import { createScratchDatabase, type ScratchDatabase } from './scratch-database.ts';
import * as schema from '../db/schema.ts';

export interface MigrationFile {
  name: string;
  sql: string;
}

/** A new folder holding `files` as drizzle-kit would (journal in the given order). */
export function writeMigrations(
  files: readonly MigrationFile[],
  folder = mkdtempSync(path.join(os.tmpdir(), 'lh-mig-')),
) {
  mkdirSync(path.join(folder, 'meta'), { recursive: true });
  const entries = files.map((f, idx) => ({
    idx,
    version: '7',
    when: 1_795_962_339_157 + idx,
    tag: f.name,
    breakpoints: true,
  }));
  writeFileSync(
    path.join(folder, 'meta', '_journal.json'),
    JSON.stringify({ version: '7', dialect: 'postgresql', entries }, null, 2),
  );
  for (const f of files) writeFileSync(path.join(folder, `${f.name}.sql`), f.sql);
  return folder;
}

/** An empty database on the run's server (`migrated`: a clone of the migrated template). */
export function scratchDatabase(prefix: string, options: { migrated?: boolean } = {}): Promise<ScratchDatabase> {
  const template = options.migrated ? inject('templateDatabase') : undefined;
  return createScratchDatabase(inject('serverUrl'), prefix, template);
}

/** Runs `work` on a connection of its own to `url`, then closes it. */
export async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  client.on('notice', () => {});
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/** The rows of one statement on a connection of its own. */
export function query<Row extends pg.QueryResultRow = Record<string, unknown>>(
  url: string,
  text: string,
  values: unknown[] = [],
): Promise<Row[]> {
  return withClient(url, async (client) => (await client.query<Row>(text, values)).rows);
}

/** The names of the journal's rows in `table` (schema leasehold), in order. */
export async function journal(url: string, table = 'migrations'): Promise<string[]> {
  const rows = await query<{ name: string }>(url, `SELECT name FROM leasehold.${table} ORDER BY position`).catch(
    (error: { code?: string }) => {
      if (error.code === '42P01') return [];
      throw error;
    },
  );
  return rows.map((r) => r.name);
}

export interface DeclaredTable {
  schema: string;
  name: string;
  /** `"schema"."name"`, for SQL text. */
  qualified: string;
}

/** Every table db/schema.ts declares, with the schema it lives in. */
export function declaredTables(): DeclaredTable[] {
  return Object.values(schema as Record<string, unknown>)
    .filter((value): value is PgTable => is(value, PgTable))
    .map((table) => {
      const config = getTableConfig(table);
      const schemaName = config.schema ?? 'public';
      return { schema: schemaName, name: config.name, qualified: `"${schemaName}"."${config.name}"` };
    })
    .sort((a, b) => a.qualified.localeCompare(b.qualified));
}

/** The declared table called `name` (e.g. `jobs`), wherever db/schema.ts puts it. */
export function declaredTable(name: string): DeclaredTable {
  const table = declaredTables().find((t) => t.name === name);
  if (!table) throw new Error(`db/schema.ts declares no table named ${name}`);
  return table;
}
