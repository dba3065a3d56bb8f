import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import { PgDialect } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { claim, completeManyIfLeaseHeld, enqueueMany, pauseQueue, resumeQueue } from '.';
import { ClaimOptionsCache, claimStatement } from './claim.ts';
import { reapStatement } from './reap.ts';
import { storableResult, writeProgress } from './results.ts';
import { preparedStatementNames, useTestDatabase } from '../../test/db.ts';
import { addJob, claimOne, getJob, uniqueQueue } from '../../test/factories.ts';
import { type PlanNode, planNodes, rowsRead } from '../../test/plans.ts';
import { run } from './executor.ts';
import { COMPLETE_MANY } from './settle.ts';

const t = useTestDatabase({ max: 30 });

describe('claim', () => {
  it('leases a batch: running, attempt + 1, one fresh token per claim, a deadline in database time', async () => {
    const queue = uniqueQueue();
    await enqueueMany(
      t.db,
      Array.from({ length: 5 }, () => ({ queue, kind: 'k' })),
    );
    const [{ now }] = (await run(t.db, sql`SELECT now() AS now`)) as [{ now: string }];
    const jobs = await claim(t.db, { queues: [queue], workerId: 'w1', limit: 3, leaseSeconds: 30 });
    expect(jobs).toHaveLength(3);
    expect(new Set(jobs.map((j) => j.leaseToken)).size).toBe(1);
    for (const job of jobs) {
      expect(job).toMatchObject({ state: 'running', attempt: 1, attempts: 1, workerId: 'w1' });
      const lease =
        job.leaseUntil.getTime() - new Date(now.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00')).getTime();
      expect(lease).toBeGreaterThan(29_000);
      expect(lease).toBeLessThan(35_000);
    }
    const rest = await claim(t.db, { queues: [queue], workerId: 'w1', limit: 10 });
    expect(rest).toHaveLength(2);
    expect(rest[0]!.leaseToken).not.toBe(jobs[0]!.leaseToken);
    expect(await claim(t.db, { queues: [queue], workerId: 'w1', limit: 10 })).toEqual([]);
  });

  it('fences per job under a shared token: settling one job of a batch leaves the others leased', async () => {
    const queue = uniqueQueue();
    await enqueueMany(
      t.db,
      Array.from({ length: 3 }, () => ({ queue, kind: 'k' })),
    );
    const [a, b, c] = await claim(t.db, { queues: [queue], workerId: 'w1', limit: 3 });
    expect(await completeManyIfLeaseHeld(t.db, [a!])).toEqual([{ applied: true }]);
    // a's token is b's and c's too, but it names (job, token) pairs: a cannot be settled twice,
    // and b and c are still running under it.
    expect(await completeManyIfLeaseHeld(t.db, [a!])).toEqual([{ applied: false, reason: 'lease_lost' }]);
    const rows = await run<{ id: string; state: string }>(
      t.db,
      sql`SELECT id, state FROM leasehold.jobs WHERE queue = ${queue} ORDER BY id`,
    );
    expect(Object.fromEntries(rows.map((r) => [r.id, r.state]))).toEqual({
      [a!.id]: 'done',
      [b!.id]: 'running',
      [c!.id]: 'running',
    });
  });

  it('acknowledges a batch with some leases already gone: each job gets its own outcome, in input order', async () => {
    const queue = uniqueQueue();
    await enqueueMany(
      t.db,
      Array.from({ length: 4 }, () => ({ queue, kind: 'k' })),
    );
    const [a, b, c] = await claim(t.db, { queues: [queue], workerId: 'w1', limit: 3 });
    const [d] = await claim(t.db, { queues: [queue], workerId: 'w2', limit: 1 });
    expect(await completeManyIfLeaseHeld(t.db, [b!])).toEqual([{ applied: true }]);
    const stale = { id: c!.id, leaseToken: d!.leaseToken }; // c's id under another claim's token
    expect(await completeManyIfLeaseHeld(t.db, [a!, b!, stale, d!, c!])).toEqual([
      { applied: true },
      { applied: false, reason: 'lease_lost' },
      { applied: false, reason: 'lease_lost' },
      { applied: true },
      { applied: true },
    ]);
    const rows = await run<{ state: string }>(t.db, sql`SELECT state FROM leasehold.jobs WHERE queue = ${queue}`);
    expect(rows.map((r) => r.state)).toEqual(['done', 'done', 'done', 'done']);
  });

  it('refuses a malformed acknowledgement with a clear error and completes nothing of it', async () => {
    const queue = uniqueQueue();
    await enqueueMany(
      t.db,
      Array.from({ length: 2 }, () => ({ queue, kind: 'k' })),
    );
    const [a, b] = await claim(t.db, { queues: [queue], workerId: 'w1', limit: 2 });
    await expect(completeManyIfLeaseHeld(t.db, [a!, { id: b!.id, leaseToken: 'not-a-token' }])).rejects.toThrow(
      /completeMany.*UUID/s,
    );
    const rows = await run<{ state: string }>(t.db, sql`SELECT state FROM leasehold.jobs WHERE queue = ${queue}`);
    expect(rows.map((r) => r.state)).toEqual(['running', 'running']);
  });

  it('does not hand out jobs scheduled for later', async () => {
    const queue = uniqueQueue();
    await addJob(t.db, { queue, delayMs: 60_000 });
    await addJob(t.db, { queue, runAt: new Date(Date.now() + 3_600_000) });
    expect(await claim(t.db, { queues: [queue], workerId: 'w', limit: 10 })).toEqual([]);
  });

  it('skips paused queues and serves them again after resume', async () => {
    const paused = uniqueQueue('paused');
    const open = uniqueQueue('open');
    const p = await addJob(t.db, { queue: paused });
    const o = await addJob(t.db, { queue: open });
    await pauseQueue(t.db, { queue: paused, actor: 'admin' });
    const claimed = await claim(t.db, { queues: [paused, open], workerId: 'w', limit: 10 });
    expect(claimed.map((j) => j.id)).toEqual([o.id]);
    expect((await getJob(t.db, p.id)).state).toBe('ready');
    await resumeQueue(t.db, { queue: paused, actor: 'admin' });
    expect((await claim(t.db, { queues: [paused], workerId: 'w' })).map((j) => j.id)).toEqual([p.id]);
  });

  it('serves several queues in one claim, in the shared priority-and-age order', async () => {
    const a = uniqueQueue('a');
    const b = uniqueQueue('b');
    const low = await addJob(t.db, { queue: a, priority: 0 });
    const high = await addJob(t.db, { queue: b, priority: 5 });
    const later = await addJob(t.db, { queue: a, priority: 0 });
    const claimed = await claim(t.db, { queues: [a, b], workerId: 'w', limit: 2 });
    expect(claimed.map((j) => j.id).sort()).toEqual([high.id, low.id].sort());
    expect((await getJob(t.db, later.id)).state).toBe('ready');
  });

  it('claims higher priority first and breaks ties by id', async () => {
    const queue = uniqueQueue();
    const runAt = new Date(Date.now() - 1000);
    const ids = [
      '00000000-0000-7000-8000-000000000003',
      '00000000-0000-7000-8000-000000000001',
      '00000000-0000-7000-8000-000000000002',
    ];
    await enqueueMany(
      t.db,
      ids.map((id) => ({ id, queue, kind: 'k', runAt })),
    );
    const urgent = await addJob(t.db, { queue, priority: 10 });
    const order: string[] = [];
    for (let i = 0; i < 4; i++) order.push((await claimOne(t.db, queue)).id);
    expect(order).toEqual([urgent.id, ...[...ids].sort()]);
  });

  it('refuses bad options with a clear error', async () => {
    await expect(claim(t.db, { queues: [], workerId: 'w' })).rejects.toThrow(/queues/);
    await expect(claim(t.db, { queues: ['ok'], workerId: 'w', limit: 0 })).rejects.toThrow(/limit/);
    await expect(claim(t.db, { queues: ['bad queue!'], workerId: 'w' })).rejects.toThrow(/queues\.0/);
  });

  it('still refuses bad options right after good ones (a worker repeats its options; only those are not checked again)', async () => {
    const queue = uniqueQueue();
    const good = { queues: [queue], workerId: 'w', limit: 5, leaseSeconds: 30 };
    expect(await claim(t.db, good)).toEqual([]);
    expect(await claim(t.db, { ...good })).toEqual([]);
    await expect(claim(t.db, { ...good, limit: 5000 })).rejects.toThrow(/limit/);
    await expect(claim(t.db, { ...good, extra: true } as never)).rejects.toThrow(/extra/);
    await expect(claim(t.db, { ...good, toString: 1 } as never)).rejects.toThrow(/toString/);
    await expect(claim(t.db, null as never)).rejects.toThrow(/Leasehold claim: invalid input/);
    await expect(claim(t.db, { ...good, queues: [queue, 'bad queue!'] })).rejects.toThrow(/queues\.1/);
    const queues = [queue];
    expect(await claim(t.db, { ...good, queues })).toEqual([]);
    queues[0] = 'bad queue!'; // the same array, changed after it was checked
    await expect(claim(t.db, { ...good, queues })).rejects.toThrow(/queues\.0/);
  });
});

describe('claim commit', () => {
  const setting = async (executor: { query: (text: string) => Promise<{ rows: { synchronous_commit: string }[] }> }) =>
    (await executor.query('SHOW synchronous_commit')).rows[0]!.synchronous_commit;
  // The test server runs with synchronous_commit off; these connections ask for it on.
  const durableSession = () => new pg.Pool({ connectionString: t.url, max: 1, options: '-c synchronous_commit=on' });

  it('waits for the WAL flush by default: the claim leaves the commit setting alone', async () => {
    const queue = uniqueQueue();
    await enqueueMany(t.db, [{ queue, kind: 'k' }]);
    const session = durableSession();
    const client = await session.connect();
    try {
      const { sql: text, params } = new PgDialect().sqlToQuery(
        claimStatement({ queues: [queue], workerId: 'w', limit: 1 }),
      );
      await client.query('BEGIN');
      expect((await client.query(text, params)).rows).toHaveLength(1);
      expect(await setting(client)).toBe('on');
      await client.query('ROLLBACK');
    } finally {
      client.release(true);
    }
    try {
      expect(await claim(session, { queues: [queue], workerId: 'w', limit: 1 })).toHaveLength(1);
      expect(await preparedStatementNames(session)).toEqual(['leasehold_claim_one_queue']);
    } finally {
      await session.end();
    }
  });

  it('with asyncCommit, a claim that is its own transaction turns the flush off for that transaction only', async () => {
    const queue = uniqueQueue();
    await enqueueMany(t.db, [
      { queue, kind: 'k' },
      { queue, kind: 'k' },
    ]);
    const options = { queues: [queue], workerId: 'w', limit: 1, asyncCommit: true };
    const session = durableSession();
    const client = await session.connect();
    try {
      // The text a pool runs: it turns the flush off for the transaction it runs in, and only that one.
      const { sql: text, params } = new PgDialect().sqlToQuery(claimStatement(options));
      await client.query('BEGIN');
      expect((await client.query(text, params)).rows).toHaveLength(1);
      expect(await setting(client)).toBe('off');
      await client.query('ROLLBACK');
      expect(await setting(client)).toBe('on');
    } finally {
      client.release(true);
    }
    try {
      // Through a pool the claim runs that text; the connection's own setting is unchanged after.
      expect(await claim(session, options)).toHaveLength(1);
      expect(await preparedStatementNames(session)).toEqual(['leasehold_claim_one_queue_async']);
      expect(await setting(session)).toBe('on');
    } finally {
      await session.end();
    }
  });

  it("with asyncCommit, a claim inside the caller's transaction never changes how that transaction commits", async () => {
    const queue = uniqueQueue();
    await enqueueMany(t.db, [
      { queue, kind: 'k' },
      { queue, kind: 'k' },
    ]);
    const pool = durableSession();
    try {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        expect(await claim(client, { queues: [queue], workerId: 'w', limit: 1, asyncCommit: true })).toHaveLength(1);
        expect(await setting(client)).toBe('on');
        await client.query('COMMIT');
      } finally {
        client.release(true);
      }
      // A Drizzle transaction, several queues (the other shape): the same.
      await drizzle(pool).transaction(async (tx) => {
        expect(await claim(tx, { queues: [queue, 'other'], workerId: 'w', limit: 1, asyncCommit: true })).toHaveLength(
          1,
        );
        const [row] = await run<{ synchronous_commit: string }>(tx, sql`SHOW synchronous_commit`);
        expect(row!.synchronous_commit).toBe('on');
      });
    } finally {
      await pool.end();
    }
  });
});

describe('concurrent claimers', () => {
  it('16 claimers on separate connections over 5,000 jobs claim each job exactly once, leaving none behind', async () => {
    const queue = uniqueQueue('race');
    const total = 5_000;
    await enqueueMany(
      t.db,
      Array.from({ length: total }, (_, i) => ({ queue, kind: 'k', payload: { i } })),
    );
    const seen: { id: string; attempt: number; worker: string }[] = [];
    const claimers = Array.from({ length: 16 }, async (_, w) => {
      const client = new pg.Client({ connectionString: t.url });
      await client.connect();
      try {
        let empty = 0;
        while (empty < 3) {
          const jobs = await claim(client, {
            queues: [queue],
            workerId: `w${w}`,
            limit: 1 + ((w * 7) % 20),
            leaseSeconds: 60,
          });
          if (jobs.length === 0) {
            empty += 1;
            continue;
          }
          empty = 0;
          for (const job of jobs) seen.push({ id: job.id, attempt: job.attempt, worker: `w${w}` });
          const outcomes = await completeManyIfLeaseHeld(client, jobs);
          expect(outcomes.every((o) => o.applied)).toBe(true);
        }
      } finally {
        await client.end();
      }
    });
    await Promise.all(claimers);
    expect(seen).toHaveLength(total);
    expect(new Set(seen.map((s) => s.id)).size).toBe(total);
    expect(seen.every((s) => s.attempt === 1)).toBe(true);
    expect(new Set(seen.map((s) => s.worker)).size).toBeGreaterThan(1);
    const [counts] = await run(
      t.db,
      sql`SELECT count(*) FILTER (WHERE state = 'done')::int AS done, count(*)::int AS all,
                 count(*) FILTER (WHERE attempts = 1 AND started_at <= finished_at)::int AS completed_once,
                 (SELECT count(*)::int FROM leasehold.job_attempts a JOIN leasehold.jobs j ON j.id = a.job_id WHERE j.queue = ${queue}) AS other_endings
          FROM leasehold.jobs WHERE queue = ${queue}`,
    );
    // Each job ended by one completion, recorded on its done row; no attempt ended otherwise.
    expect(counts).toEqual({ done: total, all: total, completed_once: total, other_endings: 0 });
  });
});

describe('priority aging', () => {
  it('serves a low-priority job within the stated bound under a continuous higher-priority flood', async () => {
    // Bound (docs/contract.md §5): a job of priority p is claimed before every job of priority
    // q > p that became due more than (q − p) × aging_seconds after it.
    const queue = uniqueQueue('flood');
    await run(t.db, sql`INSERT INTO leasehold.queues (name, aging_seconds) VALUES (${queue}, 1)`);
    const flood = () =>
      enqueueMany(
        t.db,
        Array.from({ length: 10 }, () => ({ queue, kind: 'flood', priority: 2 })),
      );
    await flood();
    const low = await addJob(t.db, { queue, kind: 'low', priority: 0 });
    const claimedBefore: Date[] = [];
    let lowClaimedAfterMs = -1;
    const started = Date.now();
    while (Date.now() - started < 30_000) {
      await flood(); // 10 in, 5 out per tick: the backlog only grows
      const jobs = await claim(t.db, { queues: [queue], workerId: 'w', limit: 5 });
      await completeManyIfLeaseHeld(t.db, jobs);
      if (jobs.some((j) => j.id === low.id)) {
        lowClaimedAfterMs = Date.now() - started;
        break;
      }
      claimedBefore.push(...jobs.map((j) => j.runAt));
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(lowClaimedAfterMs).toBeGreaterThan(0);
    const bound = low.runAt.getTime() + 2 * 1000;
    expect(claimedBefore.filter((runAt) => runAt.getTime() > bound)).toEqual([]);
    const [backlog] = await run(
      t.db,
      sql`SELECT count(*)::int AS n FROM leasehold.jobs WHERE queue = ${queue} AND state = 'ready'`,
    );
    expect(backlog!.n).toBeGreaterThan(0); // the flood was still going when the low job ran
  });

  it('without aging the same flood would starve it (control)', async () => {
    const queue = uniqueQueue('flood-control');
    await run(t.db, sql`INSERT INTO leasehold.queues (name, aging_seconds) VALUES (${queue}, 86400)`);
    const low = await addJob(t.db, { queue, kind: 'low', priority: 0 });
    for (let i = 0; i < 20; i++) {
      await enqueueMany(
        t.db,
        Array.from({ length: 10 }, () => ({ queue, kind: 'flood', priority: 2 })),
      );
      const jobs = await claim(t.db, { queues: [queue], workerId: 'w', limit: 5 });
      expect(jobs.map((j) => j.id)).not.toContain(low.id);
      await completeManyIfLeaseHeld(t.db, jobs);
    }
  });
});

describe('plans under history volume', () => {
  type PlanNode = { 'Node Type': string; 'Relation Name'?: string; 'Index Name'?: string; Plans?: PlanNode[] };
  const nodes = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)];

  async function explain(statement: ReturnType<typeof sql>) {
    const rows = await run<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(t.db, sql`EXPLAIN (FORMAT JSON) ${statement}`);
    return nodes(rows[0]!['QUERY PLAN'][0].Plan);
  }

  it('claim and reap walk the ready rows and the lease rows, never the jobs (200,000 terminal, 1,000 ready)', async () => {
    const queue = uniqueQueue('history');
    await run(
      t.db,
      sql`INSERT INTO leasehold.jobs (id, queue, kind, state, failure_class, attempts, finished_at, created_at)
          SELECT gen_random_uuid(), ${queue}, 'k', (ARRAY['done','dead','cancelled'])[1 + g % 3],
                 (ARRAY[NULL,'permanent','cancelled'])[1 + g % 3], 1, now(), now()
          FROM generate_series(1, 200000) g`,
    );
    await enqueueMany(
      t.db,
      Array.from({ length: 1000 }, () => ({ queue, kind: 'k' })),
    );
    await claim(t.db, { queues: [queue], workerId: 'w', limit: 20, leaseSeconds: 600 });
    await run(t.db, sql`ANALYZE leasehold.jobs, leasehold.ready_jobs, leasehold.leases`);

    const claimPlan = await explain(claimStatement({ queues: [queue], workerId: 'w', limit: 10 }));
    // The any-kind claim walks the kind index (its versions, then one arm each): nothing reads
    // ready_jobs_claim_idx, which drizzle/contracting/ drops.
    const claimIndexes = claimPlan.map((n) => n['Index Name']).filter(Boolean);
    expect(claimIndexes).toContain('ready_jobs_kind_claim_idx');
    expect(claimIndexes).not.toContain('ready_jobs_claim_idx');
    expect(claimPlan.filter((n) => n['Node Type'] === 'Seq Scan')).toEqual([]);

    const reapPlan = await explain(reapStatement({ limit: 100 }));
    expect(reapPlan.map((n) => n['Index Name']).filter(Boolean)).toContain('leases_until_idx');
    expect(reapPlan.filter((n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'jobs')).toEqual([]);
  });
});

describe('acknowledgement plan', () => {
  it('finds a batch by primary key in its generic plan, not by walking the jobs', async () => {
    const queue = uniqueQueue('ackplan');
    await enqueueMany(
      t.db,
      Array.from({ length: 3000 }, () => ({ queue, kind: 'k' })),
    );
    await run(t.db, sql`ANALYZE leasehold.jobs, leasehold.ready_jobs, leasehold.leases`); // statistics from before anything ran: the lease index looks empty
    const running = await claim(t.db, { queues: [queue], workerId: 'w', limit: 1000 });
    await claim(t.db, { queues: [queue], workerId: 'w', limit: 1000 });
    const client = await t.pool.connect();
    try {
      await client.query('SET plan_cache_mode = force_generic_plan');
      await client.query(`PREPARE ack_plan_test(uuid[], uuid) AS ${COMPLETE_MANY}`);
      const ids = `{${running.map((j) => j.id).join(',')}}`;
      const { rows } = await client.query(
        `EXPLAIN (FORMAT JSON) EXECUTE ack_plan_test('${ids}', '${running[0]!.leaseToken}')`,
      );
      await client.query('DEALLOCATE ack_plan_test; RESET plan_cache_mode');
      const indexes = JSON.stringify(rows[0]['QUERY PLAN']).match(/"Index Name":"[a-z_]+"/g) ?? [];
      expect(indexes).toContain('"Index Name":"jobs_pkey"');
      type Node = { 'Node Type': string; 'Relation Name'?: string; Plans?: Node[] };
      const flatten = (n: Node): Node[] => [n, ...(n.Plans ?? []).flatMap(flatten)];
      const scans = flatten(rows[0]['QUERY PLAN'][0].Plan).filter(
        (n) => n['Node Type'] === 'Seq Scan' && (n['Relation Name'] === 'jobs' || n['Relation Name'] === 'leases'),
      );
      expect(scans).toEqual([]);
    } finally {
      client.release();
    }
  });
});

describe('writes per job', () => {
  it('claim and acknowledgement are HOT updates of the job rows: no new index entry, no new page', async () => {
    const queue = uniqueQueue('hot');
    await enqueueMany(
      t.db,
      Array.from({ length: 200 }, () => ({ queue, kind: 'k' })),
    );
    const client = await t.pool.connect();
    // Committed counters of this database (each statement below is its own transaction, as a
    // worker's are); a backend publishes its counters when idle, at once when asked to.
    const counters = async () => {
      await client.query('SELECT pg_stat_force_next_flush()');
      await client.query('SELECT 1');
      const { rows } = await t.pool.query<{ upd: string; hot: string }>(
        `SELECT n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE relid = 'leasehold.jobs'::regclass`,
      );
      return { updates: Number(rows[0]!.upd), hot: Number(rows[0]!.hot) };
    };
    try {
      const before = await counters();
      const jobs = await claim(client, { queues: [queue], workerId: 'w', limit: 200, leaseSeconds: 60 });
      expect(jobs).toHaveLength(200);
      // Half report progress and return a result (docs/jobs.md): their own tables, no job write.
      for (const job of jobs.slice(0, 100)) expect(await writeProgress(client, job, 0.5, 'half')).toBe(true);
      const completions = jobs.map((job, i) =>
        i < 100 ? { id: job.id, leaseToken: job.leaseToken, result: storableResult({ rows: i }) } : job,
      );
      const acks = await completeManyIfLeaseHeld(client, completions);
      expect(acks.every((a) => a.applied)).toBe(true);
      const after = await counters();
      // Two updates per job, every one HOT. Fillfactor 25 leaves room for both new versions
      // without pruning, which other sessions' snapshots can hold off (a heartbeat's third
      // version is HOT when pruning can run: docs/design/schema-v1.md).
      expect(after.updates - before.updates).toBe(400);
      expect(after.hot - before.hot).toBe(400);
      const stored = await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM leasehold.job_results WHERE job_id = ANY($1::uuid[])`,
        [jobs.map((j) => j.id)],
      );
      expect(stored.rows[0]?.n).toBe(100);
    } finally {
      client.release();
    }
  });
});

describe('claim cost with many scheduled jobs', () => {
  it('does not walk jobs scheduled for later when nothing is due (200,000 future jobs)', async () => {
    const queue = uniqueQueue('future');
    await run(
      t.db,
      sql`INSERT INTO leasehold.jobs (id, queue, kind, run_at, claim_at)
          SELECT gen_random_uuid(), ${queue}, 'k', now() + interval '1 hour' + g * interval '1 second', now() + interval '1 hour' + g * interval '1 second'
          FROM generate_series(1, 200000) g`,
    );
    await run(t.db, sql`ANALYZE leasehold.jobs, leasehold.ready_jobs, leasehold.leases`);
    type Node = {
      'Node Type': string;
      'Index Name'?: string;
      'Rows Removed by Filter'?: number;
      'Actual Rows'?: number;
      Plans?: Node[];
    };
    const flatten = (n: Node): Node[] => [n, ...(n.Plans ?? []).flatMap(flatten)];
    const client = await t.pool.connect();
    try {
      await client.query('BEGIN');
      const { sql: text, params } = new PgDialect().sqlToQuery(
        claimStatement({ queues: [queue], workerId: 'w', limit: 10 }),
      );
      const result = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, params);
      await client.query('ROLLBACK');
      // Every scan of a ready-row index: the kind versions' probes and the arms' walks (one
      // loop per version present, this file's other tests' included). None reads the future.
      const scans = flatten(result.rows[0]['QUERY PLAN'][0].Plan).filter((n) =>
        n['Index Name']?.startsWith('ready_jobs_'),
      );
      expect(scans.map((n) => n['Index Name'])).toContain('ready_jobs_kind_claim_idx');
      expect(scans.map((n) => n['Index Name'])).not.toContain('ready_jobs_claim_idx');
      for (const scan of scans) {
        expect((scan['Rows Removed by Filter'] ?? 0) + (scan['Actual Rows'] ?? 0)).toBeLessThan(10);
      }
    } finally {
      client.release();
    }
  });
});

describe('claim by kind', () => {
  const readyOf = async (queue: string) =>
    run<{ kind: string; kind_version: number; n: number }>(
      t.db,
      sql`SELECT r.kind, r.kind_version, count(*)::int AS n FROM leasehold.ready_jobs r JOIN leasehold.jobs j ON j.id = r.id
          WHERE r.queue = ${queue} AND j.state = 'ready' GROUP BY 1, 2 ORDER BY 1, 2`,
    );

  it('takes only the kind versions asked for; other kinds and versions stay ready with their ready rows', async () => {
    const queue = uniqueQueue('bykind');
    await enqueueMany(t.db, [
      ...Array.from({ length: 3 }, () => ({ queue, kind: 'a' })),
      ...Array.from({ length: 2 }, () => ({ queue, kind: 'b' })),
      ...Array.from({ length: 2 }, () => ({ queue, kind: 'a', kindVersion: 3 })),
    ]);
    const onlyA1 = await claim(t.db, {
      queues: [queue],
      workerId: 'w',
      limit: 10,
      kinds: [{ kind: 'a', versions: [1, 2] }],
    });
    expect(onlyA1.map((j) => [j.kind, j.kindVersion])).toEqual([
      ['a', 1],
      ['a', 1],
      ['a', 1],
    ]);
    expect(await readyOf(queue)).toEqual([
      { kind: 'a', kind_version: 3, n: 2 },
      { kind: 'b', kind_version: 1, n: 2 },
    ]);
    const rest = await claim(t.db, {
      queues: [queue],
      workerId: 'w',
      limit: 10,
      kinds: [
        { kind: 'a', versions: [3] },
        { kind: 'b', versions: [1] },
      ],
    });
    expect(rest.map((j) => `${j.kind}@${j.kindVersion}`).sort()).toEqual(['a@3', 'a@3', 'b@1', 'b@1']);
    expect(await readyOf(queue)).toEqual([]);
  });

  it('across kinds and queues, takes the first jobs of the shared aging order, and no more', async () => {
    const [q1, q2] = [uniqueQueue('arms'), uniqueQueue('arms')];
    // Priorities put them in an order that differs from enqueue order and from kind order.
    const specs = [
      { queue: q1, kind: 'a', priority: 1 },
      { queue: q2, kind: 'b', priority: 5 },
      { queue: q1, kind: 'b', priority: 3 },
      { queue: q2, kind: 'a', priority: 4 },
      { queue: q1, kind: 'a', priority: 2 },
      { queue: q1, kind: 'c', priority: 9 },
    ];
    const jobs = await enqueueMany(t.db, specs);
    const byPriority = specs
      .map((s, i) => ({ ...s, id: jobs[i]!.id }))
      .filter((s) => s.kind !== 'c')
      .sort((x, y) => y.priority - x.priority);
    const options = {
      queues: [q1, q2],
      workerId: 'w',
      kinds: [
        { kind: 'a', versions: [1] },
        { kind: 'b', versions: [1] },
      ],
    };
    const first = await claim(t.db, { ...options, limit: 3 });
    expect(first.map((j) => j.id).sort()).toEqual(
      byPriority
        .slice(0, 3)
        .map((s) => s.id)
        .sort(),
    );
    const second = await claim(t.db, { ...options, limit: 3 });
    expect(second.map((j) => j.id).sort()).toEqual(
      byPriority
        .slice(3)
        .map((s) => s.id)
        .sort(),
    );
    expect((await readyOf(q1)).map((r) => r.kind)).toEqual(['c']);
  });

  it('refuses an empty kinds list and more queue × kind version pairs than it walks', async () => {
    await expect(claim(t.db, { queues: ['q'], workerId: 'w', kinds: [] })).rejects.toThrow(/kinds/);
    const kinds = Array.from({ length: 501 }, (_, i) => ({ kind: `k${i}`, versions: [1] }));
    await expect(claim(t.db, { queues: ['q1', 'q2'], workerId: 'w', kinds })).rejects.toThrow(
      /2 queues × 501 kind versions is 1002 pairs; at most 1000/,
    );
  });

  describe('a backlog of 100,000 jobs of a kind no worker runs, ahead of the known ones', () => {
    it.each([
      ['one kind', [{ kind: 'known', versions: [1] }]],
      [
        'several kinds',
        [
          { kind: 'known', versions: [1, 2] },
          { kind: 'other', versions: [1] },
        ],
      ],
    ])(
      'still claims the known jobs, reading only them (%s)',
      async (_, kinds) => {
        const queue = uniqueQueue('backlog');
        await run(
          t.db,
          sql`INSERT INTO leasehold.jobs (id, queue, kind, run_at, claim_at)
            SELECT gen_random_uuid(), ${queue}, 'unknown', now() - interval '1 hour', now() - interval '1 hour'
            FROM generate_series(1, 100000) g`,
        );
        await enqueueMany(
          t.db,
          Array.from({ length: 10 }, () => ({ queue, kind: 'known' })),
        );
        await run(t.db, sql`ANALYZE leasehold.ready_jobs`);
        const options = { queues: [queue], workerId: 'w', limit: 10, kinds };
        const client = await t.pool.connect();
        try {
          // As the worker runs it: prepared, on its generic plan.
          await client.query('BEGIN');
          await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
          const { sql: text, params } = new PgDialect().sqlToQuery(claimStatement(options));
          const started = performance.now();
          const result = await client.query({
            name: `backlog_claim_${kinds.length}`,
            text: `EXPLAIN (ANALYZE, FORMAT JSON) ${text}`,
            values: params,
          });
          const ms = performance.now() - started;
          await client.query('ROLLBACK');
          const plan = result.rows[0]['QUERY PLAN'][0].Plan as PlanNode;
          const scans = planNodes(plan).filter((n) => n['Relation Name'] === 'ready_jobs');
          const read = rowsRead(plan, 'ready_jobs');
          expect(scans.length).toBeGreaterThan(0);
          // The 10 known jobs (twice with several kinds: the count pass and the locking pass), and
          // the ready rows deleted by address; none of the 100,000.
          expect(read).toBeLessThanOrEqual(40);
          expect(ms).toBeLessThan(1000);
        } finally {
          client.release();
        }
        const got = await claim(t.db, options);
        expect(got).toHaveLength(10);
        expect(new Set(got.map((j) => j.kind))).toEqual(new Set(['known']));
        expect(await readyOf(queue)).toEqual([{ kind: 'unknown', kind_version: 1, n: 100000 }]);
      },
      60_000,
    );
  });
});

describe("a claimer's lower bound (ClaimOptionsCache with bound)", () => {
  /** A cache with a bound on a clock the test moves (ms). */
  const bounded = () => {
    const clock = { ms: 0 };
    return { clock, cache: new ClaimOptionsCache({ bound: { now: () => clock.ms } }) };
  };
  /** The ready jobs of `queues` in the claim order: (claim_at, id). */
  const claimOrder = async (queues: string[]) =>
    (
      await run<{ id: string }>(
        t.db,
        sql`SELECT id FROM leasehold.jobs WHERE queue = ANY(${sql.param(queues)}::text[]) AND state = 'ready' ORDER BY claim_at, id`,
      )
    ).map((r) => r.id);
  const ids = (jobs: { id: string }[]) => jobs.map((j) => j.id);
  /** A queue of `n` ready jobs of kind k, and their ids in the claim order. */
  const backlog = async (name: string, n: number) => {
    const queue = uniqueQueue(name);
    await enqueueMany(
      t.db,
      Array.from({ length: n }, () => ({ queue, kind: 'k' })),
    );
    return { queue, order: await claimOrder([queue]) };
  };

  it('over jobs already ready, takes them in the claim order, each claim after the last key it took', async () => {
    const kinds = [
      { kind: 'a', versions: [1] },
      { kind: 'b', versions: [1] },
    ];
    // Every shape: any kind of one queue or of two; one kind version; two (arms).
    const shapes = [
      { queues: 1, kinds: undefined },
      { queues: 2, kinds: undefined },
      { queues: 1, kinds: [kinds[0]!] },
      { queues: 2, kinds },
    ];
    for (const shape of shapes) {
      const queues = Array.from({ length: shape.queues }, () => uniqueQueue('bound-order'));
      const [first, last] = [queues[0]!, queues.at(-1)!];
      // Priorities put the claim order apart from the enqueue order, the queues and the kinds.
      for (let n = 0; n < 4; n++) {
        await enqueueMany(t.db, [
          { queue: first, kind: 'a', priority: n % 3 },
          { queue: last, kind: 'b', priority: (n + 1) % 3 },
          { queue: first, kind: 'b' },
          { queue: last, kind: 'a', priority: 1 },
        ]);
      }
      const wanted = (shape.kinds ?? kinds).map((k) => k.kind);
      const expected = (
        await run<{ id: string }>(
          t.db,
          sql`SELECT id FROM leasehold.jobs WHERE queue = ANY(${sql.param(queues)}::text[])
                AND kind = ANY(${sql.param(wanted)}::text[]) ORDER BY claim_at, id`,
        )
      ).map((r) => r.id);
      expect(expected.length).toBeGreaterThanOrEqual(8);
      const { cache } = bounded();
      const options = { queues, workerId: 'w', limit: 3, ...(shape.kinds ? { kinds: shape.kinds } : {}) };
      const taken: string[] = [];
      for (;;) {
        const jobs = await claim(t.db, options, cache);
        // Within one claim the rows come in no order; across claims, in the claim order.
        const batch = expected.slice(taken.length, taken.length + jobs.length);
        expect(ids(jobs).sort()).toEqual([...batch].sort());
        taken.push(...batch);
        if (jobs.length < 3) break;
      }
      expect(taken).toEqual(expected);
    }
  });

  it('takes a higher-priority job made ready behind the bound once the restart interval has passed', async () => {
    const { queue, order } = await backlog('bound-restart', 12);
    const { clock, cache } = bounded();
    const options = { queues: [queue], workerId: 'w', limit: 3 };
    expect(ids(await claim(t.db, options, cache)).sort()).toEqual(order.slice(0, 3).sort());
    // Made ready behind the bound: its claim_at is 5 minutes before every job of the backlog.
    const urgent = await addJob(t.db, { queue, kind: 'k', priority: 5 });
    clock.ms += 999;
    // Within the interval the walk starts after the last key taken, past the urgent job.
    expect(ids(await claim(t.db, options, cache)).sort()).toEqual(order.slice(3, 6).sort());
    clock.ms += 1;
    // The restart interval is over: this walk starts from the head, and the urgent job is first.
    expect(ids(await claim(t.db, options, cache)).sort()).toEqual([urgent.id, ...order.slice(6, 8)].sort());
    // The walk that started from the head is bounded again.
    const late = await addJob(t.db, { queue, kind: 'k', priority: 5 });
    expect(ids(await claim(t.db, options, cache)).sort()).toEqual(order.slice(8, 11).sort());
    clock.ms += 1000;
    expect(ids(await claim(t.db, options, cache)).sort()).toEqual([late.id, order[11]!].sort());
  });

  it('after a claim that came back short, walks from the head again', async () => {
    const { queue, order } = await backlog('bound-short', 5);
    const { cache } = bounded(); // the clock never moves: only the short claim restarts the walk
    const options = { queues: [queue], workerId: 'w', limit: 3 };
    expect(ids(await claim(t.db, options, cache)).sort()).toEqual(order.slice(0, 3).sort());
    const urgent = await addJob(t.db, { queue, kind: 'k', priority: 5 });
    // Bounded: the last two of the backlog, not the urgent job behind the bound; short, so ...
    expect(ids(await claim(t.db, options, cache)).sort()).toEqual(order.slice(3).sort());
    // ... the next walk starts from the head.
    expect(ids(await claim(t.db, options, cache))).toEqual([urgent.id]);
  });

  it("on a wake-up's reset, walks the queue from the head again, and only that queue", async () => {
    const [queue, other] = [uniqueQueue('bound-wake'), uniqueQueue('bound-wake')];
    await enqueueMany(t.db, [
      ...Array.from({ length: 9 }, () => ({ queue, kind: 'k' })),
      ...Array.from({ length: 9 }, () => ({ queue: other, kind: 'k' })),
    ]);
    const order = await claimOrder([queue]);
    const { cache } = bounded();
    const options = { queues: [queue], workerId: 'w', limit: 3, kinds: [{ kind: 'k', versions: [1] }] };
    expect(ids(await claim(t.db, options, cache)).sort()).toEqual(order.slice(0, 3).sort());
    const urgent = await addJob(t.db, { queue, kind: 'k', priority: 5 });
    cache.restartFromHead(other); // another queue's wake-up leaves this queue's bound alone
    expect(ids(await claim(t.db, options, cache)).sort()).toEqual(order.slice(3, 6).sort());
    cache.restartFromHead(queue);
    expect(ids(await claim(t.db, options, cache)).sort()).toEqual([urgent.id, ...order.slice(6, 8)].sort());
  });

  it('spaces walks from the head by nine times the last one took, a wake-up included', async () => {
    const { queue, order } = await backlog('bound-gap', 12);
    // Every reading of the clock moves it 100 ms: a claim from the head "takes" 100 ms.
    const clock = { ms: 0 };
    const cache = new ClaimOptionsCache({ bound: { restartMs: 60_000, now: () => (clock.ms += 100) } });
    const options = { queues: [queue], workerId: 'w', limit: 3 };
    expect(ids(await claim(t.db, options, cache)).sort()).toEqual(order.slice(0, 3).sort()); // from the head: 100 to 200
    const urgent = await addJob(t.db, { queue, kind: 'k', priority: 5 });
    cache.restartFromHead(queue); // a wake-up for the queue
    clock.ms = 900; // the next reading, 1000, is 100 ms short of the gap (9 × 100 ms after 200)
    expect(ids(await claim(t.db, options, cache)).sort()).toEqual(order.slice(3, 6).sort());
    // The gap has passed: the wake-up's restart is done now, and the urgent job is first.
    expect(ids(await claim(t.db, options, cache)).sort()).toEqual([urgent.id, ...order.slice(6, 8)].sort());
  });

  it("hands out a job once when its ready row left in another queue's walk is the last taken there", async () => {
    for (const kinds of [undefined, [{ kind: 'k', versions: [1] }]]) {
      const [q1, q2] = [uniqueQueue('bound-stale'), uniqueQueue('bound-stale')];
      const job = await addJob(t.db, { queue: q1, kind: 'k' });
      // A ready row of the job in q2 (as a move of the job to q1 would leave it): the last row
      // of q2's walk and of q1's are both the job's.
      await run(
        t.db,
        sql`INSERT INTO leasehold.ready_jobs (queue, claim_at, run_at, id, kind, kind_version)
            SELECT ${q2}, claim_at, run_at, id, kind, kind_version FROM leasehold.jobs WHERE id = ${job.id}`,
      );
      const { cache } = bounded();
      const options = { queues: [q1, q2], workerId: 'w', limit: 2, ...(kinds ? { kinds } : {}) };
      expect(ids(await claim(t.db, options, cache))).toEqual([job.id]);
      expect(await claimOrder([q1, q2])).toEqual([]);
    }
  });

  describe('under a held horizon (another session holds an xid)', () => {
    type Node = {
      'Index Name'?: string;
      'Shared Hit Blocks'?: number;
      'Shared Read Blocks'?: number;
      'Scan Direction'?: string;
      'Actual Loops'?: number;
      'Actual Rows': number;
      Plans?: Node[];
    };
    const flatten = (n: Node): Node[] => [n, ...(n.Plans ?? []).flatMap(flatten)];
    const buffers = (nodes: Node[]) =>
      nodes.reduce((sum, n) => sum + (n['Shared Hit Blocks'] ?? 0) + (n['Shared Read Blocks'] ?? 0), 0);

    it.each([
      ['any kind of one queue', undefined],
      ['one kind, as a worker claims', [{ kind: 'k', versions: [1] }]],
    ])(
      'after rounds of enqueue and drain, a bounded claim reads a few index pages where a walk from the head reads every dead entry (%s)',
      async (_, kinds) => {
        const queue = uniqueQueue('horizon');
        const holder = await t.pool.connect();
        const client = await t.pool.connect();
        const ROUNDS = 4;
        const PER_ROUND = 2000;
        // A limit well under the rows left: the planner then walks the index in the claim order
        // and stops at the limit (estimating fewer rows than the limit, it may read them all
        // through another index and sort: a cost of the plan, not of the bound).
        const options = { queues: [queue], workerId: 'w', limit: 50, ...(kinds ? { kinds } : {}) };
        try {
          await holder.query('BEGIN');
          await holder.query('SELECT txid_current()');
          const { cache } = bounded();
          for (let round = 1; round <= ROUNDS; round++) {
            await enqueueMany(
              client,
              Array.from({ length: PER_ROUND }, () => ({ queue, kind: 'k' })),
              { notify: false },
            );
            // The last round stops halfway: the claims below run in the middle of a drain.
            for (let n = 0; round < ROUNDS || n < PER_ROUND / 2; ) {
              const jobs = await claim(client, options, cache);
              if (jobs.length === 0) break;
              await completeManyIfLeaseHeld(client, jobs);
              n += jobs.length;
            }
          }
          expect((await claimOrder([queue])).length).toBe(PER_ROUND / 2);
          await client.query('ANALYZE leasehold.ready_jobs');
          // Each claim once, with EXPLAIN, rolled back.
          const explain = async (statement: ReturnType<typeof sql>) => {
            const { sql: text, params } = new PgDialect().sqlToQuery(statement);
            await client.query('BEGIN');
            try {
              // The walk in the claim order, as the comment on `options` says: with the other
              // tests' ready rows in the table, ANALYZE's estimate for this queue varies from run
              // to run, and a low one made the planner read every ready row and sort instead
              // (once in a whole-suite run). The figures compared are the walk's, so pin it.
              await client.query('SET LOCAL enable_sort = off');
              const result = await client.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`, params);
              const plan: Node = result.rows[0]['QUERY PLAN'][0].Plan;
              // The walk: the scans of a ready-row index (whichever the planner picked).
              // The any-kind claim also finds the kind versions present, walking the kind
              // index backwards from its end (one probe per version, this file's other tests'
              // included): the bound does not change that part, so it is counted apart.
              const scans = flatten(plan).filter((n) => n['Index Name']?.startsWith('ready_jobs_'));
              const probes = scans.filter((n) => n['Scan Direction'] === 'Backward');
              const walks = scans.filter((n) => n['Scan Direction'] !== 'Backward');
              expect(walks.length).toBeGreaterThan(0);
              expect(probes.length).toBe(kinds ? 0 : 2);
              return {
                taken: plan['Actual Rows'],
                buffers: buffers(walks),
                probes: buffers(probes),
                versions: probes.reduce((sum, n) => sum + (n['Actual Loops'] ?? 1), 0),
              };
            } finally {
              await client.query('ROLLBACK');
            }
          };
          const fromHead = await explain(claimStatement(options));
          const afterBound = await explain(claimStatement(options, cache));
          // Both take 50 jobs. The walk from the head passes the 7,000 ready rows drained since
          // the horizon was taken (their index entries and heap pages: 133–189 buffers in the
          // runs so far), the bounded one starts at the first it takes (5–6).
          expect(fromHead.taken).toBe(50);
          expect(afterBound.taken).toBe(50);
          expect(fromHead.buffers).toBeGreaterThan(60);
          expect(afterBound.buffers * 10).toBeLessThan(fromHead.buffers);
          // The versions' probes read the newest entries of each version, live while a backlog
          // waits: a few pages each, the same from the head or after the bound.
          expect(afterBound.probes).toBeLessThanOrEqual(12 * afterBound.versions);
          expect(fromHead.probes).toBeLessThanOrEqual(12 * fromHead.versions);
        } finally {
          await holder.query('ROLLBACK').catch(() => {});
          holder.release();
          client.release();
        }
      },
      60_000,
    );
  });
});
