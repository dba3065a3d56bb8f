/**
 * `npm start` on a database DATABASE_URL names: it migrates and runs the demo there, but writes
 * the demo users (a known admin password) only when asked with --demo-users. `--only-db` stops
 * after the database is prepared, so no dashboard or worker starts here.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, PROJECT_DIR } from '../cli/database-select.ts';
import { emptyDatabase, type ScratchDatabase } from '../test/db.ts';
import { start, stopAll } from '../test/processes.ts';
import { until } from '../test/wait.ts';

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

const TSX_CLI = path.join(PROJECT_DIR, 'node_modules', 'tsx', 'dist', 'cli.mjs');
const START = path.join(PROJECT_DIR, 'scripts', 'start.ts');
/** This environment without the test run's database and Leasehold settings: npm start's own choice. */
const cleanEnv = () =>
  Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !k.startsWith('LEASEHOLD_') && k !== 'DATABASE_URL' && !k.startsWith('PG'),
    ),
  );

describe('npm start’s checks and stop', () => {
  it('refuses a dashboard setting before anything starts: a short LEASEHOLD_METRICS_TOKEN exits 2 with the sentence', () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'leasehold-start-'));
    try {
      const run = spawnSync(process.execPath, [TSX_CLI, START], {
        cwd: PROJECT_DIR,
        env: {
          ...cleanEnv(),
          LEASEHOLD_DATA_DIR: path.join(dataDir, 'pg'),
          LEASEHOLD_METRICS_TOKEN: 'short-token',
        } as unknown as NodeJS.ProcessEnv,
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(run.status).toBe(2);
      expect(run.stderr).toContain(
        '[leasehold] refusing to start: LEASEHOLD_METRICS_TOKEN must be at least 32 random characters',
      );
      // Nothing started: no database was made.
      expect(run.stdout).not.toMatch(/database/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('stops the workers before the embedded database on a terminal’s Ctrl-C (the whole process group)', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'leasehold-start-'));
    chmodSync(dataDir, 0o755); // the postgres user (under root) must reach the data folder
    const providerPort = String(await freePort());
    // A process group of its own, as a terminal's foreground job: its Ctrl-C reaches every process in it.
    const child = spawn(
      process.execPath,
      [TSX_CLI, START, '--no-web', '--workers', '1', '--rate', '1', '--provider-port', providerPort],
      {
        cwd: PROJECT_DIR,
        env: { ...cleanEnv(), LEASEHOLD_DATA_DIR: path.join(dataDir, 'pg') } as unknown as NodeJS.ProcessEnv,
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      },
    );
    let output = '';
    child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const started = Date.now();
      while (!/receipt provider stats/.test(output)) {
        if (child.exitCode !== null || Date.now() - started > 150_000)
          throw new Error(`npm start did not come up:\n${output.slice(-3000)}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      const metrics = /worker-1 metrics: (http:\/\/127\.0\.0\.1:(\d+)\/metrics)/.exec(output);
      expect(metrics, output).not.toBeNull();
      expect(Number(metrics![2])).not.toBe(9464); // a free port, not the old fixed one
      // The worker is up (its metrics answer) and has served a while before Ctrl-C.
      const scrape = async () => (await fetch(metrics![1]!).catch(() => null))?.ok === true;
      while (!(await scrape())) {
        if (Date.now() - started > 150_000) throw new Error(`worker metrics did not answer:\n${output.slice(-3000)}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      await new Promise((r) => setTimeout(r, 2000));
      const databaseUrl = /\[leasehold\] database: (\S+)/.exec(output)?.[1];
      expect(databaseUrl, output).toBeDefined();
      // A session on the database from before Ctrl-C: the server's shutdown ends it. It must end
      // only after npm start said the workers had stopped, not at the moment of the Ctrl-C.
      const session = new pg.Client({ connectionString: databaseUrl });
      await session.connect();
      let endedAt: number | undefined;
      session.on('error', () => (endedAt ??= performance.now()));
      session.on('end', () => (endedAt ??= performance.now()));
      let saidAt: number | undefined;
      child.stdout!.on('data', (c: Buffer) => {
        if (c.toString().includes('workers stopped; stopping the database')) saidAt ??= performance.now();
      });
      const sentAt = performance.now();
      process.kill(-child.pid!, 'SIGINT');
      expect(await exited, output.slice(-3000)).toBe(0);
      expect(output).toContain('workers stopped; stopping the database');
      await until('the session ended by the shutdown', async () => endedAt !== undefined || undefined, 10_000);
      // (20 ms of slack: the two pipes are read in one turn of the loop.)
      expect(endedAt! - sentAt, 'the database stopped at the Ctrl-C').toBeGreaterThanOrEqual(saidAt! - sentAt - 20);
      await session.end().catch(() => {});
      expect(output).not.toMatch(/LISTEN connection lost|database unavailable|terminating connection|exited \(/);
    } finally {
      if (child.exitCode === null) process.kill(-child.pid!, 'SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 240_000);
});
