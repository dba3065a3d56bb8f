/**
 * Builds the dashboard when the build is missing or stale, creates a fresh database on the
 * test server (embedded, or DATABASE_URL), seeds the demo users, and starts the dashboard and
 * one real worker process (queue `e2e-work`, test handlers). Returns the teardown.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createDb } from '../db/client.ts';
import { selectDatabase } from '../cli/database-select.ts';
import { createScratchDatabase } from '../test/scratch-database.ts';
import { migrateDatabase } from '../db/migrate/index.ts';
import { DEMO_PASSWORD, DEMO_USERS, upsertUser } from '../db/users.ts';
import { DEMO_MIGRATE_OPTIONS } from '../demo/migrations.ts';
import { e2ePorts } from './ports.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

async function waitFor(url: string, child: ChildProcess, output: string[], timeoutMs: number) {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (child.exitCode !== null) throw new Error(`process exited early:\n${output.slice(-20).join('')}`);
    try {
      const response = await fetch(url);
      if (response.status < 500) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms:\n${output.slice(-20).join('')}`);
}

export default async function globalSetup() {
  const port = e2ePorts().web;
  const server = await selectDatabase({
    databaseUrl: process.env.DATABASE_URL,
    dataDir: path.join(ROOT, '.leasehold', 'test-postgres'),
    database: 'postgres',
    unsafeFast: true,
  });
  const scratch = await createScratchDatabase(server.url, 'leasehold_e2e');
  const { url } = scratch;
  await migrateDatabase(url);
  await migrateDatabase(url, DEMO_MIGRATE_OPTIONS);
  const { db, close } = createDb(url, { max: 2 });
  for (const user of DEMO_USERS) await upsertUser(db, { ...user, password: DEMO_PASSWORD });
  await close();
  process.env.E2E_DATABASE_URL = url;

  const env = { ...process.env, DATABASE_URL: url, LEASEHOLD_DEMO: 'true', NEXTAUTH_URL: `http://127.0.0.1:${port}` };
  const next = path.join(ROOT, 'node_modules', 'next', 'dist', 'bin', 'next');
  const build = spawnSync(
    process.execPath,
    [path.join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs'), path.join(ROOT, 'e2e', 'build-if-stale.ts')],
    {
      cwd: ROOT,
      env,
      stdio: 'inherit',
    },
  );
  if (build.status !== 0) throw new Error('next build failed');

  const children: ChildProcess[] = [];
  const output: string[] = [];
  const start = (args: string[]) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (c: Buffer) => output.push(c.toString()));
    child.stderr!.on('data', (c: Buffer) => output.push(c.toString()));
    children.push(child);
    return child;
  };
  const web = start([next, 'start', '--port', String(port), '--hostname', '127.0.0.1']);
  // `next start` serves in its own process: e2e/request-limits.spec.ts reads its memory.
  process.env.E2E_WEB_PID = String(web.pid);
  start([
    '--import',
    'tsx',
    path.join(ROOT, 'workers', 'main.ts'),
    '--queues',
    'e2e-work',
    '--handlers',
    'test/handlers.ts',
    // The demo's receipt.send too: the kinds page's spec reads what its handler registered.
    '--handlers',
    'demo/handlers.ts',
    '--lease-seconds',
    '4',
    '--poll-ms',
    '300',
    '--concurrency',
    '4',
    '--reap-interval-ms',
    '500',
    // History every second (a minute by default): e2e/history.spec.ts waits for its rows.
    '--history-interval-ms',
    '1000',
    '--log-level',
    'warn',
  ]);
  await waitFor(`http://127.0.0.1:${port}/login`, web, output, 60_000);

  return async () => {
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r)))));
    await scratch.drop().catch(() => {});
    await server.stop();
  };
}
