/**
 * Real worker processes (`npm run workers`) behind a real PgBouncer 1.18 in transaction mode
 * (test/pgbouncer.ts), as an operator would run them: DATABASE_URL is the pooler's, statements
 * unnamed (LEASEHOLD_PREPARED_STATEMENTS=false), and LISTEN either off (polling) or on a
 * direct URL of its own (LEASEHOLD_DIRECT_URL). Jobs are enqueued through the pooler too.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type DbHandle } from '../db/client.ts';
import { backlog } from '../db/queries/overview.ts';
import { jobDetail } from '../db/queries/jobs.ts';
import { enqueue, enqueueMany } from '../db/queue/index.ts';
import { run } from '../db/queue/executor.ts';
import { testDatabase, type TestDatabase } from '../test/db.ts';
import { uniqueQueue } from '../test/factories.ts';
import { startPgBouncer, type PgBouncer } from '../test/pgbouncer.ts';
import { start, stopAll, type Proc } from '../test/processes.ts';
import { until } from '../test/wait.ts';

let t: TestDatabase;
let bouncer: PgBouncer;
let pooled: DbHandle;
beforeAll(async () => {
  t = await testDatabase();
  bouncer = await startPgBouncer(t.url);
  pooled = createDb(bouncer.pooled(t.url), {
    max: 4,
    applicationName: 'leasehold-enqueuer',
    preparedStatements: false,
  });
});
afterAll(async () => {
  await stopAll();
  await pooled?.close();
  await bouncer?.stop();
  await t?.close();
});

function pooledWorker(queue: string, args: string[], env: Record<string, string> = {}): Proc {
  return start('workers/main.ts', ['--queues', queue, '--handlers', 'test/handlers.ts', ...args], {
    DATABASE_URL: bouncer.pooled(t.url),
    LEASEHOLD_PREPARED_STATEMENTS: 'false',
    LEASEHOLD_LOG_LEVEL: 'info',
    ...env,
  });
}

/** Backends of the test database that are not PgBouncer's server connections, by application name. */
async function directBackends(): Promise<string[]> {
  const backends = await run<{ pid: number; application_name: string }>(
    t.db,
    sql`SELECT pid, application_name FROM pg_stat_activity
        WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`,
  );
  // After the snapshot: a server connection opened meanwhile is in both lists or in neither.
  const servers = await bouncer.serverPids(t.name);
  return backends.filter((b) => !servers.has(b.pid)).map((b) => b.application_name);
}

/** The application names of PgBouncer's clients for the test database. */
async function pooledClients(): Promise<string[]> {
  return (await bouncer.admin('SHOW CLIENTS'))
    .filter((c) => c.database === t.name)
    .map((c) => String(c.application_name));
}

const done = async (queue: string) => (await backlog(t.db)).find((q) => q.queue === queue)?.doneLastHour ?? 0;

describe('worker processes behind PgBouncer in transaction mode', () => {
  it('drain jobs by polling, claims, settlements and maintenance all through the pooler', async () => {
    const queue = uniqueQueue('pooled-poll');
    const workers = [0, 1].map(() =>
      pooledWorker(queue, ['--no-listen', '--poll-ms', '100', '--concurrency', '8', '--reap-interval-ms', '300']),
    );
    const started = await Promise.all(workers.map((w) => w.line(/worker started/)));
    for (const line of started) expect(JSON.parse(line)).toMatchObject({ listen: false, preparedStatements: false });

    await enqueueMany(
      pooled.db,
      Array.from({ length: 250 }, (_, n) => ({ queue, kind: 'test.sleep', payload: { ms: n % 20 } })),
    );
    for (let n = 0; n < 50; n++)
      await enqueue(pooled.db, { queue, kind: 'test.sleep', payload: { ms: 1 }, idempotencyKey: `${queue}-${n}` });
    // While they work: every connection of theirs is a client of PgBouncer, none a backend of its own.
    await until('both workers claiming through the pooler', async () => {
      const clients = await pooledClients();
      return clients.filter((c) => c === 'leasehold-claim').length === 2 && clients.includes('leasehold-worker');
    });
    // (This test's own direct pool, leasehold-test, is the only backend outside the pooler.)
    expect((await directBackends()).filter((name) => name !== 'leasehold-test')).toEqual([]);

    await until('300 jobs done', async () => (await done(queue)) === 300, 60_000);
    expect(await backlog(t.db)).toContainEqual(expect.objectContaining({ queue, ready: 0, running: 0, dead: 0 }));
    for (const w of workers) w.kill('SIGTERM');
    expect(await Promise.all(workers.map((w) => w.exited))).toEqual([0, 0]);
    const output = workers.flatMap((w) => w.output).join('\n');
    expect(output).not.toMatch(/prepared statement|LEASEHOLD_UNPREPARED|unsupported startup parameter/);
  }, 90_000);

  it('start a job on an idle queue at once through LISTEN on the direct URL, though polling is 60 s', async () => {
    const queue = uniqueQueue('pooled-listen');
    const w = pooledWorker(queue, ['--poll-ms', '60000'], { LEASEHOLD_DIRECT_URL: t.url });
    await w.line(/listening for wake-ups/);
    expect(JSON.parse(await w.line(/worker started/))).toMatchObject({ listen: true, preparedStatements: false });
    // The first poll at start is over; from now on only a wake-up starts a job before 60 s.
    await new Promise((r) => setTimeout(r, 500));

    const { id } = await enqueue(pooled.db, { queue, kind: 'test.sleep', payload: { ms: 0 } });
    await until('the job done', async () => (await done(queue)) === 1, 10_000);
    const job = (await jobDetail(t.db, id))!.job;
    expect(job.startedAt!.getTime() - job.createdAt.getTime()).toBeLessThan(1_000);

    // LISTEN holds a backend of its own; claims and settlements are PgBouncer's clients.
    expect(await directBackends()).toContain('leasehold-listen');
    const clients = await pooledClients();
    expect(clients).toContain('leasehold-claim');
    expect(clients).not.toContain('leasehold-listen');
    w.kill('SIGTERM');
    expect(await w.exited).toBe(0);
  }, 60_000);
});
