/**
 * `npm run bench`: Leasehold side by side with pg-boss and graphile-worker (and a bare-SQL
 * ceiling) on one PostgreSQL server, every system on its own fresh database per run, systems
 * interleaved within each case, median of `--runs` (default 3). Prints a markdown table and
 * writes bench-results.json (into `--out DIR`, default bench/results).
 *
 *   npm run bench -- [--runs 3] [--out DIR] [--quick | --smoke] [--cases drain,pickup] [--systems leasehold,pg-boss]
 *
 * `--smoke` (CI: `--smoke --runs 1`) runs every case and system once on the tiniest sizes that
 * still exercise them (a heartbeat still falls in the hold window): it proves the benchmark
 * runs end to end, its figures mean nothing.
 *
 * Started through bench/main.ts, which runs it under a Node >= 22.18 binary (the anchors need it).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { selectDatabase } from '../cli/database-select.ts';
import { createScratchDatabase } from '../test/scratch-database.ts';
import { PROJECT_DIR } from '../cli/database-select.ts';
import { COST_VARIANTS, costLoop, type CostVariant } from './costs.ts';
import {
  FAIR_SLOTS,
  groupedClaimLatency,
  leaseholdFairness,
  PG_BOSS_GROUP_CONCURRENCY,
  pgBossFairness,
} from './fairness.ts';
import { claimThroughput, dashboardTimes, historyDatabase } from './history.ts';
import { HOT_TABLES, heldHorizon, priorityJump, steadyBacklog } from './horizon.ts';
import { forkChild, median, percentile, round, sleep } from './lib.ts';
import { waitLatencies } from './wait.ts';
import { enqueueMany, setGroupLimit } from '../db/queue/index.ts';
import {
  ANCHORS,
  GROUPED_DRAIN,
  LIMITED_DRAIN_MAX,
  QUEUE,
  RATED_DRAIN,
  SYSTEMS,
  type BenchSystem,
  type HoldOptions,
  type SystemName,
  type WorkerMode,
} from './systems/index.ts';
import {
  SERVER_CPU_GROUP_TEXT,
  SERVER_CPU_GROUPS,
  type ServerCpuSpent,
  walBreakdown,
  watchServerCost,
} from './server-cpu.ts';

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    out: { type: 'string', default: path.join(PROJECT_DIR, 'bench', 'results') },
    quick: { type: 'boolean', default: false },
    smoke: { type: 'boolean', default: false },
    cases: { type: 'string' },
    systems: { type: 'string' },
    sizes: { type: 'string' },
  },
});

const SMOKE = args.smoke;
const QUICK = args.quick || SMOKE;
const RUNS = Math.max(1, Number(args.runs));
/** Full sizes, then --quick's, then --smoke's. */
const pick = (full: number, quick: number, smoke: number) => (SMOKE ? smoke : QUICK ? quick : full);
const SIZE = {
  single: pick(10_000, 300, 50),
  /** waitForJob latency samples (bench/wait.ts). */
  waits: pick(500, 100, 20),
  bulk: pick(100_000, 2_000, 200),
  drain: pick(100_000, 2_000, 200),
  pickupMs: pick(20_000, 2_000, 300),
  pickupIntervalMs: 10,
  /** The heartbeat-heavy case: `holdJobs` in flight for `holdMs` on a `holdLeaseSeconds` lease. */
  holdJobs: pick(2_000, 200, 20),
  // Smoke: pg-boss takes no heartbeat under 10 s; beats every 4 s fall twice in the window.
  holdMs: pick(60_000, 25_000, 13_000),
  holdLeaseSeconds: pick(30, 30, 12),
  /** The held-horizon case: rounds of `horizonRound` jobs, drained back to back. */
  horizonRounds: pick(6, 6, 2),
  horizonRound: pick(20_000, 2_000, 200),
  /** The priority jump: priority-100 jobs enqueued every 100 ms while a worker drains a backlog. */
  priorityBacklog: pick(100_000, 20_000, 2_000),
  prioritySamples: pick(200, 50, 20),
  priorityConcurrency: pick(50, 20, 10),
  /** The never-empty backlog under a held horizon: `steadyBacklog` jobs kept ready for `steadySeconds`. */
  steadySeconds: pick(600, 120, 5),
  steadyBacklog: pick(20_000, 5_000, 1_000),
  /** The bursty pickup case: `burst` jobs in one statement every `burstIntervalMs`. */
  burst: pick(100, 100, 10),
  burstIntervalMs: 100,
  history: pick(1_000_000, 20_000, 2_000),
  claimJobs: pick(20_000, 2_000, 200),
  costJobs: pick(50_000, 2_000, 500),
  /** The fairness case: group A's flood, before B…K's 10 jobs each. */
  fairFlood: pick(100_000, 5_000, 500),
  /** …and how long B…K's jobs are waited for (a job still waiting then counts its wait so far). */
  fairCapMs: pick(120_000, 30_000, 5_000),
};
// --sizes drain=20000,single=2000: override sizes (for profiling one case; not for published figures)
for (const pair of args.sizes?.split(',') ?? []) {
  const [key, value] = pair.split('=') as [keyof typeof SIZE, string];
  if (!(key in SIZE) || !Number.isFinite(Number(value))) throw new Error(`--sizes: unknown size ${pair}`);
  SIZE[key] = Number(value);
}
const wantedCases = args.cases
  ?.split(',')
  .map((c) => c.trim())
  .filter(Boolean);
const wantedSystems = (args.systems?.split(',').map((s) => s.trim()) ?? Object.keys(SYSTEMS)) as SystemName[];
const want = (group: string) => !wantedCases || wantedCases.some((c) => group.startsWith(c) || c.startsWith(group));

interface CaseResult {
  name: string;
  description: string;
  unit: string;
  higherIsBetter: boolean;
  samples: Partial<Record<SystemName, number[]>>;
  notes: Partial<Record<SystemName, string>>;
}
const results = new Map<string, CaseResult>();

function record(name: string, meta: Omit<CaseResult, 'name' | 'samples' | 'notes'>, system: SystemName, value: number) {
  let entry = results.get(name);
  if (!entry) results.set(name, (entry = { name, ...meta, samples: {}, notes: {} }));
  (entry.samples[system] ??= []).push(value);
}
const failures: string[] = [];
/** Runs one measurement; a failure is logged, noted in the results and the run goes on. */
async function measured<T>(
  name: string,
  meta: Omit<CaseResult, 'name' | 'samples' | 'notes'>,
  system: SystemName,
  work: () => Promise<T>,
): Promise<T | undefined> {
  try {
    return await work();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    log(`${name} ${system} FAILED: ${message}`);
    failures.push(`${name} ${system}: ${message}`);
    note(name, meta, system, `failed: ${message}`);
    return undefined;
  }
}

function note(name: string, meta: Omit<CaseResult, 'name' | 'samples' | 'notes'>, system: SystemName, text: string) {
  let entry = results.get(name);
  if (!entry) results.set(name, (entry = { name, ...meta, samples: {}, notes: {} }));
  entry.notes[system] = text;
}

function packageVersion(name: string): string {
  return (
    JSON.parse(readFileSync(path.join(PROJECT_DIR, 'node_modules', name, 'package.json'), 'utf8')) as {
      version: string;
    }
  ).version;
}

const log = (line: string) => console.error(`[bench] ${line}`);

// ---------------------------------------------------------------------------------------------

const server = await selectDatabase({
  databaseUrl: process.env.DATABASE_URL,
  dataDir: path.join(PROJECT_DIR, '.leasehold', 'bench-server'),
  database: 'postgres',
  log,
});
const admin = new pg.Client({ connectionString: server.url });
await admin.connect();
const serverVersion = (await admin.query<{ v: string }>(`SELECT current_setting('server_version') AS v`)).rows[0]!.v;
const serverSettings = (
  await admin.query<{ name: string; setting: string }>(
    `SELECT name, setting FROM pg_settings WHERE name IN ('shared_buffers', 'fsync', 'synchronous_commit', 'max_connections') ORDER BY name`,
  )
).rows;
await admin.end();

async function freshDatabase(system: BenchSystem) {
  const db = await createScratchDatabase(server.url, `bench_${system.name.replace('-', '_')}`);
  await system.install(db.url);
  return db;
}

/** Each repetition starts with a different system, so no system always runs first. */
function rotation<T>(items: T[], rep: number): T[] {
  return items.map((_, i) => items[(i + rep) % items.length]!);
}

const chosen = (names: SystemName[]) => names.filter((n) => wantedSystems.includes(n)).map((n) => SYSTEMS[n]);

async function enqueueSingle(system: BenchSystem, total: number, connections: number, wake: boolean): Promise<number> {
  const db = await freshDatabase(system);
  try {
    const enqueuer = await system.enqueuer(db.url, connections, wake);
    try {
      await Promise.all(
        Array.from({ length: connections }, (_, c) =>
          (async () => {
            for (let i = 0; i < 20; i++) await enqueuer.send(-1 - c);
          })(),
        ),
      );
      let next = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: connections }, async () => {
          while (next < total) await enqueuer.send(next++);
        }),
      );
      return total / ((performance.now() - t0) / 1000);
    } finally {
      await enqueuer.close();
    }
  } finally {
    await db.drop();
  }
}

/** Adds `total` jobs through the system's bulk call, 100,000 per call at most. */
async function bulkEnqueue(system: BenchSystem, url: string, total: number): Promise<void> {
  for (let from = 0; from < total; from += 100_000) {
    await system.enqueueBulk(
      url,
      Array.from({ length: Math.min(100_000, total - from) }, (_, i) => from + i),
    );
  }
}

/**
 * The grouped drain's jobs (Leasehold's own enqueueMany, as the bulk enqueue's): job `seq` in
 * group `g<seq mod GROUPED_DRAIN.groups>`, each group under a maximum of GROUPED_DRAIN.max.
 */
async function groupedBulkEnqueue(url: string, total: number): Promise<void> {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  try {
    await setGroupLimit(pool, { queue: QUEUE, max: GROUPED_DRAIN.max, actor: 'bench' });
    for (let from = 0; from < total; from += 20_000) {
      await enqueueMany(
        pool,
        Array.from({ length: Math.min(20_000, total - from) }, (_, i) => ({
          queue: QUEUE,
          kind: 'bench.noop',
          payload: { seq: from + i },
          group: `g${(from + i) % GROUPED_DRAIN.groups}`,
        })),
      );
    }
  } finally {
    await pool.end();
  }
}

async function enqueueBulk(system: BenchSystem, total: number): Promise<number> {
  const db = await freshDatabase(system);
  try {
    await bulkEnqueue(system, db.url, 100); // warm-up: first-call planning and connection set-up
    const t0 = performance.now();
    await bulkEnqueue(system, db.url, total);
    return total / ((performance.now() - t0) / 1000);
  } finally {
    await db.drop();
  }
}

/** A drain's rate and what each job cost the machine (see machineBusyMs). */
interface DrainFigures {
  jobsPerSecond: number;
  /**
   * The rated drain only: starts per second after the first window's, from the first start to
   * the last (what the rate bounds; jobs/s also counts the first window's, which start at once).
   */
  startsPerSecond?: number;
  /** CPU time of the worker processes per job, µs. */
  workerCpuUs: number;
  /** The rest of this machine's CPU time per job, µs: the database server when it runs here. */
  otherCpuUs: number;
  /** WAL the server wrote per job, bytes. */
  walBytes: number;
  /**
   * The database server's CPU per job, µs, read from its own processes (bench/server-cpu.ts):
   * client backends, autovacuum, the background processes (checkpointer, writers, postmaster),
   * processes that ended unseen; null when the server's /proc is not readable from here.
   */
  serverCpuUs: ServerCpuSpent | null;
}

/** CPU time all cores of this machine spent busy since boot, ms (os.cpus(), so any OS). */
function machineBusyMs(): number {
  return os.cpus().reduce((sum, { times }) => sum + times.user + times.nice + times.sys + times.irq, 0);
}

async function drain(
  system: BenchSystem,
  total: number,
  processes: number,
  mode: 'drain' | 'drain-limited' | 'drain-rated' | 'drain-grouped' = 'drain',
): Promise<DrainFigures> {
  const db = await freshDatabase(system);
  const client = new pg.Client({ connectionString: db.url });
  try {
    if (mode === 'drain-grouped') await groupedBulkEnqueue(db.url, total);
    else await bulkEnqueue(system, db.url, total);
    await client.connect();
    await client.query('VACUUM ANALYZE');
    const children = await Promise.all(Array.from({ length: processes }, () => forkChild([system.name, mode, db.url])));
    try {
      const handled = Array.from({ length: processes }, () => 0);
      let allHandled: () => void = () => {};
      const handledAll = new Promise<void>((resolve) => (allHandled = resolve));
      children.forEach((child, i) =>
        child.onMessage((m) => {
          if (m.type !== 'handled') return;
          handled[i] = m.total as number;
          if (handled.reduce((a, b) => a + b, 0) >= total) allHandled();
        }),
      );
      const childCpuUs = async () => (await Promise.all(children.map((c) => c.cpuMicros()))).reduce((a, b) => a + b, 0);
      const server = await watchServerCost(client);
      const cpu0 = await childCpuUs();
      const own0 = process.cpuUsage();
      const busy0 = machineBusyMs();
      const t0 = performance.now();
      for (const child of children) child.process.send({ type: 'go' });
      await Promise.race([handledAll, ...children.map((c) => c.crashed)]);
      // Handlers ran; the drain ends when the queue says every job is settled.
      while ((await client.query<{ n: number }>(system.unsettledSql)).rows[0]!.n > 0) await sleep(5);
      const jobsPerSecond = total / ((performance.now() - t0) / 1000);
      const busyUs = (machineBusyMs() - busy0) * 1000;
      const own = process.cpuUsage(own0);
      const workerUs = (await childCpuUs()) - cpu0;
      const cost = await server.stop();
      // The rated drain's own figure: the starts after the first window's, over the time from the
      // first start to the last (jobs' started_at, each its claim statement's time). The rate
      // bounds it by RATED_DRAIN; the first window's starts come at once, so jobs/s overshoots.
      // None when every job fits in the first window (--smoke's sizes).
      let startsPerSecond: number | undefined;
      if (mode === 'drain-rated' && total > RATED_DRAIN.max) {
        const span = await client.query<{ s: string }>(
          `SELECT extract(epoch FROM max(started_at) - min(started_at)) AS s FROM leasehold.jobs`,
        );
        const seconds = Number(span.rows[0]?.s);
        if (seconds > 0) startsPerSecond = (total - RATED_DRAIN.max) / seconds;
      }
      return {
        jobsPerSecond,
        ...(startsPerSecond === undefined ? {} : { startsPerSecond }),
        workerCpuUs: workerUs / total,
        otherCpuUs: Math.max(0, busyUs - workerUs - own.user - own.system) / total,
        walBytes: cost.walBytes / total,
        serverCpuUs: cost.cpu
          ? (Object.fromEntries(
              Object.entries(cost.cpu).map(([k, v]) => [k, v / total]),
            ) as DrainFigures['serverCpuUs'])
          : null,
      };
    } finally {
      await Promise.all(children.map((c) => c.stop()));
    }
  } finally {
    await client.end().catch(() => {});
    await db.drop();
  }
}

async function pickup(
  system: BenchSystem,
  mode: WorkerMode,
  burst = 1,
): Promise<{ p50: number; p95: number; p99: number; missing: number }> {
  const db = await freshDatabase(system);
  try {
    const settleMs = mode === 'poll' ? 5000 : 3000;
    const child = await forkChild([
      system.name,
      mode,
      db.url,
      JSON.stringify({
        durationMs: SIZE.pickupMs,
        intervalMs: burst === 1 ? SIZE.pickupIntervalMs : SIZE.burstIntervalMs,
        settleMs,
        burst,
      }),
    ]);
    try {
      child.process.send({ type: 'go' });
      const { delays, missing } = await child.next<{ delays: number[]; missing: number }>('pickup');
      return { p50: percentile(delays, 50), p95: percentile(delays, 95), p99: percentile(delays, 99), missing };
    } finally {
      await child.stop();
    }
  } finally {
    await db.drop();
  }
}

/** A job's whole life on the server: enqueue, drain, retention and the VACUUM after, per job. */
interface LifecycleFigures {
  walBytes: number;
  serverCpuUs: number | null;
  /** The bench's own CPU (enqueue, retention) and the worker's, per job. */
  clientCpuUs: number;
}

async function lifecycle(system: BenchSystem, total: number): Promise<LifecycleFigures> {
  const db = await freshDatabase(system);
  const client = new pg.Client({ connectionString: db.url });
  try {
    await client.connect();
    const child = await forkChild([system.name, 'drain', db.url]);
    try {
      let handled = 0;
      let allHandled: () => void = () => {};
      const handledAll = new Promise<void>((resolve) => (allHandled = resolve));
      child.onMessage((m) => {
        if (m.type !== 'handled') return;
        handled = m.total as number;
        if (handled >= total) allHandled();
      });
      const server = await watchServerCost(client);
      const own0 = process.cpuUsage();
      const worker0 = await child.cpuMicros();
      await bulkEnqueue(system, db.url, total);
      child.process.send({ type: 'go' });
      await Promise.race([handledAll, child.crashed]);
      while ((await client.query<{ n: number }>(system.unsettledSql)).rows[0]!.n > 0) await sleep(5);
      const workerUs = (await child.cpuMicros()) - worker0;
      await child.stop();
      await system.retain(db.url);
      const stored = (await client.query<{ n: number }>(system.storedSql)).rows[0]!.n;
      if (stored > 0) throw new Error(`${system.name}: ${stored} job rows left after its retention`);
      await client.query('VACUUM');
      const cost = await server.stop();
      const own = process.cpuUsage(own0);
      return {
        walBytes: cost.walBytes / total,
        serverCpuUs: cost.cpu ? cost.cpu.total / total : null,
        clientCpuUs: (workerUs + own.user + own.system) / total,
      };
    } finally {
      await child.stop().catch(() => {});
    }
  } finally {
    await client.end().catch(() => {});
    await db.drop();
  }
}

/** What one heartbeat cost, from the window in which every job waited in its handler. */
interface HoldFigures {
  /** Rows the beats wrote in the window (evidence they happened; a beat may write one row for many jobs). */
  beats: number;
  walPerBeat: number;
  /** WAL in the window ÷ (jobs in flight × minutes): what keeping one job's lease costs a minute. */
  walPerJobMinute: number;
  /** CPU in the window ÷ (jobs in flight × minutes), like walPerJobMinute. */
  serverCpuPerJobMinute: number | null;
  workerCpuPerJobMinute: number;
}

async function heartbeatHeavy(system: BenchSystem, claimBatch?: number): Promise<HoldFigures> {
  const hold = system.hold!;
  const db = await freshDatabase(system);
  const client = new pg.Client({ connectionString: db.url });
  try {
    await bulkEnqueue(system, db.url, SIZE.holdJobs);
    await client.connect();
    await client.query('VACUUM ANALYZE');
    const options: HoldOptions = {
      concurrency: SIZE.holdJobs,
      holdMs: SIZE.holdMs,
      leaseSeconds: SIZE.holdLeaseSeconds,
      beatSeconds: SIZE.holdLeaseSeconds / 3,
      ...(claimBatch !== undefined ? { claimBatch } : {}),
    };
    const child = await forkChild([system.name, 'hold', db.url, JSON.stringify(options)]);
    try {
      let started = 0;
      let allStarted: () => void = () => {};
      const startedAll = new Promise<void>((resolve) => (allStarted = resolve));
      child.onMessage((m) => {
        if (m.type !== 'started') return;
        started = m.total as number;
        if (started >= SIZE.holdJobs) allStarted();
      });
      const t0 = performance.now();
      child.process.send({ type: 'go' });
      await Promise.race([startedAll, child.crashed, sleep(SIZE.holdMs / 2)]);
      if (started < SIZE.holdJobs)
        throw new Error(`only ${started} of ${SIZE.holdJobs} jobs started within ${SIZE.holdMs / 2} ms`);
      // The window: from every job waiting until shortly before the first handler returns.
      // What the claims left behind (dead rows, statistics out of date) is vacuumed and analyzed
      // first, so autovacuum does not do it inside the window: the window counts the beats and
      // what they cause, not the claim burst before them. Backends report their counts when
      // they go idle, at most once a second: wait for that, or the counts of the last claims
      // arrive after the ANALYZE and set off an autoanalyze inside the window.
      await sleep(1500);
      await client.query('VACUUM ANALYZE');
      const windowMs = SIZE.holdMs - (performance.now() - t0) - 3000;
      const beatsNow = async () => Number((await client.query<{ n: string }>(hold.beatTablesSql)).rows[0]!.n);
      const server = await watchServerCost(client);
      const [beats0, cpu0] = [await beatsNow(), await child.cpuMicros()];
      await sleep(windowMs);
      const workerUs = (await child.cpuMicros()) - cpu0;
      const cost = await server.stop();
      // Backends report their counts when they go idle, at most once a second: wait for that.
      await sleep(1500);
      const beats = (await beatsNow()) - beats0;
      if (process.env.BENCH_WAL_DETAIL)
        log(
          `heartbeats ${system.name} window WAL ${cost.walBytes} B\n${await walBreakdown(client, cost.walFrom, cost.walTo)}`,
        );
      if (beats <= 0) throw new Error(`no heartbeat was counted in a ${Math.round(windowMs / 1000)} s window`);
      return {
        beats,
        walPerBeat: cost.walBytes / beats,
        walPerJobMinute: cost.walBytes / SIZE.holdJobs / (windowMs / 60_000),
        serverCpuPerJobMinute: cost.cpu ? cost.cpu.total / SIZE.holdJobs / (windowMs / 60_000) : null,
        workerCpuPerJobMinute: workerUs / SIZE.holdJobs / (windowMs / 60_000),
      };
    } finally {
      await child.stop();
    }
  } finally {
    await client.end().catch(() => {});
    await db.drop();
  }
}

// ---------------------------------------------------------------------------------------------

const ALL = chosen(['leasehold', 'pg-boss', 'graphile-worker', 'bare-sql']);
/** The drain also runs the same-features floor: Leasehold's statements without the worker. */
const DRAINED = chosen(['leasehold', 'pg-boss', 'graphile-worker', 'bare-sql', 'floor']);
const QUEUES = chosen(['leasehold', 'pg-boss', 'graphile-worker']);
const throughput = (description: string) => ({ description, unit: 'jobs/s', higherIsBetter: true });
/** What a drain cost per job (lower is better): explains the drain's figure, no target of its own. */
const perJob = (unit: string, description: string) => ({ description, unit, higherIsBetter: false });
const started = Date.now();

if (want('enqueue')) {
  for (const [name, connections] of [
    ['enqueue-single-1conn', 1],
    ['enqueue-single-8conn', 8],
  ] as const) {
    const meta = throughput(
      `${SIZE.single.toLocaleString('en')} single enqueues, each its own transaction, on ${connections} connection(s); wake-ups as each system does by default (bare-sql: pg_notify on every insert)`,
    );
    for (let rep = 0; rep < RUNS; rep++) {
      for (const system of rotation(ALL, rep)) {
        log(`${name} ${system.name} run ${rep + 1}`);
        const value = await measured(name, meta, system.name, () =>
          enqueueSingle(system, SIZE.single, connections, system.name !== 'pg-boss'),
        );
        if (value !== undefined) record(name, meta, system.name, value);
      }
    }
  }
  const name = 'enqueue-single-8conn-wake-off';
  const meta = throughput(
    `as enqueue-single-8conn with wake-up NOTIFY off (Leasehold: { notify: false }; bare-sql: no pg_notify)`,
  );
  for (const system of ALL) {
    const reason = system.unsupported?.['enqueue-wake-off'];
    if (reason) note(name, meta, system.name, reason);
  }
  const candidates = ALL.filter((s) => !s.unsupported?.['enqueue-wake-off'] && s.name !== 'pg-boss');
  for (let rep = 0; rep < RUNS; rep++) {
    for (const system of rotation(candidates, rep)) {
      log(`${name} ${system.name} run ${rep + 1}`);
      const value = await measured(name, meta, system.name, () => enqueueSingle(system, SIZE.single, 8, false));
      if (value !== undefined) record(name, meta, system.name, value);
    }
  }
  if (wantedSystems.includes('pg-boss'))
    note(name, meta, 'pg-boss', 'notify is off by default: its figure is enqueue-single-8conn');
  const bulk = throughput(`${SIZE.bulk.toLocaleString('en')} jobs in one bulk call on one connection`);
  for (let rep = 0; rep < RUNS; rep++) {
    for (const system of rotation(ALL, rep)) {
      log(`enqueue-bulk ${system.name} run ${rep + 1}`);
      const value = await measured('enqueue-bulk', bulk, system.name, () => enqueueBulk(system, SIZE.bulk));
      if (value !== undefined) record('enqueue-bulk', bulk, system.name, value);
    }
  }
}

if (want('drain')) {
  for (const [name, processes] of [
    ['drain-1proc', 1],
    ['drain-4proc', 4],
  ] as const) {
    const meta = throughput(
      `${SIZE.drain.toLocaleString('en')} pre-enqueued no-op jobs, ${processes} worker process(es); from "go" until every job is settled`,
    );
    for (let rep = 0; rep < RUNS; rep++) {
      for (const system of rotation(DRAINED, rep)) {
        log(`${name} ${system.name} run ${rep + 1}`);
        const figures = await measured(name, meta, system.name, () => drain(system, SIZE.drain, processes));
        if (!figures) continue;
        record(name, meta, system.name, figures.jobsPerSecond);
        record(
          `${name}-worker-cpu`,
          perJob('µs/job', `CPU time of the worker process(es) per job in ${name}`),
          system.name,
          figures.workerCpuUs,
        );
        record(
          `${name}-other-cpu`,
          perJob(
            'µs/job',
            `the rest of this machine's CPU time per job in ${name}: the database server when it runs here, and anything else that runs meanwhile`,
          ),
          system.name,
          figures.otherCpuUs,
        );
        if (figures.serverCpuUs) {
          const { total, ...groups } = figures.serverCpuUs;
          record(
            `${name}-server-cpu`,
            perJob('µs/job', `the database server's CPU per job in ${name}, read from its processes' /proc times`),
            system.name,
            total,
          );
          for (const group of SERVER_CPU_GROUPS) {
            record(
              `${name}-server-cpu-${group}`,
              perJob('µs/job', `the database server's CPU per job in ${name}: ${SERVER_CPU_GROUP_TEXT[group]}`),
              system.name,
              groups[group],
            );
          }
        }
        record(
          `${name}-wal`,
          perJob('bytes/job', `WAL the whole server wrote per job in ${name} (other databases' writes count too)`),
          system.name,
          figures.walBytes,
        );
      }
    }
  }
}

/** The database server's CPU per job of a drain (in all and by group) and its workers', as figures of `name`. */
function recordDrainCpu(name: string, systemName: SystemName, figures: DrainFigures): void {
  if (figures.serverCpuUs) {
    const { total, ...groups } = figures.serverCpuUs;
    record(
      `${name}-server-cpu`,
      perJob('µs/job', `the database server's CPU per job in ${name}, read from its processes' /proc times`),
      systemName,
      total,
    );
    for (const group of SERVER_CPU_GROUPS)
      record(
        `${name}-server-cpu-${group}`,
        perJob('µs/job', `the database server's CPU per job in ${name}: ${SERVER_CPU_GROUP_TEXT[group]}`),
        systemName,
        groups[group],
      );
  }
  record(
    `${name}-worker-cpu`,
    perJob('µs/job', `CPU time of the worker process(es) per job in ${name}`),
    systemName,
    figures.workerCpuUs,
  );
}

/**
 * Leasehold alone: the drain with its handler under `limit` (a concurrency limit or a rate),
 * with 1 and 4 worker processes, beside the plain drain of the same run (docs/flow-control.md).
 */
async function flowControlledDrains(
  mode: 'drain-limited' | 'drain-rated' | 'drain-grouped',
  limit: string,
): Promise<void> {
  const systems = chosen(['leasehold']).filter((s) => s.settings[mode] !== undefined);
  for (const processes of [1, 4]) {
    const name = `${mode}-${processes}proc`;
    const meta = throughput(
      `${SIZE.drain.toLocaleString('en')} pre-enqueued no-op jobs ${mode === 'drain-grouped' ? limit : `of a kind under limit: ${limit}`}, ${processes} worker process(es); from "go" until every job is settled`,
    );
    for (let rep = 0; rep < RUNS; rep++) {
      for (const system of systems) {
        log(`${name} ${system.name} run ${rep + 1}`);
        const figures = await measured(name, meta, system.name, () => drain(system, SIZE.drain, processes, mode));
        if (!figures) continue;
        record(name, meta, system.name, figures.jobsPerSecond);
        if (figures.startsPerSecond !== undefined)
          record(
            `${name}-starts`,
            throughput(
              `starts per second in ${name} after the first window's ${RATED_DRAIN.max.toLocaleString('en')}, from the first start to the last (the rate allows ${RATED_DRAIN.max.toLocaleString('en')})`,
            ),
            system.name,
            figures.startsPerSecond,
          );
        recordDrainCpu(name, system.name, figures);
      }
    }
  }
}

if (want('drain-limited')) await flowControlledDrains('drain-limited', `{ max: ${LIMITED_DRAIN_MAX} }`);
// The rate bounds it: the figure to read is how near it comes.
if (want('drain-rated'))
  await flowControlledDrains(
    'drain-rated',
    `{ rate: { max: ${RATED_DRAIN.max}, perMs: ${RATED_DRAIN.perMs} } } (at most ${RATED_DRAIN.max.toLocaleString('en')} starts in any ${RATED_DRAIN.perMs} ms, every process together)`,
  );

if (want('drain-grouped'))
  await flowControlledDrains(
    'drain-grouped',
    `in ${GROUPED_DRAIN.groups.toLocaleString('en')} fair groups, each group at most ${GROUPED_DRAIN.max} running (every process together)`,
  );

if (want('wait')) {
  // bench/wait.ts: from an awaitable job's acknowledgement to waitForJob's return.
  const what =
    "waitForJob: from the acknowledgement of an awaitable job (its statement returned) to the waiting caller's return with the result, one job at a time";
  for (let rep = 0; rep < RUNS; rep++) {
    const system = chosen(['leasehold'])[0];
    if (!system) break;
    log(`wait leasehold run ${rep + 1}`);
    const db = await freshDatabase(system);
    try {
      const latencies = await measured('wait', perJob('ms', what), 'leasehold', () =>
        waitLatencies(db.url, SIZE.waits),
      );
      if (latencies) {
        record('wait-p50', perJob('ms', `p50 of ${what}`), 'leasehold', percentile(latencies, 50));
        record('wait-p99', perJob('ms', `p99 of ${what}`), 'leasehold', percentile(latencies, 99));
      }
    } finally {
      await db.drop();
    }
  }
}

if (want('fairness')) {
  // bench/fairness.ts: B…K's waits behind A's flood, with their groups and without.
  const what = `B…K's 10 jobs each, enqueued while one worker of ${FAIR_SLOTS} slots drains group A's ${SIZE.fairFlood.toLocaleString('en')} (2 ms handlers): wait from enqueue to start`;
  const runs = { leasehold: leaseholdFairness, 'pg-boss': pgBossFairness } as const;
  for (let rep = 0; rep < RUNS; rep++) {
    for (const system of rotation(chosen(['leasehold', 'pg-boss']), rep)) {
      for (const grouped of [false, true]) {
        const how = grouped
          ? system.name === 'pg-boss'
            ? `jobs sent with group: { id }, worked with groupConcurrency: ${PG_BOSS_GROUP_CONCURRENCY}`
            : 'jobs enqueued with group (turns between groups)'
          : 'no groups';
        const name = `fairness-${grouped ? 'groups' : 'none'}`;
        const metas = {
          p50: { description: `p50 of ${what}; ${how}`, unit: 'ms', higherIsBetter: false },
          p99: { description: `p99 of ${what}; ${how}`, unit: 'ms', higherIsBetter: false },
        };
        log(`${name} ${system.name} run ${rep + 1}`);
        const db = await freshDatabase(system);
        try {
          const run = runs[system.name as keyof typeof runs];
          const figures = await measured(`${name}-p50`, metas.p50, system.name, () =>
            run(db.url, { flood: SIZE.fairFlood, capMs: SIZE.fairCapMs }, grouped),
          );
          if (!figures) continue;
          record(`${name}-p50`, metas.p50, system.name, round(figures.p50));
          record(`${name}-p99`, metas.p99, system.name, round(figures.p99));
          if (figures.waiting > 0)
            note(
              `${name}-p99`,
              metas.p99,
              system.name,
              `${figures.waiting} of 100 not started after ${SIZE.fairCapMs / 1000} s: their waits so far are counted (lower bounds)`,
            );
        } finally {
          await db.drop();
        }
      }
    }
  }
}

if ((want('fairness') || want('group-claim')) && wantedSystems.includes('leasehold')) {
  // A grouped claim's latency as the groups holding ready jobs grow (Leasehold alone: turns).
  const counts = SMOKE ? [10, 1_000] : [10, 1_000, 100_000];
  for (let rep = 0; rep < RUNS; rep++) {
    for (const groups of counts) {
      const name = `group-claim-${groups}`;
      const meta = {
        description: `median of 50 grouped claims of ${FAIR_SLOTS}, one after another, with ${groups.toLocaleString('en')} groups holding a ready job each`,
        unit: 'ms',
        higherIsBetter: false,
      };
      log(`${name} leasehold run ${rep + 1}`);
      const db = await freshDatabase(SYSTEMS.leasehold);
      try {
        const ms = await measured(name, meta, 'leasehold', () => groupedClaimLatency(db.url, groups));
        if (ms !== undefined) record(name, meta, 'leasehold', round(ms));
      } finally {
        await db.drop();
      }
    }
  }
}

if (want('lifecycle')) {
  const what = `${SIZE.drain.toLocaleString('en')} jobs: bulk enqueue, drain by 1 worker process, the system's retention of the finished jobs, then VACUUM`;
  const metas = {
    wal: perJob('bytes/job', `WAL of a job's whole life: ${what}`),
    server: perJob('µs/job', `the database server's CPU for a job's whole life: ${what}`),
    client: perJob('µs/job', `the bench's and the worker's CPU for a job's whole life: ${what}`),
  };
  for (let rep = 0; rep < RUNS; rep++) {
    for (const system of rotation(DRAINED, rep)) {
      log(`lifecycle ${system.name} run ${rep + 1}`);
      const figures = await measured('lifecycle-wal', metas.wal, system.name, () => lifecycle(system, SIZE.drain));
      if (!figures) continue;
      record('lifecycle-wal', metas.wal, system.name, figures.walBytes);
      if (figures.serverCpuUs !== null) record('lifecycle-server-cpu', metas.server, system.name, figures.serverCpuUs);
      record('lifecycle-client-cpu', metas.client, system.name, figures.clientCpuUs);
    }
  }
}

if (want('heartbeats')) {
  const what = `${SIZE.holdJobs.toLocaleString('en')} jobs in flight for ${SIZE.holdMs / 1000} s on a ${SIZE.holdLeaseSeconds} s lease, beats due every ${SIZE.holdLeaseSeconds / 3} s`;
  const metas = {
    wal: perJob('bytes/beat', `WAL per row a heartbeat wrote: ${what}`),
    jobMinute: perJob('bytes/job/min', `WAL per running job per minute (WAL in the window ÷ jobs × minutes): ${what}`),
    jobMinuteOneJob: perJob(
      'bytes/job/min',
      `WAL per running job per minute with one-job claims (--batch-size 1): ${what}`,
    ),
    // Per job in flight and minute, not per row written: a worker-lease beat writes one row for all.
    server: perJob('µs/job/min', `the database server's CPU in the window per running job per minute: ${what}`),
    worker: perJob('µs/job/min', `the worker process's CPU in the window per running job per minute: ${what}`),
    beats: {
      description: `rows the heartbeats wrote per job in flight, in the window (one a beat per job for a per-job beat): ${what}`,
      unit: 'rows/job',
      higherIsBetter: false,
    },
  };
  for (const system of QUEUES) {
    const reason = system.hold ? undefined : system.unsupported?.hold;
    if (reason)
      for (const key of ['wal', 'server', 'worker'] as const)
        note(`heartbeats-${key}`, metas[key], system.name, reason);
  }
  const runnable = QUEUES.filter((s) => s.hold);
  for (let rep = 0; rep < RUNS; rep++) {
    for (const system of rotation(runnable, rep)) {
      log(`heartbeats ${system.name} run ${rep + 1}`);
      const figures = await measured('heartbeats-wal', metas.wal, system.name, () => heartbeatHeavy(system));
      if (!figures) continue;
      record('heartbeats-wal', metas.wal, system.name, figures.walPerBeat);
      record('heartbeats-wal-job-minute', metas.jobMinute, system.name, figures.walPerJobMinute);
      if (system.name === 'leasehold') {
        log(`heartbeats leasehold one-job claims run ${rep + 1}`);
        const single = await measured('heartbeats-wal-job-minute-1job', metas.jobMinuteOneJob, system.name, () =>
          heartbeatHeavy(system, 1),
        );
        if (single)
          record('heartbeats-wal-job-minute-1job', metas.jobMinuteOneJob, system.name, single.walPerJobMinute);
      }
      if (figures.serverCpuPerJobMinute !== null)
        record('heartbeats-server', metas.server, system.name, figures.serverCpuPerJobMinute);
      record('heartbeats-worker', metas.worker, system.name, figures.workerCpuPerJobMinute);
      record('heartbeats-per-job', metas.beats, system.name, figures.beats / SIZE.holdJobs);
    }
  }
}

if (want('pickup')) {
  const how = {
    listen: 'LISTEN/NOTIFY on',
    'listen-async-claims': "LISTEN/NOTIFY on, Leasehold's claims without waiting for their WAL flush (--async-claims)",
    poll: 'polling only',
  } as const;
  const shapes = [
    ...(['listen', 'listen-async-claims', 'poll'] as const).map((mode) => ({
      mode,
      name: mode as string,
      burst: 1,
      what: `one job every ${SIZE.pickupIntervalMs} ms`,
    })),
    ...(['listen', 'listen-async-claims'] as const).map((mode) => ({
      mode,
      name: `burst-${mode}`,
      burst: SIZE.burst,
      what: `${SIZE.burst} jobs in one statement every ${SIZE.burstIntervalMs} ms`,
    })),
  ];
  for (const { mode, name: shape, burst, what } of shapes) {
    const base = `${what} for ${SIZE.pickupMs / 1000} s to an idle worker, enqueue commit to handler start, ${how[mode]}`;
    const metas = Object.fromEntries(
      (['p50', 'p95', 'p99'] as const).map((p) => [
        p,
        { description: `${p} of ${base}`, unit: 'ms', higherIsBetter: false },
      ]),
    ) as Record<'p50' | 'p95' | 'p99', Omit<CaseResult, 'name' | 'samples' | 'notes'>>;
    // A mode one system alone has (no settings elsewhere) is n/a for the others.
    const why = (s: BenchSystem) =>
      s.unsupported?.[mode] ??
      (s.settings[mode] === undefined ? "no such mode (compare with this system's pickup-listen)" : undefined);
    for (const system of QUEUES) {
      const reason = why(system);
      if (reason)
        for (const p of ['p50', 'p95', 'p99'] as const) note(`pickup-${shape}-${p}`, metas[p], system.name, reason);
    }
    const runnable = QUEUES.filter((s) => !why(s));
    for (let rep = 0; rep < RUNS; rep++) {
      for (const system of rotation(runnable, rep)) {
        log(`pickup-${shape} ${system.name} run ${rep + 1}`);
        const figures = await measured(`pickup-${shape}-p99`, metas.p99, system.name, () =>
          pickup(system, mode, burst),
        );
        if (!figures) continue;
        if (figures.missing > 0) log(`  ${figures.missing} jobs did not start within the settle time`);
        for (const p of ['p50', 'p95', 'p99'] as const)
          record(`pickup-${shape}-${p}`, metas[p], system.name, figures[p]);
      }
    }
  }
}

if (want('costs') && wantedSystems.includes('leasehold')) {
  const variants = Object.keys(COST_VARIANTS) as CostVariant[];
  for (let rep = 0; rep < RUNS; rep++) {
    for (const variant of rotation(variants, rep)) {
      log(`costs ${variant} run ${rep + 1}`);
      const db = await createScratchDatabase(server.url, 'bench_costs');
      try {
        const slug = variant.replace(/[^a-z]+/g, '-');
        const description = `claim + acknowledge loop only (2 loops, batches of 500, ${SIZE.costJobs.toLocaleString('en')} jobs), ${variant}: ${COST_VARIANTS[variant]}`;
        record(`costs-${slug}`, throughput(description), 'leasehold', await costLoop(db.url, variant, SIZE.costJobs));
      } finally {
        await db.drop();
      }
    }
  }
}

if (want('horizon') && wantedSystems.includes('leasehold')) {
  const what = (held: boolean) =>
    `${SIZE.horizonRounds} rounds of ${SIZE.horizonRound.toLocaleString('en')} jobs (bulk enqueue, claims of 500 as a worker makes them, with its lower bound, and batched acks until empty), ${held ? 'while another session holds a transaction with an xid' : 'nothing else running'}`;
  for (let rep = 0; rep < RUNS; rep++) {
    for (const held of rep % 2 ? [true, false] : [false, true]) {
      const name = held ? 'horizon-held' : 'horizon-free';
      log(`${name} run ${rep + 1}`);
      const db = await createScratchDatabase(server.url, 'bench_horizon');
      try {
        const figures = await heldHorizon(db.url, { rounds: SIZE.horizonRounds, perRound: SIZE.horizonRound, held });
        const first = figures.rounds[0]!;
        const last = figures.rounds.at(-1)!;
        const ms = (round: string) => ({
          description: `claim p50 in the ${round} round: ${what(held)}`,
          unit: 'ms',
          higherIsBetter: false,
        });
        record(`${name}-claim-p50-first`, ms('first'), 'leasehold', first.claimP50Ms);
        record(`${name}-claim-p50-last`, ms(`last (${SIZE.horizonRounds}th)`), 'leasehold', last.claimP50Ms);
        record(
          `${name}-last-round`,
          throughput(`the last round's drain rate: ${what(held)}`),
          'leasehold',
          last.jobsPerSecond,
        );
        record(
          `${name}-dead-tuples`,
          {
            description: `dead row versions in ${HOT_TABLES.join(', ')} at the end: ${what(held)}`,
            unit: 'rows',
            higherIsBetter: false,
          },
          'leasehold',
          figures.tables.reduce((sum, t) => sum + t.deadTuples, 0),
        );
        record(
          `${name}-hot-bytes`,
          {
            description: `total size of ${HOT_TABLES.join(', ')} (with indexes) at the end: ${what(held)}`,
            unit: 'bytes',
            higherIsBetter: false,
          },
          'leasehold',
          figures.tables.reduce((sum, t) => sum + t.bytes, 0),
        );
        log(
          `  rounds: ${figures.rounds.map((r) => `${Math.round(r.jobsPerSecond)}/s p50 ${r.claimP50Ms.toFixed(2)} ms`).join('; ')}`,
        );
      } finally {
        await db.drop();
      }
    }
  }
}

if (want('priority-jump') && wantedSystems.includes('leasehold')) {
  const HANDLER_MS = 20;
  const EVERY_MS = 100;
  for (let rep = 0; rep < RUNS; rep++) {
    for (const listen of rep % 2 ? [false, true] : [true, false]) {
      const name = `priority-jump-${listen ? 'listen' : 'poll'}`;
      const what = `a priority-100 job enqueued every ${EVERY_MS} ms (${SIZE.prioritySamples} of them) behind a backlog of ${SIZE.priorityBacklog.toLocaleString('en')} jobs that a worker (--concurrency ${SIZE.priorityConcurrency}, handlers of ${HANDLER_MS} ms, ${listen ? 'LISTEN on: the wake-up restarts the walk from the head' : '--no-listen: the bound restarts every second'}) drains: wait from enqueue to claim (database clock)`;
      log(`${name} run ${rep + 1}`);
      const db = await createScratchDatabase(server.url, 'bench_priority');
      try {
        const figures = await measured(name, perJob('ms', what), 'leasehold', () =>
          priorityJump(db.url, {
            backlog: SIZE.priorityBacklog,
            samples: SIZE.prioritySamples,
            everyMs: EVERY_MS,
            concurrency: SIZE.priorityConcurrency,
            handlerMs: HANDLER_MS,
            listen,
          }),
        );
        if (figures) {
          record(`${name}-p99`, perJob('ms', `p99 of ${what}`), 'leasehold', percentile(figures.waitsMs, 99));
          record(`${name}-p50`, perJob('ms', `p50 of ${what}`), 'leasehold', percentile(figures.waitsMs, 50));
          log(
            `  waits p50 ${percentile(figures.waitsMs, 50).toFixed(0)} ms, p99 ${percentile(figures.waitsMs, 99).toFixed(0)} ms, max ${Math.max(...figures.waitsMs).toFixed(0)} ms; backlog left ${figures.backlogLeft}`,
          );
        }
      } finally {
        await db.drop();
      }
    }
  }
}

if (want('steady-backlog') && wantedSystems.includes('leasehold')) {
  const WINDOWS = 10;
  const what = `a backlog of ${SIZE.steadyBacklog.toLocaleString('en')} jobs that never empties (after each claim of 500 and its acknowledgement, as many enqueued) for ${SIZE.steadySeconds} s, claims as a worker makes them (its lower bound), while another session holds a transaction with an xid`;
  for (let rep = 0; rep < RUNS; rep++) {
    log(`steady-backlog run ${rep + 1}`);
    const db = await createScratchDatabase(server.url, 'bench_steady');
    try {
      const figures = await measured('steady-backlog', perJob('ms', what), 'leasehold', () =>
        steadyBacklog(db.url, { seconds: SIZE.steadySeconds, backlog: SIZE.steadyBacklog, windows: WINDOWS }),
      );
      if (figures) {
        const first = figures.windows[0]!;
        const last = figures.windows.at(-1)!;
        const ms = (which: string) => perJob('ms', `claim p50 in the ${which} of ${WINDOWS} windows: ${what}`);
        record('steady-backlog-claim-p50-first', ms('first'), 'leasehold', first.claimP50Ms);
        record('steady-backlog-claim-p50-last', ms('last'), 'leasehold', last.claimP50Ms);
        record(
          'steady-backlog-claim-p50-ratio',
          perJob('×', `claim p50, last window ÷ first: ${what}`),
          'leasehold',
          last.claimP50Ms / first.claimP50Ms,
        );
        record(
          'steady-backlog-last-rate',
          throughput(`the last window's drain rate: ${what}`),
          'leasehold',
          last.jobsPerSecond,
        );
        log(
          `  autovacuum (runs, ms): ${figures.autovacuum.map((v) => `${v.table} ${v.runs}, ${v.ms ?? '?'}`).join('; ')}`,
        );
        log(
          `  windows (rate; claim p50, max; ack p50; enqueue p50): ${figures.windows.map((w) => `${Math.round(w.jobsPerSecond)}/s; ${w.claimP50Ms.toFixed(2)}, ${w.claimMaxMs.toFixed(0)} ms; ${w.ackP50Ms.toFixed(2)} ms; ${w.enqueueP50Ms.toFixed(2)} ms`).join(' | ')}`,
        );
      }
    } finally {
      await db.drop();
    }
  }
}

if ((want('history') || want('dashboard')) && wantedSystems.includes('leasehold')) {
  const empty = await createScratchDatabase(server.url, 'bench_history_0');
  const full = await createScratchDatabase(server.url, 'bench_history_full');
  try {
    log(`history: seeding ${SIZE.history.toLocaleString('en')} finished jobs…`);
    await historyDatabase(empty.url, 0);
    await historyDatabase(full.url, SIZE.history);
    if (want('history')) {
      const label = (n: number) => (n === 0 ? '0' : n >= 1_000_000 ? `${n / 1_000_000}m` : `${n / 1000}k`);
      for (let rep = 0; rep < RUNS; rep++) {
        for (const [db, size] of rep % 2
          ? ([
              [full, SIZE.history],
              [empty, 0],
            ] as const)
          : ([
              [empty, 0],
              [full, SIZE.history],
            ] as const)) {
          log(`history ${size} run ${rep + 1}`);
          const figures = await claimThroughput(db.url, SIZE.claimJobs);
          const what = `with ${size.toLocaleString('en')} finished jobs in the table`;
          record(
            `claim-history-${label(size)}`,
            throughput(
              `claim (batch 100) + batched ack of ${SIZE.claimJobs.toLocaleString('en')} jobs on one connection, ${what}`,
            ),
            'leasehold',
            figures.jobsPerSecond,
          );
          record(
            `claim-buffers-history-${label(size)}`,
            {
              description: `shared buffers one claim statement touches per claimed job (EXPLAIN ANALYZE, BUFFERS), ${what}`,
              unit: 'buffers/job',
              higherIsBetter: false,
            },
            'leasehold',
            figures.buffersPerJob,
          );
          record(
            `claim-ms-history-${label(size)}`,
            {
              description: `median claim statement round trip (batch 100), ${what}`,
              unit: 'ms',
              higherIsBetter: false,
            },
            'leasehold',
            figures.claimMs,
          );
        }
      }
    }
    if (want('dashboard')) {
      for (let rep = 0; rep < RUNS; rep++) {
        log(`dashboard run ${rep + 1}`);
        const seen = new Set<string>();
        for (const [label, ms] of await dashboardTimes(full.url)) {
          const slug = label
            .replace(/\(.*?\)/g, '')
            .trim()
            .toLowerCase()
            .replace(/[^a-z0-9]+/g, '-')
            .replace(/^-|-$/g, '');
          // Two queries under one name would pool their samples into one median.
          if (seen.has(slug)) throw new Error(`bench: two dashboard queries are both named dashboard-${slug}`);
          seen.add(slug);
          record(
            `dashboard-${slug}`,
            {
              description: `${label}: round trip at ${SIZE.history.toLocaleString('en')} jobs (median of 7)`,
              unit: 'ms',
              higherIsBetter: false,
            },
            'leasehold',
            ms,
          );
        }
      }
    }
  } finally {
    await empty.drop();
    await full.drop();
  }
}

await server.stop();

// ---------------------------------------------------------------------------------------------

const systemsOut = ['leasehold', 'pg-boss', 'graphile-worker', 'bare-sql', 'floor'] as const;
const cases = [...results.values()].map((c) => {
  // `systems`: the median per system (null: not run); `spread`: min, max and every run.
  const systems: Record<string, number | null> = {};
  const spread: Record<string, { min: number; max: number; runs: number[] } | null> = {};
  for (const s of systemsOut) {
    const samples = c.samples[s];
    systems[s] = samples?.length ? round(median(samples)) : null;
    spread[s] = samples?.length
      ? { min: round(Math.min(...samples)), max: round(Math.max(...samples)), runs: samples.map((v) => round(v)) }
      : null;
  }
  const anchorMedians = ANCHORS.map((a) => systems[a]).filter(
    (v): v is number => typeof v === 'number' && Number.isFinite(v),
  );
  const best = anchorMedians.length
    ? c.higherIsBetter
      ? Math.max(...anchorMedians)
      : Math.min(...anchorMedians)
    : null;
  const ours = systems.leasehold ?? undefined;
  const bare = systems['bare-sql'] ?? undefined;
  return {
    name: c.name,
    description: c.description,
    unit: c.unit,
    higherIsBetter: c.higherIsBetter,
    systems,
    spread,
    notes: c.notes,
    bestAnchor: best,
    ratioVsBestAnchor: best && ours !== undefined ? round(ours / best, 3) : null,
    ratioVsBareSql: bare && ours !== undefined && c.higherIsBetter ? round(ours / bare, 3) : null,
  };
});
const byName = new Map(cases.map((c) => [c.name, c]));
const medianOf = (name: string, system: SystemName) => byName.get(name)?.systems[system] ?? undefined;

type Target = { target: string; measured: number | null; met: boolean | null };
const ratio = (a: number | undefined, b: number | undefined | null) => (a !== undefined && b ? a / b : undefined);
function check(target: string, value: number | undefined, ok: (v: number) => boolean): Target {
  return {
    target,
    measured: value === undefined || !Number.isFinite(value) ? null : round(value, 3),
    met: value === undefined || !Number.isFinite(value) ? null : ok(value),
  };
}
// The targets of the layout after schema v1 (issue 18): the stable per-job figures (WAL, the
// server's CPU) against graphile-worker, throughput against both anchors and the floor.
const vsGraphile = (name: string) => ratio(medianOf(name, 'leasehold'), medianOf(name, 'graphile-worker'));
const scaling = (system: SystemName) => ratio(medianOf('drain-4proc', system), medianOf('drain-1proc', system));
const dashboardCases = cases.filter((c) => c.name.startsWith('dashboard-'));
const targets: Target[] = [
  check('drain-1proc-wal: ≤ 1.3 × graphile-worker', vsGraphile('drain-1proc-wal'), (v) => v <= 1.3),
  check('drain-1proc-server-cpu: ≤ 1.3 × graphile-worker', vsGraphile('drain-1proc-server-cpu'), (v) => v <= 1.3),
  check('lifecycle-wal: ≤ 1.3 × graphile-worker', vsGraphile('lifecycle-wal'), (v) => v <= 1.3),
  check('lifecycle-server-cpu: ≤ 1.3 × graphile-worker', vsGraphile('lifecycle-server-cpu'), (v) => v <= 1.3),
  check('drain-1proc: ≥ 1.2 × graphile-worker', vsGraphile('drain-1proc'), (v) => v >= 1.2),
  check(
    'drain-1proc: ≥ 2 × pg-boss',
    ratio(medianOf('drain-1proc', 'leasehold'), medianOf('drain-1proc', 'pg-boss')),
    (v) => v >= 2,
  ),
  check('drain-4proc: ≥ 1.1 × graphile-worker', vsGraphile('drain-4proc'), (v) => v >= 1.1),
  // On 2 cores every system loses going to 4 processes: ours may lose no more than the floor.
  check('drain 4-process / 1-process: ≥ the floor’s', ratio(scaling('leasehold'), scaling('floor')), (v) => v >= 1),
  ...(['drain-1proc', 'drain-4proc'] as const).map((n) =>
    check(
      `${n}: ≥ 0.7 × the same-features floor`,
      ratio(medianOf(n, 'leasehold'), medianOf(n, 'floor')),
      (v) => v >= 0.7,
    ),
  ),
  check(
    'enqueue-single-1conn: ≥ 2 × best anchor',
    byName.get('enqueue-single-1conn')?.ratioVsBestAnchor ?? undefined,
    (v) => v >= 2,
  ),
  check(
    'enqueue-single-8conn: ≥ 2 × best anchor',
    byName.get('enqueue-single-8conn')?.ratioVsBestAnchor ?? undefined,
    (v) => v >= 2,
  ),
  check(
    'enqueue-bulk: ≥ 1.8 × best anchor',
    byName.get('enqueue-bulk')?.ratioVsBestAnchor ?? undefined,
    (v) => v >= 1.8,
  ),
  // Wake-ups must not cost more than a fifth of the enqueue rate (the NOTIFY is debounced).
  check(
    'enqueue on 8 connections, wake-ups on ≥ 0.8 × off',
    ratio(medianOf('enqueue-single-8conn', 'leasehold'), medianOf('enqueue-single-8conn-wake-off', 'leasehold')),
    (v) => v >= 0.8,
  ),
  check('pickup-listen-p99: ≤ 1.0 × graphile-worker', vsGraphile('pickup-listen-p99'), (v) => v <= 1),
  // Not the default: claims that do not wait for their flush, against graphile-worker's pickup-listen.
  check(
    'pickup-listen-async-claims-p99: ≤ 0.8 × graphile-worker’s pickup-listen-p99',
    ratio(medianOf('pickup-listen-async-claims-p99', 'leasehold'), medianOf('pickup-listen-p99', 'graphile-worker')),
    (v) => v <= 0.8,
  ),
  check(
    `claim throughput at ${SIZE.history.toLocaleString('en')} history ≥ 0.9 × at 0`,
    ratio(
      medianOf(
        `claim-history-${SIZE.history >= 1_000_000 ? `${SIZE.history / 1_000_000}m` : `${SIZE.history / 1000}k`}`,
        'leasehold',
      ),
      medianOf('claim-history-0', 'leasehold'),
    ),
    (v) => v >= 0.9,
  ),
  check(
    'held horizon: the last round’s claim p50 ≤ 1.5 × the first’s',
    ratio(medianOf('horizon-held-claim-p50-last', 'leasehold'), medianOf('horizon-held-claim-p50-first', 'leasehold')),
    (v) => v <= 1.5,
  ),
  check(
    'slowest dashboard query ≤ 250 ms',
    dashboardCases.length ? Math.max(...dashboardCases.map((c) => c.systems.leasehold ?? 0)) : undefined,
    (v) => v <= 250,
  ),
];

const versions = {
  node: process.version,
  postgres: serverVersion,
  leasehold: process.env.npm_package_version ?? '0.1.0',
  'pg-boss': packageVersion('pg-boss'),
  'graphile-worker': packageVersion('graphile-worker'),
};
const report = {
  generatedAt: new Date().toISOString(),
  command: `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim(),
  durationSeconds: Math.round((Date.now() - started) / 1000),
  machine: {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    platform: `${os.platform()} ${os.release()}`,
  },
  server: { embedded: server.embedded, settings: Object.fromEntries(serverSettings.map((s) => [s.name, s.setting])) },
  versions,
  runs: RUNS,
  quick: QUICK,
  smoke: SMOKE,
  sizes: SIZE,
  settings: Object.fromEntries(Object.values(SYSTEMS).map((s) => [s.name, s.settings])),
  cases,
  targets,
};

mkdirSync(args.out, { recursive: true });
const file = path.join(args.out, 'bench-results.json');
writeFileSync(file, JSON.stringify(report, null, 2));

const fmt = (v: number | null | undefined) =>
  v === null || v === undefined ? '–' : v.toLocaleString('en', { maximumFractionDigits: 2 });
const lines = [
  `## Leasehold benchmark (${SMOKE ? 'smoke sizes, figures meaningless, ' : QUICK ? 'quick sizes, ' : ''}median of ${RUNS}; Node ${versions.node}, PostgreSQL ${versions.postgres}, pg-boss ${versions['pg-boss']}, graphile-worker ${versions['graphile-worker']}; ${report.machine.cpus} cores)`,
  '',
  '| case | unit | leasehold | pg-boss | graphile-worker | bare-sql | floor | leasehold / best anchor |',
  '|---|---|---:|---:|---:|---:|---:|---:|',
  ...cases.map((c) => {
    const cell = (s: (typeof systemsOut)[number]) =>
      c.systems[s] !== null ? fmt(c.systems[s]) : c.notes[s] ? 'n/a' : '–';
    return `| ${c.name} | ${c.unit}${c.higherIsBetter ? ' ↑' : ' ↓'} | ${cell('leasehold')} | ${cell('pg-boss')} | ${cell('graphile-worker')} | ${cell('bare-sql')} | ${cell('floor')} | ${fmt(c.ratioVsBestAnchor)} |`;
  }),
  '',
  '| target | measured | met |',
  '|---|---:|---|',
  ...targets
    .filter((t) => t.measured !== null)
    .map((t) => `| ${t.target} | ${fmt(t.measured)} | ${t.met ? 'yes' : '**no**'} |`),
  '',
  'Settings:',
  ...Object.values(SYSTEMS).flatMap((s) => Object.entries(s.settings).map(([k, v]) => `- ${s.name} ${k}: ${v}`)),
  '',
  `JSON: ${file}`,
];
console.log(lines.join('\n'));
if (failures.length > 0) {
  console.error(`[bench] ${failures.length} measurement(s) failed:\n${failures.join('\n')}`);
  process.exitCode = 1;
}
