/**
 * Isolated handlers written in TypeScript, from the installed package (`npm run test:package`,
 * or alone: `tsx test/package/isolated.ts --node 24`), on each Node version users run.
 *
 * Per version, in a scratch project outside this checkout, a handler module `impl.ts` with an
 * enum and a parameter property (syntax Node's type stripping refuses), isolated in a thread and
 * in a child process:
 *  1. installed without tsx, a worker whose main is JavaScript refuses the handler when it is
 *     created, with the sentence for this Node (no TypeScript on Node 20; type stripping refuses
 *     the enum on 22 and 24), before anything connects;
 *  2. with tsx installed, `node --import tsx worker.ts` runs both jobs to `done`: the module ran
 *     in a thread (not the main thread) and in another process.
 */
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { eachNodeVersion, log, run, scratchDatabase, scratchFolder } from './common.ts';

const IMPL = `import { writeFileSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';
import { defineHandler } from 'leasehold/worker';
import { z } from 'zod';

enum Shade {
  Dark = 'dark',
}

class Tally {
  constructor(readonly shade: Shade) {}
}

const handle = async ({ job }: { job: { kind: string } }) => {
  const seen = { shade: new Tally(Shade.Dark).shade, isMainThread, pid: process.pid };
  writeFileSync(new URL('./' + job.kind + '.json', import.meta.url), JSON.stringify(seen));
};

export const handlers = [
  defineHandler({ kind: 'iso.ts-thread', versions: [1], schema: z.unknown(), timeoutMs: 60_000, isolated: { mode: 'thread', module: import.meta.url }, handle }),
  defineHandler({ kind: 'iso.ts-process', versions: [1], schema: z.unknown(), timeoutMs: 60_000, isolated: { mode: 'process', module: import.meta.url }, handle }),
];
`;

// A JavaScript main that names impl.ts as the module of its isolated handler, without loading it.
const REFUSE = `import { createWorker, defineHandler } from 'leasehold/worker';
import { z } from 'zod';
const handler = defineHandler({
  kind: 'iso.ts-thread', versions: [1], schema: z.unknown(), timeoutMs: 60_000,
  isolated: { mode: 'thread', module: new URL('./impl.ts', import.meta.url).href },
  handle: async () => {},
});
try {
  createWorker({ connectionString: process.env.DATABASE_URL, jobs: [handler] });
  console.log('NOT REFUSED');
} catch (error) {
  console.log(error.name + ': ' + error.message);
}
`;

const WORKER = `import { existsSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { enqueue } from 'leasehold';
import { createWorker } from 'leasehold/worker';
import { handlers } from './impl.ts';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 5 });
const worker = createWorker({ pool, jobs: handlers, queues: ['iso'], pollMs: 100, maintenance: false, concurrency: 2 });
const ids = [];
for (const kind of ['iso.ts-thread', 'iso.ts-process']) ids.push((await enqueue(pool, { queue: 'iso', kind, payload: {} })).id);
await worker.start();
const deadline = Date.now() + 90_000;
let states = [];
for (;;) {
  states = (await pool.query('SELECT kind, state FROM leasehold.jobs WHERE id = ANY($1) ORDER BY kind', [ids])).rows;
  if (states.every((r) => r.state === 'done' || r.state === 'dead') || Date.now() > deadline) break;
  await new Promise((r) => setTimeout(r, 200));
}
await worker.stop(1_000);
await pool.end();
const seen = {};
for (const kind of ['iso.ts-thread', 'iso.ts-process']) {
  const file = new URL('./' + kind + '.json', import.meta.url);
  seen[kind] = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : null;
}
console.log(JSON.stringify({ states, seen, pid: process.pid }));
`;

const WANTED_REFUSAL: Record<string, RegExp> = {
  '20': /WorkerOptionsError: .*handler iso\.ts-thread: isolated: .*impl\.ts is TypeScript, and Node v20\.\d+\.\d+ runs no TypeScript of its own: install tsx beside it/s,
  '22': /WorkerOptionsError: .*handler iso\.ts-thread: isolated: .*impl\.ts uses TypeScript that Node v22\.\d+\.\d+ only strips, and stripping refuses it \(TypeScript enum is not supported in strip-only mode\): install tsx beside it/s,
  '24': /WorkerOptionsError: .*handler iso\.ts-thread: isolated: .*impl\.ts uses TypeScript that Node v24\.\d+\.\d+ only strips, and stripping refuses it \(TypeScript enum is not supported in strip-only mode\): install tsx beside it/s,
};

await eachNodeVersion(async (major, { node, packed, serverUrl, keep }) => {
  const t0 = Date.now();
  const project = scratchFolder(`isolated-node${major}`);
  const database = await scratchDatabase(serverUrl, `isolated_node${major}`);
  const env = { DATABASE_URL: database.url };
  try {
    writeFileSync(
      path.join(project, 'package.json'),
      `${JSON.stringify({ name: 'isolated-app', private: true, type: 'module' }, null, 2)}\n`,
    );
    writeFileSync(path.join(project, 'impl.ts'), IMPL);
    writeFileSync(path.join(project, 'refuse.mjs'), REFUSE);
    writeFileSync(path.join(project, 'worker.ts'), WORKER);
    run('npm', ['install', '--no-audit', '--no-fund', packed.file, 'pg@^8', 'zod@^3.25'], { cwd: project, node });
    if (existsSync(path.join(project, 'node_modules', 'tsx')))
      throw new Error('tsx arrived with the package: it is an optional peer');

    // 1. No tsx: refused when the worker is created, with what to do.
    const refused = run('node', ['refuse.mjs'], { cwd: project, node, env }).stdout.trim();
    const wanted = WANTED_REFUSAL[major];
    if (!wanted || !wanted.test(refused)) throw new Error(`node ${major}: without tsx, refuse.mjs printed: ${refused}`);
    log(`node ${major}: without tsx, refused at start: ${refused}`);

    // 2. With tsx: both isolated jobs done, the module loaded in a thread and in a process.
    run('npm', ['install', '--no-audit', '--no-fund', 'tsx@^4.19'], { cwd: project, node });
    run('npx', ['leasehold', 'migrate'], { cwd: project, node, env });
    const out = run('node', ['--import', 'tsx', 'worker.ts'], { cwd: project, node, env, timeoutMs: 180_000 });
    const result = JSON.parse(out.stdout.trim().split('\n').at(-1) ?? '{}') as {
      states: { kind: string; state: string }[];
      seen: Record<string, { shade: string; isMainThread: boolean; pid: number } | null>;
      pid: number;
    };
    const thread = result.seen['iso.ts-thread'];
    const child = result.seen['iso.ts-process'];
    const done = result.states.length === 2 && result.states.every((r) => r.state === 'done');
    if (
      !done ||
      thread?.shade !== 'dark' ||
      thread.isMainThread !== false ||
      thread.pid !== result.pid ||
      child?.shade !== 'dark' ||
      child.pid === result.pid
    )
      throw new Error(
        `node ${major}: the isolated TypeScript handlers did not both run: ${JSON.stringify(result)}\n${out.stderr.slice(-3000)}`,
      );
    log(
      `node ${major}: with tsx, an enum and a parameter property ran in a thread and a process (${JSON.stringify(result.states)})`,
    );
    log(`node ${major}: passed in ${Math.round((Date.now() - t0) / 1000)} s`);
  } finally {
    await database.drop();
    if (!keep) rmSync(project, { recursive: true, force: true });
  }
});
