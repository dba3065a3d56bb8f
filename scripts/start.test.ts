/**
 * `npm start` on a database DATABASE_URL names: it migrates and runs the demo there, but writes
 * the demo users (a known admin password) only when asked with --demo-users. `--only-db` stops
 * after the database is prepared, so no dashboard or worker starts here.
 */
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { emptyDatabase, type ScratchDatabase } from '../test/db.ts';
import { start, stopAll } from '../test/processes.ts';

afterAll(stopAll);

async function demoUsersIn(db: ScratchDatabase): Promise<string[]> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    const { rows } = await client.query<{ email: string }>('SELECT email FROM leasehold.users ORDER BY email');
    return rows.map((r) => r.email);
  } finally {
    await client.end();
  }
}

async function prepare(db: ScratchDatabase, args: string[]): Promise<string[]> {
  const run = start('scripts/start.ts', ['--only-db', ...args], { DATABASE_URL: db.url, LEASEHOLD_DEMO_USERS: '' });
  await run.line(/database ready/, 120_000);
  run.kill('SIGTERM');
  await run.exited;
  return run.output;
}

describe('npm start on a DATABASE_URL', () => {
  it('writes no demo users unless asked, and says how to ask', async () => {
    const db = await emptyDatabase('leasehold_start_users');
    try {
      const output = await prepare(db, []);
      expect(output.join('\n')).toMatch(/no demo users written: DATABASE_URL names a database of your own/);
      expect(await demoUsersIn(db)).toEqual([]);

      await prepare(db, ['--demo-users']);
      expect(await demoUsersIn(db)).toEqual(['admin@example.com', 'operator@example.com', 'viewer@example.com']);
    } finally {
      await db.drop();
    }
  }, 240_000);
});
