/**
 * Starts (or finds) the test PostgreSQL once per run and migrates a template database that
 * every test file clones (test/db.ts): files are isolated and none pays for migrations.
 * DATABASE_URL selects a server of your own (its user needs CREATEDB); unset, an embedded
 * server runs under .leasehold/test-postgres with fsync off.
 */
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { selectDatabase } from '../cli/database-select.ts';
import { withDatabase } from '../cli/database-url.ts';
import { migrateDatabase } from '../db/migrate/index.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    serverUrl: string;
    templateDatabase: string;
  }
}

export default async function setup(project: TestProject) {
  const server = await selectDatabase({
    databaseUrl: process.env.DATABASE_URL,
    dataDir: path.resolve('.leasehold', 'test-postgres'),
    database: 'postgres',
    unsafeFast: true,
    log: (line) => console.error(`[test-db] ${line}`),
  });
  const template = `leasehold_tpl_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  const version = await admin.query<{ server_version: string }>('SHOW server_version');
  console.error(
    `[test-db] PostgreSQL ${version.rows[0]?.server_version} (${server.embedded ? 'embedded' : 'DATABASE_URL'})`,
  );
  await admin.query(`CREATE DATABASE ${template}`);
  await migrateDatabase(withDatabase(server.url, template));
  project.provide('serverUrl', server.url);
  project.provide('templateDatabase', template);

  return async () => {
    // Test files drop their own databases; this sweeps what a crashed file left behind.
    const leftovers = await admin.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE datname = $1 OR datname LIKE $2`,
      [template, `${template.replace('_tpl_', '_t_')}%`],
    );
    for (const { datname } of leftovers.rows) {
      await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`).catch(() => {});
    }
    await admin.end();
    await server.stop();
  };
}
