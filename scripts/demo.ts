/**
 * `npm run demo`: the seed's receipt demo in one command. One database (embedded or
 * DATABASE_URL), the receipt provider (with some faults), two worker processes, and orders
 * trickling in. Ctrl-C stops everything gracefully (workers release what they hold).
 *
 *   npm run demo -- --rate 5 --error-rate 0.1 --timeout-rate 0.05
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { migrateDatabase } from '../db/migrate';
import { databaseFromEnv, PROJECT_DIR } from './env';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '5' },
    workers: { type: 'string', default: '2' },
    'error-rate': { type: 'string', default: '0.1' },
    'timeout-rate': { type: 'string', default: '0.05' },
    'provider-port': { type: 'string', default: '4010' },
  },
});

const database = await databaseFromEnv();
await migrateDatabase(database.url);
const env = {
  ...process.env,
  DATABASE_URL: database.url,
  RECEIPT_PROVIDER_URL: `http://127.0.0.1:${values['provider-port']}`,
  RECEIPT_CALL_TIMEOUT_MS: '1000',
};
const children: ChildProcess[] = [];
function run(name: string, script: string, args: string[]) {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(PROJECT_DIR, script), ...args], {
    cwd: PROJECT_DIR,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    // Own process group: a terminal's Ctrl-C reaches only this script, which then stops each
    // child once (a second signal would make a worker exit without releasing its jobs).
    detached: true,
  });
  const prefix = (chunk: Buffer) =>
    chunk
      .toString('utf8')
      .split('\n')
      .filter(Boolean)
      .forEach((line) => console.log(`[${name}] ${line}`));
  child.stdout!.on('data', prefix);
  child.stderr!.on('data', prefix);
  children.push(child);
  return child;
}

run('provider', 'demo/provider.ts', [
  '--port', values['provider-port']!, '--error-rate', values['error-rate']!, '--timeout-rate', values['timeout-rate']!, '--stall-ms', '3000',
]);
for (let i = 1; i <= Number(values.workers); i++) {
  run(`worker-${i}`, 'workers/main.ts', ['--queues', 'receipts', '--concurrency', '10', '--metrics-port', String(9464 + i - 1)]);
}
run('orders', 'demo/orders.ts', ['--forever', '--rate', values.rate!]);
console.log(`[demo] database ${database.url}; provider stats at http://127.0.0.1:${values['provider-port']}/stats; worker metrics on :9464..`);

let stopping = false;
const stop = async () => {
  if (stopping) process.exit(1);
  stopping = true;
  console.log('[demo] stopping (Ctrl-C again to exit at once)');
  for (const child of children) child.kill('SIGTERM');
  await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r)))));
  await database.stop();
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
