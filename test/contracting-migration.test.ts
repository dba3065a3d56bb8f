/**
 * The contracting migration of drizzle/contracting/ (dropping `ready_jobs_claim_idx`), tried as
 * the release after this one will apply it: on the expanded schema (drizzle/0016, this
 * release's) a worker of the previous release still claims through the index and every job runs
 * once; this release's statements never read it; then the contracting migration drops it, the
 * previous release's code is refused on the contracted schema and this release's runs on.
 *
 * The index's readers are counted from `pg_stat_user_indexes` (its `idx_scan`), read once every
 * session that ran statements has ended (a backend flushes its counters as it exits), and only
 * once the kind index's count shows the claims just made: a count read too early is not taken
 * for "nothing read it".
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '../db/client.ts';
import { backlog } from '../db/queries/overview.ts';
import { cancelIfUnchanged, claim, completeManyIfLeaseHeld, enqueueMany, failIfLeaseHeld } from '../db/queue/index.ts';
import { SCHEMA_VERSION, schemaCompatibility } from '../db/schema-version.ts';
import { testDatabase, type TestDatabase } from './db.ts';
import { silentLogger } from './attempts.ts';
import { uniqueQueue } from './factories.ts';
import { query, withClient, writeMigrations } from './migrations.ts';
import { until } from './wait.ts';
import { workerSettings } from './workers.ts';
import { runJob } from '../testing/run.ts';
import { defineHandler, HandlerRegistry } from '../workers/handler.ts';
import { Worker } from '../workers/worker.ts';
import { MIGRATIONS_FOLDER, migrateDatabase, readMigrations } from '../db/migrate/index.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CONTRACTING = path.resolve(HERE, '..', 'drizzle', 'contracting', 'leasehold_drop_queue_claim_index.sql');
/** The previous release's any-kind claim, byte for byte ($1 queue, $2 limit, $3 token, $4 lease s, $5 worker). */
const PREVIOUS_CLAIM = readFileSync(path.resolve(HERE, 'fixtures', 'release-10', 'any-kind-claim.sql'), 'utf8');

const KINDS = ['contract.a', 'contract.b'] as const;
const PER_KIND = 300;

let t: TestDatabase;
beforeAll(async () => {
  t = await testDatabase();
});
afterAll(async () => {
  await t?.close();
});

type Scans = { queueIndex: number; kindIndex: number };

async function scans(): Promise<Scans> {
  const rows = await query<{ name: string; n: string }>(
    t.url,
    `SELECT indexrelname AS name, idx_scan AS n FROM pg_stat_user_indexes
     WHERE schemaname = 'leasehold' AND indexrelname IN ('ready_jobs_claim_idx', 'ready_jobs_kind_claim_idx')`,
  );
  const of = (name: string) => Number(rows.find((r) => r.name === name)?.n ?? 0);
  return { queueIndex: of('ready_jobs_claim_idx'), kindIndex: of('ready_jobs_kind_claim_idx') };
}

/** The counts once the kind index's has passed `kindAtLeast` and two reads agree. */
async function settledScans(kindAtLeast: number): Promise<Scans> {
  let last = await scans();
  await until(
    'the index counters are flushed',
    async () => {
      const now = await scans();
      const same = now.queueIndex === last.queueIndex && now.kindIndex === last.kindIndex;
      last = now;
      return same && now.kindIndex >= kindAtLeast;
    },
    20_000,
    250,
  );
  return last;
}

const jobStates = (queue: string) =>
  query<{ state: string; n: number }>(
    t.url,
    'SELECT state, count(*)::int AS n FROM leasehold.jobs WHERE queue = $1 GROUP BY state ORDER BY state',
    [queue],
  );

describe('dropping ready_jobs_claim_idx (drizzle/contracting/)', () => {
  it("runs the previous release's claim on the expanded schema, reads only the kind index in this release, and refuses the previous release once dropped", async () => {
    const queue = uniqueQueue('contract');
    await enqueueMany(
      t.db,
      KINDS.flatMap((kind) => Array.from({ length: PER_KIND }, () => ({ queue, kind }))),
      { notify: false },
    );
    const start = await settledScans(0);

    // 1. The previous release's worker on the expanded schema: it claims through the index.
    const previous = await withClient(t.url, async (client) => {
      let taken = 0;
      for (let round = 0; round < 4; round++) {
        const token = randomUUID();
        const { rows } = await client.query<{ id: string }>(PREVIOUS_CLAIM, [queue, 50, token, 60, 'previous']);
        expect(rows.length).toBe(50);
        const outcomes = await completeManyIfLeaseHeld(
          client,
          rows.map((r) => ({ id: r.id, leaseToken: token })),
        );
        expect(outcomes.every((o) => o.applied)).toBe(true);
        taken += rows.length;
      }
      return taken;
    });
    expect(previous).toBe(200);
    const afterPrevious = await settledScans(0);
    // The witness: the previous release's claim does read the index (so a count that stays
    // put below means this release did not).
    expect(afterPrevious.queueIndex).toBeGreaterThan(start.queueIndex);

    // 2. This release, every statement that touched ready rows through it before: the any-kind
    // claim (one queue, several), the claim by kind, the ready-row triggers (a failure made
    // ready again, a claim), an operator's cancel of a ready job, the testing kit's claim of one
    // job, the dashboard's backlog, and a worker's drain with its maintenance.
    const runs = new Map<string, number>();
    const handlers = KINDS.map((kind) =>
      defineHandler({
        kind,
        versions: [1],
        schema: z.unknown(),
        timeoutMs: 10_000,
        handle: async ({ job }) => {
          runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
        },
      }),
    );
    const registry = new HandlerRegistry(handlers);
    const handle = createDb(t.url, { max: 10, applicationName: 'leasehold-contract' });
    let claims = 0;
    try {
      const one = await claim(handle.db, { queues: [queue], workerId: 'now', limit: 20 });
      const many = await claim(handle.db, { queues: [queue, uniqueQueue('other')], workerId: 'now', limit: 20 });
      const byKind = await claim(handle.db, {
        queues: [queue],
        workerId: 'now',
        limit: 20,
        kinds: [{ kind: KINDS[0], versions: [1] }],
      });
      claims += 3;
      expect([one.length, many.length, byKind.length]).toEqual([20, 20, 20]);
      await completeManyIfLeaseHeld(handle.db, [...one, ...many, ...byKind.slice(1)]);
      const failed = byKind[0]!;
      const retry = await failIfLeaseHeld(handle.db, failed, {
        error: 'once more',
        failureClass: 'transient',
        policy: { baseDelayMs: 0, maxDelayMs: 0 },
      });
      expect(retry).toMatchObject({ applied: true, state: 'ready' });
      const [ready] = await query<{ id: string }>(
        t.url,
        `SELECT id FROM leasehold.jobs WHERE queue = $1 AND state = 'ready' AND id <> $2 LIMIT 1`,
        [queue, failed.id],
      );
      expect(await cancelIfUnchanged(handle.db, { id: ready!.id, actor: 'support@example.com' })).toMatchObject({
        applied: true,
      });
      const [another] = await query<{ id: string }>(
        t.url,
        `SELECT id FROM leasehold.jobs WHERE queue = $1 AND state = 'ready' AND id <> $2 LIMIT 1`,
        [queue, failed.id],
      );
      expect((await runJob(handle.db, registry, another!.id)).state).toBe('done');
      claims += 1;
      expect((await backlog(handle.db)).find((b) => b.queue === queue)).toBeDefined();

      const worker = new Worker(
        workerSettings(queue, `contract-${queue}`, { concurrency: 20, batchSize: 20, pollMs: 50, graceMs: 1000 }),
        { db: handle.db, databaseUrl: t.url, registry, logger: silentLogger },
      );
      await worker.start();
      try {
        await until(
          'the worker drains the queue',
          async () => (await jobStates(queue)).every((s) => s.state === 'done' || s.state === 'cancelled'),
          60_000,
        );
      } finally {
        await worker.stop(0);
      }
      claims += 2;
    } finally {
      await handle.close();
    }
    const afterCurrent = await settledScans(afterPrevious.kindIndex + claims);
    expect(afterCurrent.queueIndex).toBe(afterPrevious.queueIndex);

    // Every job ran once, under either release: done, but for the one cancelled.
    expect(await jobStates(queue)).toEqual([
      { state: 'cancelled', n: 1 },
      { state: 'done', n: 2 * PER_KIND - 1 },
    ]);
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
    // Attempts per job: the cancelled one none, the failed one two, every other one.
    expect(
      await query<{ attempts: number; n: number }>(
        t.url,
        'SELECT attempts, count(*)::int AS n FROM leasehold.jobs WHERE queue = $1 GROUP BY attempts ORDER BY attempts',
        [queue],
      ),
    ).toEqual([
      { attempts: 0, n: 1 },
      { attempts: 1, n: 2 * PER_KIND - 2 },
      { attempts: 2, n: 1 },
    ]);

    // 3. The later release: the contracting migration after the real list.
    const real = readMigrations(MIGRATIONS_FOLDER);
    const name = `${String(real.length).padStart(4, '0')}_leasehold_drop_queue_claim_index`;
    const folder = writeMigrations([
      ...real.map((m) => ({ name: m.name, sql: readFileSync(m.file, 'utf8') })),
      { name, sql: readFileSync(CONTRACTING, 'utf8') },
    ]);
    expect((await migrateDatabase(t.url, { migrationsFolder: folder })).applied).toEqual([name]);
    expect((await migrateDatabase(t.url, { migrationsFolder: folder })).applied).toEqual([]);
    const [gone] = await query<{ present: boolean }>(
      t.url,
      `SELECT to_regclass('leasehold.ready_jobs_claim_idx') IS NOT NULL AS present`,
    );
    expect(gone!.present).toBe(false);

    // The previous release (code version 10, which reads schemas from 10 on) is refused; this
    // one runs (the contracting migration is one version past this code's newest).
    const refused = await schemaCompatibility(t.db, 10, 10);
    expect(refused.ok).toBe(false);
    expect(refused.ok ? '' : refused.reason).toMatch(/too old/);
    expect(await schemaCompatibility(t.db)).toEqual({
      ok: true,
      schemaVersion: SCHEMA_VERSION + 1,
      compatibleFrom: 11,
    });

    const later = uniqueQueue('contracted');
    await enqueueMany(
      t.db,
      KINDS.map((kind) => ({ queue: later, kind })),
      { notify: false },
    );
    const claimed = await claim(t.db, { queues: [later], workerId: 'later', limit: 10 });
    expect(claimed.map((j) => j.kind).sort()).toEqual([...KINDS]);
    await completeManyIfLeaseHeld(t.db, claimed);
    expect(await jobStates(later)).toEqual([{ state: 'done', n: 2 }]);
  }, 120_000);
});
