/**
 * `leasehold workers --handlers <file>` with a handler file of the user's project (a temp
 * folder outside this repository): the job ends done; a handlers file that does not load,
 * exports no handler or repeats a kind stops start-up with a sentence and writes nothing;
 * `/healthz` on the health port (from before the start) and `/metrics` on 127.0.0.1.
 */
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { run } from '../db/queue/executor.ts';
import { useTestDatabase } from '../test/db.ts';
import { uniqueQueue } from '../test/factories.ts';
import { freePort, takeDatabaseDown } from '../test/outage.ts';
import { until } from '../test/wait.ts';
import { cli, startCli, tempProject } from '../test/cli.ts';

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
    const [metricsPort, shared] = [await freePort(), await freePort()];
    const worker = startCli(
      ['workers', '--handlers', 'jobs.mjs', '--queues', uniqueQueue('cli'), '--metrics-port', String(metricsPort)],
      { cwd: project, env: env() },
    );
    const scraped = await until(
      'metrics',
      async () => {
        const answer = await probe(metricsPort, '/metrics');
        return answer?.status === 200 ? answer : undefined;
      },
      30_000,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; worker output:\n${worker.output()}`);
    });
    expect(scraped.body).toContain('leasehold_jobs_claimed_total');
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
