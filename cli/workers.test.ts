/**
 * `leasehold workers --handlers <file>` with a handler file of the user's project (a temp
 * folder outside this repository): the job ends done; a handlers file that does not load,
 * exports no handler or repeats a kind stops start-up with a sentence and writes nothing.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { run } from '../db/queue/executor.ts';
import { useTestDatabase } from '../test/db.ts';
import { uniqueQueue } from '../test/factories.ts';
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
    const enqueued = await cli(['enqueue', queue, 'cli.double', '{"n":21}'], { env: env() });
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
    await cli(['enqueue', queue, 'cli.same', '{"n":1}'], { env: env() });
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
