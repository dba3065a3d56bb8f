/** `leasehold migrate` on an empty database: --check, --print-sql (writing nothing), then applying. */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emptyDatabase, type ScratchDatabase } from '../test/db.ts';
import { cli } from '../test/cli.ts';

let empty: ScratchDatabase;
beforeAll(async () => {
  empty = await emptyDatabase('leasehold_cli_migrate');
});
afterAll(async () => {
  await empty?.drop();
});

async function leaseholdTables(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>(
      "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'leasehold' ORDER BY 1",
    );
    return rows.map((r) => r.name);
  } finally {
    await client.end();
  }
}

describe('leasehold migrate', () => {
  it('lists what is pending, prints it as SQL without writing, applies it, and then has nothing to do', async () => {
    const env = { DATABASE_URL: empty.url };
    const before = await cli(['migrate', '--check'], { env });
    expect(before.code).toBe(1);
    expect(before.stdout).toMatch(/^\d+ pending \(of \d+\): 0000_leasehold_v1, /);

    const printed = await cli(['migrate', '--print-sql'], { env });
    expect(printed.code).toBe(0);
    expect(printed.stdout).toMatch(/^-- Leasehold: \d+ pending migrations of /);
    expect(printed.stdout).toMatch(/^-- 0000_leasehold_v1$/m);
    expect(printed.stdout).toMatch(/^BEGIN;$/m);
    expect(printed.stdout).toMatch(/INSERT INTO leasehold\.migrations/);
    expect(await leaseholdTables(empty.url)).toEqual([]);

    const applied = await cli(['migrate'], { env });
    expect(applied.code).toBe(0);
    expect(applied.stdout).toMatch(/^migrations applied: \d+ \(0000_leasehold_v1, /);
    expect(await leaseholdTables(empty.url)).toEqual(expect.arrayContaining(['jobs', 'migrations', 'users']));

    const after = await cli(['migrate', '--check'], { env });
    expect(after.code).toBe(0);
    expect(after.stdout).toMatch(/^up to date: \d+ migrations applied, none pending/);
    const again = await cli(['migrate'], { env });
    expect(again.code).toBe(0);
    expect(again.stdout.trim()).toBe('migrations: nothing to apply');
    const reprinted = await cli(['migrate', '--print-sql'], { env });
    expect(reprinted.stdout).toMatch(/^-- Leasehold: nothing to apply/);
  });

  it('refuses a bad --lock-timeout-ms, and --print-sql with --check, naming them', async () => {
    const env = { DATABASE_URL: empty.url };
    const timeout = await cli(['migrate', '--lock-timeout-ms', 'soon'], { env });
    expect(timeout.code).toBe(2);
    expect(timeout.stderr).toMatch(/--lock-timeout-ms must be a whole number from 0 to 3600000, not "soon"/);
    const both = await cli(['migrate', '--print-sql', '--check'], { env });
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/give --print-sql or --check, not both/);
  });

  it('exits 2 naming the session that holds the migration lock past --lock-wait-ms', async () => {
    const env = { DATABASE_URL: empty.url };
    const holder = new pg.Client({ connectionString: empty.url, application_name: 'red-lock-holder' });
    await holder.connect();
    try {
      const { rows } = await holder.query<{ pid: number }>(
        'SELECT pg_backend_pid() AS pid, pg_advisory_lock(19528, 1) IS NOT NULL AS held',
      );
      const busy = await cli(['migrate', '--lock-wait-ms', '300'], { env });
      expect(busy.code).toBe(2);
      expect(busy.stderr).toMatch(
        new RegExp(
          `^leasehold migrate: Leasehold will not migrate: another session has held the migration lock \\(pg_advisory_lock\\(19528, 1\\)\\) for the 300 ms this run waited: pid ${rows[0]!.pid}, user \\S+, application "red-lock-holder"\\.`,
        ),
      );
    } finally {
      await holder.end();
    }
    expect((await cli(['migrate', '--lock-wait-ms', '300'], { env })).code).toBe(0);
  });
});
