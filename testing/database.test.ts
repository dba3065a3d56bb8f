/**
 * The per-test database helper: a fresh database with Leasehold's schema (migrated, or copied
 * from a migrated template with the application's own tables), and drop() that removes it.
 */
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { LeaseholdInputError } from '../db/queue/errors.ts';
import { enqueue } from '../db/queue/index.ts';
import { createTemplateDatabase, createTestDatabase } from './database.ts';

const serverUrl = inject('serverUrl');

async function databasesLike(prefix: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE datname LIKE $1 ORDER BY datname`,
      [`${prefix}\\_%`],
    );
    return rows.map((r) => r.datname);
  } finally {
    await client.end();
  }
}

const unique = (name: string) => `${name}_${process.pid}_${Math.floor(Math.random() * 1e6)}`;

describe('createTestDatabase', () => {
  it("makes a database with Leasehold's migrations applied, and drop() removes it", async () => {
    const prefix = unique('kit_fresh');
    const t = await createTestDatabase({ connectionString: serverUrl, prefix });
    expect(t.name.startsWith(`${prefix}_`)).toBe(true);
    expect(new URL(t.url).pathname).toBe(`/${t.name}`);
    expect(await databasesLike(prefix)).toEqual([t.name]);
    const { rows } = await t.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM leasehold.migrations');
    expect(rows[0]!.n).toBeGreaterThan(0);
    // The schema works: a job goes in through the library, through the handle's Drizzle db.
    const { created } = await enqueue(t.db, { kind: 'kit.check' });
    expect(created).toBe(true);
    await t.drop();
    await t.drop(); // twice is fine
    expect(await databasesLike(prefix)).toEqual([]);
  });

  it("copies a migrated template without migrating again, with the application's tables, each copy its own", async () => {
    const prefix = unique('kit_tpl');
    const template = await createTemplateDatabase({
      connectionString: serverUrl,
      prefix,
      prepare: async (url) => {
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        await client.query('CREATE TABLE public.orders (id int PRIMARY KEY)');
        await client.end();
      },
    });
    try {
      const a = await createTestDatabase({
        connectionString: serverUrl,
        template: template.name,
        prefix: `${prefix}_a`,
      });
      const b = await createTestDatabase({
        connectionString: serverUrl,
        template: template.name,
        prefix: `${prefix}_b`,
      });
      try {
        await a.pool.query('INSERT INTO public.orders VALUES (1)');
        await enqueue(a.pool, { kind: 'kit.check' });
        const countIn = async (db: pg.Pool, table: string) =>
          (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]!.n;
        expect([await countIn(a.pool, 'public.orders'), await countIn(a.pool, 'leasehold.jobs')]).toEqual([1, 1]);
        expect([await countIn(b.pool, 'public.orders'), await countIn(b.pool, 'leasehold.jobs')]).toEqual([0, 0]);
        // The copy has the template's journal: nothing was applied to it on its own.
        expect(await countIn(b.pool, 'leasehold.migrations')).toBeGreaterThan(0);
      } finally {
        await a.drop();
        await b.drop();
      }
    } finally {
      await template.drop();
    }
    expect(await databasesLike(prefix)).toEqual([]);
  });

  it('drops the new database when prepare fails, and passes the failure on', async () => {
    const prefix = unique('kit_prep');
    await expect(
      createTestDatabase({
        connectionString: serverUrl,
        prefix,
        prepare: async () => {
          throw new Error('the app migration broke');
        },
      }),
    ).rejects.toThrow('the app migration broke');
    expect(await databasesLike(prefix)).toEqual([]);
  });

  it('refuses a missing connection string, a bad prefix or template with a sentence naming each, creating nothing', async () => {
    const error = await createTestDatabase({ connectionString: '', prefix: 'Bad-Prefix', template: 'x; DROP' }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(LeaseholdInputError);
    const { problems } = error as LeaseholdInputError;
    expect(problems).toEqual([
      expect.stringMatching(/^connectionString: required.*DATABASE_URL/),
      expect.stringMatching(/^prefix: /),
      expect.stringMatching(/^template: /),
    ]);
    await expect(createTestDatabase({ connectionString: 'mysql://x@y/z' })).rejects.toThrow(
      /connectionString: expected a postgres:\/\/ URL/,
    );
    await expect(createTemplateDatabase({ connectionString: 'not a url' })).rejects.toThrow(
      /connectionString: not a URL/,
    );
  });
});
