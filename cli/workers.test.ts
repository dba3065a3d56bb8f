/**
 * `leasehold workers --handlers <file>` with a handler file of the user's project (a temp
 * folder outside this repository): the job ends done; a handlers file that does not load,
 * exports no handler or repeats a kind stops start-up with a sentence and writes nothing;
 * `/healthz` on the health port (from before the start) and `/metrics` on 127.0.0.1.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { run } from '../db/queue/executor.ts';
import { emptyDatabase, useTestDatabase } from '../test/db.ts';
import { defineJob, enqueue } from '../db/queue/index.ts';
import pg from 'pg';
import { z } from 'zod';
import { claimOne, expireLease, uniqueQueue } from '../test/factories.ts';
import { freePort, takeDatabaseDown } from '../test/outage.ts';
import { until } from '../test/wait.ts';
import { cli, ROOT, startCli, tempProject } from '../test/cli.ts';
import { cliSettings, helpDefault } from '../workers/settings.ts';
import { workersCommand } from './workers.ts';

const t = useTestDatabase({ max: 2 });
const env = () => ({ DATABASE_URL: t.url, LEASEHOLD_LOG_LEVEL: 'info' });
// The project's handler file imports zod as a project would; here it is this repo's copy.
const ZOD = import.meta.resolve('zod');

const handlerSource = (kind: string, exportAs: 'handlers' | 'default' = 'handlers') => `
import { z } from ${JSON.stringify(ZOD)};
const handler = {
  kind: ${JSON.stringify(kind)},
  versions: [1],
  schema: z.object({ n: z.number() }),
  timeoutMs: 5000,
  async handle({ payload }) { return { doubled: payload.n * 2 }; },
};
${exportAs === 'handlers' ? 'export const handlers = [handler];' : 'export default handler;'}
`;

/** Every row a worker's start would write: registrations, kinds, jobs, attempts. */
const snapshot = async () =>
  run(
    t.db,
    sql`SELECT (SELECT count(*) FROM leasehold.workers)::int AS workers,
               (SELECT count(*) FROM leasehold.kinds)::int AS kinds,
               (SELECT count(*) FROM leasehold.jobs)::int AS jobs,
               (SELECT count(*) FROM leasehold.job_attempts)::int AS attempts,
               (SELECT count(*) FROM leasehold.jobs WHERE state <> 'ready')::int AS moved`,
  );

describe('leasehold workers --help', () => {
  it('lists every setting of the table (workers/settings.ts) with its variable and default, and no other flag', () => {
    const help = workersCommand.help;
    for (const [key, s] of cliSettings()) {
      const flag = s.type === 'boolean' ? `--${s.flag} / --no-${s.flag}` : `--${s.flag} <value>`;
      const line = help.split('\n').find((l) => l.trimStart().startsWith(`${flag} `));
      expect(line, key).toBeDefined();
      const [, env, fallback] = line!.trim().split(/\s{2,}/);
      expect([env, fallback ?? ''], key).toEqual([s.env, helpDefault(s)]);
    }
    const flags = new Set(cliSettings().flatMap(([, s]) => [s.flag, `no-${s.flag}`]));
    const others = [...help.matchAll(/--([a-z][a-z-]*)/g)].map((m) => m[1]!).filter((f) => !flags.has(f));
    // The command's own: the embedded server, --help and --version.
    expect([...new Set(others)].sort()).toEqual(['embedded', 'help', 'version']);
  });
});

describe('leasehold workers', () => {
  it('runs the jobs of a handler file in the project folder to done, and stops on SIGTERM', async () => {
    const project = tempProject();
    writeFileSync(path.join(project, 'jobs.mjs'), handlerSource('cli.double', 'default'));
    const queue = uniqueQueue('cli');
    const enqueued = await cli(['enqueue', queue, 'cli.double', '{"n":21}', '--force'], { env: env() });
    expect(enqueued.code).toBe(0);
    const id = enqueued.stdout.trim();

    const worker = startCli(['workers', '--handlers', 'jobs.mjs', '--queues', queue, '--poll-ms', '200'], {
      cwd: project,
      env: env(),
    });
    const done = await until(
      'the job done',
      async () => {
        const [row] = await run<{ state: string; version: string | null }>(
          t.db,
          sql`SELECT j.state, (SELECT w.version FROM leasehold.workers w LIMIT 1) AS version
              FROM leasehold.jobs j WHERE j.id = ${id}::uuid`,
        );
        return row?.state === 'done' ? row : undefined;
      },
      30_000,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; worker output:\n${worker.output()}`);
    });
    expect(done.state).toBe('done');
    const [kind] = await run<{ kind: string }>(t.db, sql`SELECT kind FROM leasehold.kinds WHERE kind = 'cli.double'`);
    expect(kind).toEqual({ kind: 'cli.double' });
    worker.child.kill('SIGTERM');
    expect((await worker.exited).code).toBe(0);
  }, 60_000);

  it('refuses a handlers file that is missing, does not load, exports no handler or repeats a kind, writing nothing', async () => {
    const project = tempProject();
    writeFileSync(path.join(project, 'a.mjs'), handlerSource('cli.same'));
    writeFileSync(path.join(project, 'b.mjs'), handlerSource('cli.same'));
    writeFileSync(path.join(project, 'nothing.mjs'), 'export const helper = () => 1;\n');
    writeFileSync(path.join(project, 'broken.mjs'), 'throw new Error("the handlers file blew up");\n');
    writeFileSync(path.join(project, 'empty.mjs'), 'export const handlers = [];\n');
    writeFileSync(path.join(project, 'odd.mjs'), 'export const handlers = [{ kind: "cli.odd" }];\n');
    writeFileSync(
      path.join(project, 'twice.mjs'),
      `${handlerSource('cli.twice')}\nexport default { ...handlers[0] };\n`.replace(
        'export const handlers = [handler];',
        'export const handlers = [handler, { ...handler }];',
      ),
    );
    const queue = uniqueQueue('cli');
    await cli(['enqueue', queue, 'cli.same', '{"n":1}', '--force'], { env: env() });
    const before = await snapshot();

    const cases: [string, RegExp][] = [
      ['missing.mjs', /--handlers missing\.mjs: no such file \(.*missing\.mjs\)/],
      ['broken.mjs', /--handlers broken\.mjs: the file did not load: the handlers file blew up/],
      ['nothing.mjs', /--handlers nothing\.mjs: the file exports no handler; export `handlers`/],
      ['empty.mjs', /--handlers empty\.mjs: its handlers array is empty/],
      ['odd.mjs', /--handlers odd\.mjs: handlers\[0\] is not a handler \(it needs kind, versions and handle/],
      ['a.mjs,b.mjs', /two handlers for kind cli\.same: in a\.mjs and in b\.mjs/],
      ['twice.mjs', /two handlers for kind cli\.twice: twice in twice\.mjs/],
    ];
    for (const [files, sentence] of cases) {
      const result = await cli(['workers', '--handlers', files, '--queues', queue], { cwd: project, env: env() });
      expect(result.code, files).toBe(2);
      expect(result.stderr, files).toMatch(sentence);
    }
    const none = await cli(['workers', '--queues', queue], { cwd: project, env: env() });
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/no handlers: name the file that exports them with --handlers <file>/);
    expect(await snapshot()).toEqual(before);
  }, 120_000);

  it('keeps the file, line and column of a handlers file with a syntax error', async () => {
    const project = tempProject();
    writeFileSync(path.join(project, 'syntax.mjs'), 'export const a = 1;\n\n\n\nconsole.log("a" 1);\n');
    const result = await cli(['workers', '--handlers', 'syntax.mjs', '--queues', 'syntax'], {
      cwd: project,
      env: env(),
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /--handlers syntax\.mjs: the file did not load: \S*syntax\.mjs:5:13: SyntaxError: missing \) after argument list/,
    );
  }, 60_000);

  it('refuses a bad --queue-limits entry, and a limit of a queue it does not serve, with a sentence and exit 2, writing nothing', async () => {
    const project = tempProject();
    writeFileSync(path.join(project, 'jobs.mjs'), handlerSource('cli.queue-limits'));
    const queue = uniqueQueue('cli');
    const before = await snapshot();
    const bad = await cli(['workers', '--handlers', 'jobs.mjs', '--queues', queue, '--queue-limits', 'emails=0'], {
      cwd: project,
      env: env(),
    });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(
      /--queue-limits \(LEASEHOLD_QUEUE_LIMITS\) = "emails=0": "emails=0": the maximum must be a whole number from 1 to 1000000, not "0"/,
    );
    const unserved = await cli(['workers', '--handlers', 'jobs.mjs', '--queues', queue], {
      cwd: project,
      env: { ...env(), LEASEHOLD_QUEUE_LIMITS: `${queue}=2,bulk=100/1s` },
    });
    expect(unserved.code).toBe(2);
    expect(unserved.stderr).toMatch(
      new RegExp(
        `^leasehold workers: --queue-limits \\(LEASEHOLD_QUEUE_LIMITS\\): a limit for the queue bulk, which this worker does not serve \\(it serves ${queue}\\): serve it \\(--queues\\) or drop its limit$`,
        'm',
      ),
    );
    expect(await snapshot()).toEqual(before);
  }, 60_000);

  it('on an unmigrated database, says to run leasehold migrate and exits 2, as enqueue says it', async () => {
    const project = tempProject();
    writeFileSync(path.join(project, 'jobs.mjs'), handlerSource('cli.unmigrated'));
    const empty = await emptyDatabase('leasehold_cli_unmigrated');
    try {
      const result = await cli(['workers', '--handlers', 'jobs.mjs', '--queues', 'unmigrated'], {
        cwd: project,
        env: { ...env(), DATABASE_URL: empty.url },
      });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(
        /^leasehold workers: this database has no Leasehold schema: run the migrations first \(npx leasehold migrate, or start the worker with --migrate; docs\/cli\.md\)$/m,
      );
      expect(result.stderr + result.stdout).not.toMatch(/npm run|"level"/);

      const pool = new pg.Pool({ connectionString: empty.url, max: 1 });
      try {
        const job = defineJob({ kind: 'cli.unmigrated', version: 1, queue: 'q', schema: z.object({ n: z.number() }) });
        await expect(enqueue(pool, job, { n: 1 })).rejects.toThrow(
          /^Leasehold: this database has no Leasehold schema: run the migrations first \(npx leasehold migrate/,
        );
      } finally {
        await pool.end();
      }
    } finally {
      await empty.drop();
    }
  }, 60_000);

  it('stops on SIGTERM in the container form (exec node_modules/.bin/leasehold from a shell entrypoint): exit 0, the job released', async () => {
    const project = tempProject();
    // The project's bin as npm links it: an executable named leasehold that runs the CLI under node.
    mkdirSync(path.join(project, 'node_modules', '.bin'), { recursive: true });
    const bin = path.join(project, 'node_modules', '.bin', 'leasehold');
    writeFileSync(
      bin,
      `#!/usr/bin/env -S node --import ${import.meta.resolve('tsx')}\nimport(${JSON.stringify(path.join(ROOT, 'cli', 'main.ts'))});\n`,
    );
    chmodSync(bin, 0o755);
    writeFileSync(
      path.join(project, 'slow.mjs'),
      `export const handlers = [{ kind: 'cli.slow', versions: [1], schema: { '~standard': { version: 1, vendor: 'test', validate: (value) => ({ value }) } }, timeoutMs: 60000,
        handle: ({ signal }) => new Promise((resolve) => signal.addEventListener('abort', resolve)) }];\n`,
    );
    const queue = uniqueQueue('cli');
    const enqueued = await cli(['enqueue', queue, 'cli.slow', '{}', '--force'], { env: env() });
    const id = enqueued.stdout.trim();
    // A shell entrypoint's last line: exec, so the signal goes to the worker, not to a shell (or npx) that dies of it.
    const entrypoint = spawn(
      'sh',
      [
        '-c',
        `exec node_modules/.bin/leasehold workers --handlers ./slow.mjs --queues ${queue} --grace-ms 500 --poll-ms 200`,
      ],
      {
        cwd: project,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? os.tmpdir(),
          ...env(),
        } as unknown as NodeJS.ProcessEnv,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    entrypoint.stdout!.on('data', (c: Buffer) => (output += c.toString()));
    entrypoint.stderr!.on('data', (c: Buffer) => (output += c.toString()));
    const exited = new Promise<number | string>((resolve) =>
      entrypoint.on('exit', (code, signal) => resolve(code ?? signal ?? 'none')),
    );
    await until(
      'the job running',
      async () => {
        const [row] = await run<{ state: string }>(t.db, sql`SELECT state FROM leasehold.jobs WHERE id = ${id}::uuid`);
        return row?.state === 'running' ? true : undefined;
      },
      30_000,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; worker output:\n${output}`);
    });
    // SIGTERM to that one process, as a container runtime sends it to PID 1.
    entrypoint.kill('SIGTERM');
    expect(await exited, output).toBe(0);
    const [job] = await run<{ state: string; released: number }>(
      t.db,
      sql`SELECT state, released FROM leasehold.jobs WHERE id = ${id}::uuid`,
    );
    expect(job).toMatchObject({ state: 'ready', released: 1 });
  }, 60_000);

  it('loads no handler it was not given: the demo’s receipt kind is not served by default', async () => {
    const project = tempProject();
    writeFileSync(path.join(project, 'jobs.mjs'), handlerSource('cli.only'));
    const queue = uniqueQueue('cli');
    const worker = startCli(['workers', '--handlers', 'jobs.mjs', '--queues', queue], { cwd: project, env: env() });
    await until('the worker registered its kinds', async () =>
      (await run(t.db, sql`SELECT 1 FROM leasehold.kinds WHERE kind = 'cli.only'`)).length > 0 ? true : undefined,
    );
    const [row] = await run<{ kinds: string[] }>(
      t.db,
      sql`SELECT coalesce(array_agg(DISTINCT kind ORDER BY kind), '{}') AS kinds FROM leasehold.kinds`,
    );
    expect(row!.kinds).not.toContain('receipt.send');
    worker.child.kill('SIGTERM');
    expect((await worker.exited).code).toBe(0);
  }, 60_000);
});

interface Health {
  healthy: boolean;
  reasons: string[];
  database: { reachable: boolean };
  worker: { status: string };
}

/** GET `path` on 127.0.0.1:`port`: the status and the JSON body, or undefined while nothing listens. */
async function probe(port: number, route = '/healthz'): Promise<{ status: number; body: string } | undefined> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}${route}`);
    return { status: response.status, body: await response.text() };
  } catch {
    return undefined;
  }
}

const health = (answer: { body: string }) => JSON.parse(answer.body) as Health;

/** This machine's first non-loopback IPv4 address, if it has one. */
const outsideAddress = () =>
  Object.values(os.networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

describe('leasehold workers: /healthz and /metrics', () => {
  it('answers /healthz on the health port: 200 while healthy, 503 with the reason while the database is unreachable', async () => {
    const project = tempProject();
    writeFileSync(path.join(project, 'jobs.mjs'), handlerSource('cli.health'));
    const port = await freePort();
    const worker = startCli(
      [
        'workers',
        '--handlers',
        'jobs.mjs',
        '--queues',
        uniqueQueue('cli'),
        '--poll-ms',
        '200',
        '--health-port',
        String(port),
      ],
      { cwd: project, env: env() },
    );
    const ok = await until(
      'a healthy /healthz',
      async () => {
        const answer = await probe(port);
        return answer?.status === 200 ? answer : undefined;
      },
      30_000,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; worker output:\n${worker.output()}`);
    });
    expect(health(ok)).toMatchObject({
      healthy: true,
      reasons: [],
      database: { reachable: true },
      worker: { status: 'ok' },
    });
    expect(worker.output()).toMatch(new RegExp(`"bound":"0\\.0\\.0\\.0:${port}".*"msg":"health on /healthz"`));
    expect((await probe(port, '/metrics'))?.status).toBe(404);

    const bringBack = await takeDatabaseDown(t.name);
    try {
      const down = await probe(port);
      expect(down?.status).toBe(503);
      expect(health(down!)).toMatchObject({ healthy: false, database: { reachable: false }, worker: { status: 'ok' } });
      expect(health(down!).reasons[0]).toMatch(/^database unreachable: /);
    } finally {
      await bringBack();
    }
    await until('200 again', async () => (await probe(port))?.status === 200 || undefined);
    worker.child.kill('SIGTERM');
    expect((await worker.exited).code).toBe(0);
    expect(await probe(port)).toBeUndefined();
  }, 60_000);

  it('answers 503 "worker not started" while the worker still waits for its database', async () => {
    const project = tempProject();
    writeFileSync(path.join(project, 'jobs.mjs'), handlerSource('cli.waits'));
    const [port, nothing] = [await freePort(), await freePort()];
    // Nothing listens on `nothing`: the worker's start waits (retrying) for a database that refuses connections.
    const worker = startCli(['workers', '--handlers', 'jobs.mjs', '--queues', 'waits', '--health-port', String(port)], {
      cwd: project,
      env: { ...env(), DATABASE_URL: `postgres://postgres@127.0.0.1:${nothing}/postgres` },
    });
    const waiting = await until('an answer from /healthz', () => probe(port), 30_000).catch((error: Error) => {
      throw new Error(`${error.message}; worker output:\n${worker.output()}`);
    });
    expect(waiting.status).toBe(503);
    expect(health(waiting)).toMatchObject({
      healthy: false,
      database: { reachable: false },
      worker: { status: 'new' },
    });
    expect(health(waiting).reasons).toEqual([expect.stringMatching(/^database unreachable: /), 'worker not started']);
    worker.child.kill('SIGKILL');
    await worker.exited;
  }, 60_000);

  it('serves /metrics (and /healthz) on 127.0.0.1 unless told otherwise, and one listener for one port', async () => {
    const project = tempProject();
    writeFileSync(path.join(project, 'jobs.mjs'), handlerSource('cli.metrics'));
    // One job completes, one fails (a negative n), one is reaped: each series has an event to count.
    writeFileSync(
      path.join(project, 'metrics.mjs'),
      handlerSource('cli.metrics').replace(
        'async handle({ payload }) {',
        'async handle({ payload }) { if (payload.n < 0) throw new Error("negative n");',
      ),
    );
    const queue = uniqueQueue('cli');
    const elsewhere = uniqueQueue('cli-reaped');
    const done = (await cli(['enqueue', queue, 'cli.metrics', '{"n":2}', '--force'], { env: env() })).stdout.trim();
    const failing = (await cli(['enqueue', queue, 'cli.metrics', '{"n":-1}', '--force'], { env: env() })).stdout.trim();
    const lost = (await cli(['enqueue', elsewhere, 'cli.metrics', '{"n":3}', '--force'], { env: env() })).stdout.trim();
    // A job of a queue this worker does not serve, leased by a worker that died: its reaper reaps it.
    await claimOne(t.db, elsewhere, 'dead-worker');
    await expireLease(t.db, lost);
    const [metricsPort, shared] = [await freePort(), await freePort()];
    const worker = startCli(
      [
        'workers',
        '--handlers',
        'metrics.mjs',
        '--queues',
        queue,
        '--metrics-port',
        String(metricsPort),
        '--poll-ms',
        '200',
        '--reap-interval-ms',
        '200',
      ],
      { cwd: project, env: env() },
    );
    const value = (body: string, series: RegExp) =>
      Number(
        body
          .split('\n')
          .find((line) => series.test(line))
          ?.split(' ')
          .at(-1) ?? Number.NaN,
      );
    const scraped = await until(
      'metrics with a completion, a failure and a reaped lease',
      async () => {
        const answer = await probe(metricsPort, '/metrics');
        if (answer?.status !== 200) return undefined;
        const counted =
          value(answer.body, /^leasehold_jobs_completed_total\{.*kind="cli\.metrics"/) >= 1 &&
          value(answer.body, /^leasehold_jobs_failed_total\{.*kind="cli\.metrics"/) >= 1 &&
          value(answer.body, /^leasehold_leases_reaped_total\{outcome="retried"\}/) >= 1;
        return counted ? answer : undefined;
      },
      30_000,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; worker output:\n${worker.output()}`);
    });
    expect(value(scraped.body, /^leasehold_jobs_claimed_total\{queue="/)).toBeGreaterThanOrEqual(2);
    expect(value(scraped.body, /^leasehold_jobs_completed_total\{.*kind="cli\.metrics"/)).toBe(1);
    expect(value(scraped.body, /^leasehold_jobs_failed_total\{.*kind="cli\.metrics"/)).toBeGreaterThanOrEqual(1);
    expect(value(scraped.body, /^leasehold_leases_reaped_total\{outcome="retried"\}/)).toBe(1);
    // Each handler run is timed: the completed one and the failed one at least.
    expect(value(scraped.body, /^leasehold_handler_duration_seconds_count\{.*outcome="completed"/)).toBe(1);
    expect(value(scraped.body, /^leasehold_handler_duration_seconds_count\{.*outcome="failed"/)).toBeGreaterThanOrEqual(
      1,
    );
    const [states] = await run<{ done: string; failing: string; lost: string }>(
      t.db,
      sql`SELECT (SELECT state FROM leasehold.jobs WHERE id = ${done}::uuid) AS done,
                 (SELECT state FROM leasehold.jobs WHERE id = ${failing}::uuid) AS failing,
                 (SELECT state FROM leasehold.jobs WHERE id = ${lost}::uuid) AS lost`,
    );
    expect(states).toMatchObject({ done: 'done', lost: 'ready' });
    expect(states!.failing).not.toBe('done');
    expect(worker.output()).toMatch(new RegExp(`"bound":"127\\.0\\.0\\.1:${metricsPort}"`));
    const outside = outsideAddress();
    // Not on another interface of this machine: the connection is refused there.
    if (outside)
      await expect(fetch(`http://${outside}:${metricsPort}/metrics`)).rejects.toMatchObject({
        cause: { code: 'ECONNREFUSED' },
      });
    await until('healthy', async () => (await probe(metricsPort))?.status === 200 || undefined);
    worker.child.kill('SIGTERM');
    expect((await worker.exited).code).toBe(0);

    // --health-port equal to --metrics-port: one listener answers both, on the one host given.
    const both = startCli(
      [
        'workers',
        '--handlers',
        'jobs.mjs',
        '--queues',
        uniqueQueue('cli'),
        '--metrics-port',
        String(shared),
        '--health-port',
        String(shared),
        '--health-host',
        '127.0.0.1',
      ],
      { cwd: project, env: env() },
    );
    await until('healthy on the shared port', async () => (await probe(shared))?.status === 200 || undefined, 30_000);
    expect((await probe(shared, '/metrics'))?.status).toBe(200);
    expect(both.output()).not.toMatch(/could not serve/);
    both.child.kill('SIGTERM');
    expect((await both.exited).code).toBe(0);

    const refused = await cli(
      ['workers', '--handlers', 'jobs.mjs', '--metrics-port', '9464', '--health-port', '9464'],
      {
        cwd: project,
        env: env(),
      },
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--health-port and --metrics-port are both 9464.*give both the same host/);
  }, 90_000);
});
