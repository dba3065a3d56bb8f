/**
 * The declared SQL surface (drizzle/0002, docs/operations.md): leasehold.enqueue(…) behaves as
 * the TypeScript enqueue does, and the views say what the dashboard's read models say. The
 * signature and the columns are pinned here: changing them is changing a promise.
 *
 * Why there are two enqueues to hold equal: leasehold.enqueue() is the producers' path from SQL
 * (its body is in drizzle/0011, a landed migration), and the TypeScript enqueue keeps its own
 * statements because its single enqueue is one constant text prepared per connection, the one
 * docs/performance.md measures (2,135 jobs/s on one connection, 1.81 × the best anchor; the
 * reasons and the history beside insertOneText in db/queue/enqueue-sql.ts). They are not merged.
 */
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { claim, enqueue, WAKE_CHANNEL } from './queue/index.ts';
import { backlog } from './queries/overview.ts';
import { subStateOf } from './states.ts';
import { useTestDatabase } from '../test/db.ts';
import { getJob, mixedFixture, uniqueQueue, MIXED_FIXTURE_COUNTS } from '../test/factories.ts';
import { until } from '../test/wait.ts';

const t = useTestDatabase();

type Row = Record<string, unknown>;
const rows = async (text: string, values: unknown[] = []) => (await t.pool.query(text, values)).rows as Row[];
const one = async (text: string, values: unknown[] = []) => (await rows(text, values))[0]!;
const failure = (work: Promise<unknown>) =>
  work.then(
    () => null,
    (error: { code?: string; message: string }) => ({ code: error.code, message: error.message }),
  );

describe('the surface as declared', () => {
  it('pins the signature of leasehold.enqueue and the columns of the views', async () => {
    expect(
      await one(`SELECT pg_get_function_arguments(p.oid) AS args, pg_get_function_result(p.oid) AS result,
                        p.prosecdef AS definer, p.proconfig AS config
                 FROM pg_proc p WHERE p.oid = 'leasehold.enqueue'::regproc`),
    ).toEqual({
      args:
        "kind text, payload jsonb DEFAULT '{}'::jsonb, queue text DEFAULT 'default'::text, " +
        'run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, delay interval DEFAULT NULL::interval, ' +
        'priority integer DEFAULT 0, max_attempts integer DEFAULT 10, idempotency_key text DEFAULT NULL::text, ' +
        "dedupe_window interval DEFAULT '30 days'::interval, trace_id text DEFAULT NULL::text, " +
        'max_age interval DEFAULT NULL::interval, kind_version integer DEFAULT 1, job_id uuid DEFAULT NULL::uuid, ' +
        'notify boolean DEFAULT true, group_key text DEFAULT NULL::text, unique_key text DEFAULT NULL::text, ' +
        "unique_while text[] DEFAULT ARRAY['ready'::text, 'scheduled'::text, 'retrying'::text, 'running'::text], " +
        "on_conflict text DEFAULT 'keep'::text, debounce interval DEFAULT NULL::interval, tags text[] DEFAULT NULL::text[]",
      result: 'TABLE(id uuid, created boolean)',
      definer: false,
      config: ['search_path=pg_catalog, pg_temp'],
    });
    const columns = async (view: string) =>
      (
        await rows(
          `SELECT column_name || ' ' || data_type AS c FROM information_schema.columns
           WHERE table_schema = 'leasehold' AND table_name = $1 ORDER BY ordinal_position`,
          [view],
        )
      ).map((r) => r.c);
    expect(await columns('jobs_view')).toEqual([
      'id uuid',
      'queue text',
      'kind text',
      'kind_version integer',
      'state text',
      'sub_state text',
      'priority integer',
      'attempts integer',
      'max_attempts integer',
      'run_at timestamp with time zone',
      'created_at timestamp with time zone',
      'started_at timestamp with time zone',
      'finished_at timestamp with time zone',
      'updated_at timestamp with time zone',
      'lease_until timestamp with time zone',
      'worker_id text',
      'failure_class text',
      'last_error text',
      'idempotency_key text',
      'trace_id text',
      'expires_at timestamp with time zone',
    ]);
    expect(await columns('queue_stats')).toEqual([
      'queue text',
      'paused boolean',
      'ready bigint',
      'scheduled bigint',
      'retrying bigint',
      'running bigint',
      'lease_expired bigint',
      'dead bigint',
      'cancelled bigint',
      'done_last_hour bigint',
      'oldest_ready_age_seconds double precision',
    ]);
  });
});

describe('leasehold.enqueue', () => {
  it('makes a job that the TypeScript claim takes, with what it was given', async () => {
    const queue = uniqueQueue('sql');
    const made = await one(
      `SELECT * FROM leasehold.enqueue('receipt.send', '{"orderId": 42}', $1, priority => 4, max_attempts => 3,
         trace_id => 'trace-sql', kind_version => 2, max_age => interval '1 hour')`,
      [queue],
    );
    expect(made).toMatchObject({ created: true });
    const [job] = await claim(t.db, { queues: [queue], workerId: 'w-sql' });
    expect(job).toMatchObject({
      id: made.id,
      kind: 'receipt.send',
      kindVersion: 2,
      payload: { orderId: 42 },
      priority: 4,
      maxAttempts: 3,
      traceId: 'trace-sql',
      attempt: 1,
    });
    // From the statement's time; created_at is the transaction's (the same moment, to the millisecond).
    expect(job!.expiresAt!.getTime() - job!.createdAt.getTime()).toBeCloseTo(3_600_000, -1);
  });

  it('gives one idempotency key one job across the SQL and the TypeScript paths', async () => {
    const queue = uniqueQueue('keys');
    const sqlFirst = await one(`SELECT * FROM leasehold.enqueue('k', queue => $1, idempotency_key => $2)`, [
      queue,
      `a-${queue}`,
    ]);
    const tsAfter = await enqueue(t.db, { queue, kind: 'k', idempotencyKey: `a-${queue}` });
    expect(tsAfter).toMatchObject({ id: sqlFirst.id, created: false, job: { id: sqlFirst.id } });
    const tsFirst = await enqueue(t.db, { queue, kind: 'k', idempotencyKey: `b-${queue}` });
    const sqlAfter = await one(`SELECT * FROM leasehold.enqueue('k', queue => $1, idempotency_key => $2)`, [
      queue,
      `b-${queue}`,
    ]);
    expect(sqlAfter).toEqual({ id: tsFirst.id, created: false });
    expect(await one('SELECT count(*)::int AS n FROM leasehold.jobs WHERE queue = $1', [queue])).toEqual({ n: 2 });
  });

  it('makes a concurrent enqueue of the same key wait, then return the job that committed', async () => {
    const queue = uniqueQueue('keys-wait');
    const key = `wait-${queue}`;
    const holder = new pg.Client({ connectionString: t.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      const held = (
        await holder.query(`SELECT * FROM leasehold.enqueue('k', queue => $1, idempotency_key => $2)`, [queue, key])
      ).rows[0];
      const waiting = enqueue(t.db, { queue, kind: 'k', idempotencyKey: key });
      await until('the second enqueue to wait on the key', async () => {
        const [row] = await rows(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        );
        return (row!.n as number) > 0;
      });
      await holder.query('COMMIT');
      expect(await waiting).toMatchObject({ id: held.id, created: false });
    } finally {
      await holder.end();
    }
  });

  it("ages priority as the TypeScript enqueue does: the same claim_at, from the queue's aging step", async () => {
    const queue = uniqueQueue('aging');
    await t.pool.query('INSERT INTO leasehold.queues (name, aging_seconds) VALUES ($1, 30)', [queue]);
    const runAt = new Date(Date.now() + 600_000);
    const ts = await enqueue(t.db, { queue, kind: 'k', priority: 7, runAt });
    const viaSql = await one(`SELECT id FROM leasehold.enqueue('k', queue => $1, priority => 7, run_at => $2)`, [
      queue,
      runAt,
    ]);
    const defaults = await one(`SELECT id FROM leasehold.enqueue('k', priority => 7, run_at => $1)`, [runAt]);
    const tsDefault = await enqueue(t.db, { kind: 'k', priority: 7, runAt });
    const sortKeys = await rows(
      `SELECT id, extract(epoch FROM run_at - claim_at)::float8 AS ahead, run_at FROM leasehold.jobs WHERE id = ANY($1::uuid[])`,
      [[ts.id, viaSql.id, defaults.id, tsDefault.id]],
    );
    const ahead = Object.fromEntries(sortKeys.map((r) => [r.id, r.ahead]));
    expect([ahead[ts.id], ahead[viaSql.id as string]]).toEqual([210, 210]); // 7 × 30 s
    expect([ahead[tsDefault.id], ahead[defaults.id as string]]).toEqual([420, 420]); // 7 × the default 60 s
    expect(new Set(sortKeys.map((r) => (r.run_at as Date).getTime()))).toEqual(new Set([runAt.getTime()]));
    // A delay counts from the database's clock, as delayMs does.
    const delayed = await one(`SELECT id FROM leasehold.enqueue('k', queue => $1, delay => interval '5 minutes')`, [
      queue,
    ]);
    const tsDelayed = await enqueue(t.db, { queue, kind: 'k', delayMs: 300_000 });
    const delays = await rows(
      `SELECT extract(epoch FROM run_at - created_at)::float8 AS s FROM leasehold.jobs WHERE id = ANY($1::uuid[])`,
      [[delayed.id, tsDelayed.id]],
    );
    for (const r of delays) expect(r.s).toBeCloseTo(300, 1);
  });

  it('wakes a LISTENer on leasehold_jobs with the queue at commit, and not with notify => false', async () => {
    const [queue, quiet] = [uniqueQueue('wake'), uniqueQueue('quiet')];
    const heard: string[] = [];
    const listener = new pg.Client({ connectionString: t.url });
    await listener.connect();
    try {
      listener.on('notification', (m) => heard.push(m.payload ?? ''));
      await listener.query(`LISTEN ${WAKE_CHANNEL}`);
      await t.db.transaction(async (tx) => {
        await tx.execute(sql`SELECT leasehold.enqueue('k', queue => ${queue})`);
        await tx.execute(sql`SELECT leasehold.enqueue('k', queue => ${queue})`);
        await tx.execute(sql`SELECT leasehold.enqueue('k', queue => ${quiet}, notify => false)`);
      });
      await until('the wake-up of the committed jobs', async () => heard.includes(queue));
      // Delivered in commit order: a NOTIFY from the quiet enqueue would have come with this one.
      expect(heard.filter((q) => q === queue || q === quiet)).toEqual([queue]);
    } finally {
      await listener.end();
    }
  });

  it('refuses bad input with one sentence naming every problem, and writes nothing', async () => {
    const queue = uniqueQueue('bad');
    const refused = await failure(
      t.pool.query(
        `SELECT * FROM leasehold.enqueue('bad kind!', NULL, $1, priority => 101, max_attempts => 0,
           run_at => now(), delay => interval '1 minute', idempotency_key => $2, trace_id => '')`,
        [queue, `k-${queue}`],
      ),
    );
    expect(refused).toEqual({
      code: '22023',
      message:
        "leasehold.enqueue refused the job: kind must be 1 to 128 of A-Z a-z 0-9 _ . : - (starting with a letter or digit), not 'bad kind!'; " +
        "payload must be a JSON value, not SQL NULL (pass '{}' for none); " +
        'priority must be an integer from 0 (the default, lowest) to 100, not 101; give run_at or delay, not both; ' +
        'max_attempts must be an integer from 1 to 1000, not 0; trace_id must be 1 to 128 characters, not 0.',
    });
    const big = await failure(
      t.pool.query(`SELECT leasehold.enqueue('k', jsonb_build_object('blob', repeat('x', 300000)), $1)`, [queue]),
    );
    expect(big?.message).toMatch(
      /^leasehold\.enqueue refused the job: payload is \d+ bytes of JSON, more than the 262144 allowed/,
    );
    // Deeper than MAX_PAYLOAD_DEPTH (100 levels), as the TypeScript enqueue refuses it; 100 is taken.
    const deep = await failure(
      t.pool.query(
        `SELECT leasehold.enqueue('k', ('{"deep":' || repeat('[', 3000) || repeat(']', 3000) || '}')::jsonb, $1)`,
        [queue],
      ),
    );
    expect(deep).toEqual({
      code: '22023',
      message:
        'leasehold.enqueue refused the job: payload is nested deeper than 100 levels (flatten it, or store it elsewhere and enqueue a reference).',
    });
    const deepest = await one(
      `SELECT id FROM leasehold.enqueue('k', ('{"deep":' || repeat('[', 99) || repeat(']', 99) || '}')::jsonb, $1)`,
      [uniqueQueue('deep-ok')],
    );
    expect(deepest?.id).toEqual(expect.any(String));
    expect(
      await failure(
        t.pool.query(
          `SELECT leasehold.enqueue('k', ('{"deep":' || repeat('[', 100) || '1' || repeat(']', 100) || '}')::jsonb, $1)`,
          [queue],
        ),
      ),
    ).toMatchObject({ code: '22023' });
    const { id } = await enqueue(t.db, { queue: uniqueQueue('taken'), kind: 'k' });
    const repeat = await failure(
      t.pool.query(`SELECT * FROM leasehold.enqueue('k', queue => $1, job_id => $2, idempotency_key => $3)`, [
        queue,
        id,
        `k-${queue}`,
      ]),
    );
    expect(repeat).toEqual({
      code: '23505',
      message: `leasehold.enqueue refused the job: a job with id ${id} already exists (ids must be unique; use idempotency_key to deduplicate).`,
    });
    expect(
      await one(
        `SELECT (SELECT count(*) FROM leasehold.jobs WHERE queue = $1)::int AS jobs,
                (SELECT count(*) FROM leasehold.dedupe_keys WHERE key = $2)::int AS keys`,
        [queue, `k-${queue}`],
      ),
    ).toEqual({ jobs: 0, keys: 0 });
  });

  it('holds a uniqueness key across the SQL and the TypeScript paths, in each mode', async () => {
    const queue = uniqueQueue('uniq');
    const key = `u-${queue}`;
    const first = await one(
      `SELECT * FROM leasehold.enqueue('k', '{"v": 1}', $1, unique_key => $2, tags => ARRAY['a', 'b'])`,
      [queue, key],
    );
    expect(first).toMatchObject({ created: true });
    const ts = await enqueue(t.db, { queue, kind: 'k', payload: { v: 2 }, unique: { key } });
    expect(ts).toMatchObject({ id: first.id, created: false, unique: 'kept' });
    const replaced = await one(
      `SELECT * FROM leasehold.enqueue('k', '{"v": 3}', $1, unique_key => $2, on_conflict => 'replace', delay => interval '1 hour')`,
      [queue, key],
    );
    expect(replaced).toEqual({ id: first.id, created: false });
    const job = await getJob(t.db, String(first.id));
    expect(job).toMatchObject({ payload: { v: 3 }, tags: ['a', 'b'], uniqueKey: key });
    expect(job.runAt.getTime()).toBeGreaterThan(Date.now() + 3_000_000);
    const debounced = await one(
      `SELECT * FROM leasehold.enqueue('k', '{}', $1, unique_key => $2, on_conflict => 'debounce', debounce => interval '5 seconds')`,
      [queue, key],
    );
    expect(debounced).toEqual({ id: first.id, created: false });
    // Pushed, never pulled: the holder replaced to run in an hour keeps that time.
    expect((await getJob(t.db, String(first.id))).runAt.getTime()).toBe(job.runAt.getTime());
    // The debounced holder waits 5 s (scheduled): with only `ready` named it holds nothing.
    const scheduled = await one(
      `SELECT * FROM leasehold.enqueue('k', '{}', $1, unique_key => $2, unique_while => ARRAY['ready'])`,
      [queue, key],
    );
    expect(scheduled.created).toBe(true);
    const bad = await failure(
      t.pool.query(
        `SELECT * FROM leasehold.enqueue('k', '{}', $1, unique_key => repeat('k', 513), unique_while => ARRAY[]::text[],
           on_conflict => 'merge', tags => ARRAY['', 'x'])`,
        [queue],
      ),
    );
    expect(bad).toEqual({
      code: '22023',
      message:
        'leasehold.enqueue refused the job: unique_key must be 1 to 512 characters, not 513; ' +
        'unique_while must list some of ready, scheduled, retrying, running, not {}; ' +
        'on_conflict must be keep, replace or debounce, not merge; ' +
        'tags must be 1 to 16 different strings of 1 to 64 characters without control characters (pass NULL for none).',
    });
    const debounceAlone = await failure(
      t.pool.query(`SELECT * FROM leasehold.enqueue('k', '{}', $1, debounce => interval '1 second')`, [queue]),
    );
    expect(debounceAlone?.message).toMatch(/debounce needs a unique_key and on_conflict debounce/);
  });

  it("refuses bad tags and options in a producer's own INSERT (the table checks them)", async () => {
    const queue = uniqueQueue('extras');
    for (const [column, value] of [
      ['tags', `ARRAY['a', 'a']`],
      ['tags', `ARRAY[repeat('t', 65)]`],
      ['tags', `ARRAY[]::text[]`],
      ['options', `'{"snoozes": 5}'::jsonb`],
      ['options', `'{"timeoutMs": -1}'::jsonb`],
      ['options', `'{"backoff": {"baseMs": 10, "maxMs": 5}}'::jsonb`],
    ]) {
      const refused = await failure(
        t.pool.query(
          `INSERT INTO leasehold.jobs (id, queue, kind, ${column}) VALUES (gen_random_uuid(), $1, 'k', ${value})`,
          [queue],
        ),
      );
      expect(refused?.code).toBe('23514');
    }
  });

  it('makes UUIDv7 ids that sort in the order they were made, carrying the database clock', async () => {
    const queue = uniqueQueue('ids');
    const before = (await one(`SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms`)).ms;
    const singly: string[] = [];
    for (let i = 0; i < 20; i++)
      singly.push((await one(`SELECT id FROM leasehold.enqueue('k', queue => $1)`, [queue])).id as string);
    const inOneStatement = (
      await rows(
        `SELECT e.id FROM generate_series(1, 200) g, LATERAL leasehold.enqueue('k', jsonb_build_object('n', g), $1) e ORDER BY g`,
        [queue],
      )
    ).map((r) => r.id as string);
    const after = (await one(`SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms`)).ms;
    const made = [...singly, ...inOneStatement];
    expect([...made].sort()).toEqual(made);
    expect(new Set(made).size).toBe(220);
    expect(
      made.filter((id) => !/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(id)),
    ).toEqual([]);
    const stamp = (id: string) => Number.parseInt(id.replaceAll('-', '').slice(0, 12), 16);
    expect(stamp(made[0]!)).toBeGreaterThanOrEqual(Number(before));
    expect(stamp(made.at(-1)!)).toBeLessThanOrEqual(Number(after));
  });
});

describe('the views', () => {
  let queue: string;
  let fixture: Awaited<ReturnType<typeof mixedFixture>>;
  beforeAll(async () => {
    queue = uniqueQueue('views');
    fixture = await mixedFixture(t.db, queue);
  });

  it("jobs_view names each job's sub-state as the dashboard's badge does", async () => {
    const now = Date.now();
    const viewed = await rows('SELECT id, sub_state, trace_id FROM leasehold.jobs_view WHERE queue = $1', [queue]);
    expect(Object.fromEntries(viewed.map((r) => [r.id, r.sub_state]))).toEqual(
      Object.fromEntries(Object.values(fixture).map((j) => [j.id, subStateOf(j, now)])),
    );
    expect(new Set(Object.values(fixture).map((j) => subStateOf(j, now))).size).toBe(8);
    expect(Object.fromEntries(viewed.map((r) => [r.id, r.trace_id]))).toEqual(
      Object.fromEntries(Object.values(fixture).map((j) => [j.id, j.traceId])),
    );
  });

  it('queue_stats counts what the overview counts', async () => {
    const [stats] = await rows('SELECT * FROM leasehold.queue_stats WHERE queue = $1', [queue]);
    const row = (await backlog(t.db)).find((q) => q.queue === queue)!;
    expect(stats).toEqual({
      queue,
      paused: row.paused,
      ready: String(row.ready),
      scheduled: String(row.scheduled),
      retrying: String(row.retrying),
      running: String(row.running),
      lease_expired: String(row.leaseExpired),
      dead: String(row.dead),
      cancelled: String(row.cancelled),
      done_last_hour: String(row.doneLastHour),
      oldest_ready_age_seconds: expect.any(Number),
    });
    expect(row).toMatchObject({
      ...MIXED_FIXTURE_COUNTS,
    });
    expect(Math.abs((stats!.oldest_ready_age_seconds as number) - row.oldestReadyAgeSeconds!)).toBeLessThan(5);
    // A paused queue with no jobs is listed too.
    const idle = uniqueQueue('idle');
    await t.pool.query('INSERT INTO leasehold.queues (name, paused) VALUES ($1, true)', [idle]);
    expect(
      await one('SELECT paused, ready, oldest_ready_age_seconds FROM leasehold.queue_stats WHERE queue = $1', [idle]),
    ).toEqual({
      paused: true,
      ready: '0',
      oldest_ready_age_seconds: null,
    });
    expect((await getJob(t.db, fixture.ready!.id)).state).toBe('ready');
  });

  it('queue_stats walks no jobs by state under a large history', async () => {
    const history = uniqueQueue('views-history');
    await t.pool.query(
      `INSERT INTO leasehold.jobs (id, queue, kind, state, failure_class, attempts, finished_at, created_at)
       SELECT gen_random_uuid(), $1, 'k', CASE WHEN g % 20 = 0 THEN 'dead' ELSE 'done' END,
              CASE WHEN g % 20 = 0 THEN 'permanent' END, 1, now(), now()
       FROM generate_series(1, 40000) g`,
      [history],
    );
    await t.pool.query('ANALYZE leasehold.jobs, leasehold.ready_jobs, leasehold.leases, leasehold.finished_rollup');
    type PlanNode = { 'Node Type': string; 'Relation Name'?: string; Plans?: PlanNode[] };
    const nodes = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)];
    const [explained] = await rows('EXPLAIN (FORMAT JSON) SELECT * FROM leasehold.queue_stats');
    const plan = nodes((explained!['QUERY PLAN'] as [{ Plan: PlanNode }])[0].Plan);
    expect(plan.filter((n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'jobs')).toEqual([]);
    expect(await one('SELECT dead FROM leasehold.queue_stats WHERE queue = $1', [history])).toEqual({ dead: '2000' });
  });
});
