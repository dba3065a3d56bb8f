/**
 * `npm run chaos`: the failure harness. Runs competing worker processes against the embedded
 * PostgreSQL (or DATABASE_URL), injects faults, and checks from the database that nothing was
 * lost, no two attempts held one job at once, no stale settlement applied, every done job's
 * effect reached the sink under an attempt number the queue issued, and everything ended within
 * the recovery bound.
 *
 *   npm run chaos [-- --minutes 1] [--scenario kill-storm,zombie] [--out DIR] [--pgbouncer]
 *
 * Scenarios: kill-storm, crash-points, zombie, connection-loss, listen-cut, db-restart, db-crash,
 * poison, priority-flood, duplicate-enqueue (the default set), and drain (jobs enqueued every way
 * and drained, no faults: the baseline the others are held against). Prints a table and writes
 * chaos-results.json; exits 1 when any figure fails.
 *
 * Besides its own figures, every scenario ends with the layout's invariants (layoutFigures):
 * ready jobs and ready rows agree, no lease row counts running jobs once every job is terminal,
 * and finished_rollup counts the terminal jobs.
 *
 * --self-test proves the harness fails a run when a guard is missing: the same small workload
 * twice, once as it ships (every figure must pass) and once with one worker armed with the
 * failpoint `unguarded_claim` (workers/failpoints.ts: a claim without `state = 'ready'`, which
 * takes jobs another worker still holds); that run's "overlapping valid leases" must be
 * non-zero and fail it. Exits 0 when both hold.
 *
 * --pgbouncer runs drain and kill-storm (the default then) with every worker's and the
 * enqueuer's connections through a PgBouncer 1.18 in transaction mode that the harness starts
 * (test/pgbouncer.ts): workers with LEASEHOLD_PREPARED_STATEMENTS=false and --no-listen, the
 * enqueuer a createDb pool with preparedStatements off. The harness's own checks stay on a
 * direct connection, and two figures more prove the pooler carried the work.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createDb, type DbHandle } from '../db/client.ts';
import { createScratchDatabase, selectDatabase, type DatabaseHandle } from '../scripts/database.ts';
import { migrateDatabase } from '../db/migrate.ts';
import { enqueue, enqueueMany, type Executor } from '../db/queue/index.ts';
import { TERMINAL_STATES } from '../db/states.ts';
import { startPgBouncer, type PgBouncer } from '../test/pgbouncer.ts';
import { SilentCutProxy } from './proxy.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SCENARIOS = [
  'kill-storm',
  'crash-points',
  'zombie',
  'connection-loss',
  'listen-cut',
  'db-restart',
  'db-crash',
  'poison',
  'priority-flood',
  'duplicate-enqueue',
  'drain',
] as const;
type Scenario = (typeof SCENARIOS)[number];
const DEFAULT_SCENARIOS = SCENARIOS.filter((s) => s !== 'drain');
/** What runs through the pooler: the others cut, stop or proxy connections the pooler now owns. */
const POOLED_SCENARIOS: readonly Scenario[] = ['drain', 'kill-storm'];

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '1' },
    scenario: { type: 'string' },
    out: { type: 'string', default: path.join(ROOT, '.leasehold', 'chaos') },
    pgbouncer: { type: 'boolean', default: false },
    'self-test': { type: 'boolean', default: false },
  },
});
const selfTest = values['self-test'] === true;
const minutes = Number(values.minutes);
const pooledRun = values.pgbouncer === true;
const chosen = (values.scenario ?? (pooledRun ? POOLED_SCENARIOS : DEFAULT_SCENARIOS).join(','))
  .split(',')
  .map((s) => s.trim()) as Scenario[];
const unknown = chosen.filter((s) => !SCENARIOS.includes(s));
const notPooled = pooledRun ? chosen.filter((s) => !POOLED_SCENARIOS.includes(s)) : [];
const problems = [
  ...(minutes > 0 && minutes <= 600 ? [] : ['--minutes must be 0 < m <= 600']),
  ...(selfTest && (pooledRun || values.scenario) ? ['--self-test runs alone (no --scenario, no --pgbouncer)'] : []),
  ...(unknown.length ? [`unknown scenarios: ${unknown.join(', ')} (known: ${SCENARIOS.join(', ')})`] : []),
  ...(notPooled.length
    ? [`with --pgbouncer only ${POOLED_SCENARIOS.join(', ')} run (not: ${notPooled.join(', ')})`]
    : []),
];
if (problems.length > 0) {
  console.error(`chaos: ${problems.join('; ')}`);
  process.exit(2);
}
/** Seconds of fault injection per scenario: the run's minutes shared among the scenarios. */
const secondsEach = Math.max(8, Math.floor((minutes * 60) / chosen.length) - 6);

// Settings the recovery bound is computed from.
const LEASE_S = 3;
const REAP_MS = 500;
const POLL_MS = 300;
const LEASE_EXPIRED_DELAY_MS = 0;
const RECOVERY_BOUND_MS = LEASE_S * 1000 + REAP_MS + POLL_MS + LEASE_EXPIRED_DELAY_MS + 2_000; // + 2 s for process restarts

/** The figure the self-test must see fail (its name, as printed). */
const OVERLAP = 'overlapping valid leases';

interface Figure {
  name: string;
  value: number;
  pass: boolean;
  rule: string;
}
type SelfTestRun = 'self-test: as shipped' | 'self-test: unguarded_claim armed';
interface Result {
  scenario: Scenario | SelfTestRun;
  skipped?: string;
  jobs: number;
  seconds: number;
  faults: number;
  figures: Figure[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (line: string) => console.error(`[chaos] ${line}`);

let server: DatabaseHandle;
let serverUrl: string;
/** The pooler every worker and the enqueuer connect through (--pgbouncer), or null. */
let bouncer: PgBouncer | null = null;

class Fleet {
  readonly procs = new Map<number, ChildProcess>();
  exclusionErrors = 0;
  /** Workers that exited on their own with an error (not killed by the harness or a failpoint). */
  crashes = 0;
  crashOutput: string[] = [];
  private stopped = false;

  private readonly url: string;
  private readonly args: string[];
  private readonly env: Record<string, string>;

  /** Workers on `url`'s database; through the pooler (unnamed statements, polling) with --pgbouncer. */
  constructor(url: string, args: string[], env: Record<string, string> = {}) {
    this.url = bouncer ? bouncer.pooled(url) : url;
    this.args = bouncer ? ['--no-listen', ...args] : args;
    this.env = bouncer ? { LEASEHOLD_PREPARED_STATEMENTS: 'false', ...env } : env;
  }

  start(n: number) {
    for (let i = 0; i < n; i++) this.spawnOne();
  }

  spawnOne(): ChildProcess {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        path.join(ROOT, 'workers', 'main.ts'),
        '--queues',
        'chaos',
        '--handlers',
        'chaos/handlers.ts',
        '--log-level',
        'warn',
        '--lease-seconds',
        String(LEASE_S),
        '--reap-interval-ms',
        String(REAP_MS),
        '--poll-ms',
        String(POLL_MS),
        ...this.args,
      ],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          DATABASE_URL: this.url,
          LEASEHOLD_LEASE_EXPIRED_DELAY_MS: String(LEASE_EXPIRED_DELAY_MS),
          LEASEHOLD_RETRY_BASE_MS: '100',
          LEASEHOLD_RETRY_MAX_MS: '2000',
          ...this.env,
        },
        // stdout too: at --log-level warn it carries only warnings and the fatal line that says
        // why a worker exited on its own.
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let tail = '';
    const keep = (chunk: Buffer) => {
      const text = chunk.toString();
      tail = (tail + text).slice(-2000);
      if (/exclusion constraint/i.test(text)) this.exclusionErrors += 1;
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    this.procs.set(child.pid!, child);
    // 'close', not 'exit': by then the output pipes are drained, so the tail is complete.
    child.on('close', () => {
      this.procs.delete(child.pid!);
      if (!this.stopped && child.signalCode === null && child.exitCode !== 0) {
        this.crashes += 1;
        this.crashOutput.push(tail);
        log(`a worker crashed (exit ${child.exitCode}):\n${tail}`);
      }
      // A worker that died (killed, failpoint, poison job, crash) is replaced, like a supervisor would.
      if (!this.stopped) setTimeout(() => !this.stopped && this.spawnOne(), 100);
    });
    return child;
  }

  random(): ChildProcess | undefined {
    const all = [...this.procs.values()];
    return all[Math.floor(Math.random() * all.length)];
  }

  async stop() {
    this.stopped = true;
    const all = [...this.procs.values()];
    for (const p of all) p.kill('SIGTERM');
    await Promise.all(
      all.map((p) => new Promise((r) => (p.exitCode !== null || p.signalCode !== null ? r(null) : p.once('exit', r)))),
    );
  }
}

interface ChaosDatabase {
  url: string;
  name: string;
  /** The harness's own direct connection: set-up, checks, figures. */
  client: pg.Client;
  /** What enqueues the jobs: the direct client (as it is now), or a pool through the pooler with --pgbouncer. */
  readonly enqueuer: Executor;
  /** The pool under `enqueuer` with --pgbouncer (for transactions of the caller's own). */
  pooled: DbHandle | null;
  drop(): Promise<void>;
}

async function freshDatabase(): Promise<ChaosDatabase> {
  const scratch = await createScratchDatabase(serverUrl, 'leasehold_chaos');
  const { url, name } = scratch;
  await migrateDatabase(url);
  const client = new pg.Client({ connectionString: url, application_name: 'leasehold-chaos-harness' });
  client.on('error', () => {});
  await client.connect();
  await client.query(readFileSync(path.join(ROOT, 'chaos', 'schema.sql'), 'utf8'));
  const pooled = bouncer
    ? createDb(bouncer.pooled(url), { max: 4, applicationName: 'leasehold-chaos-enqueuer', preparedStatements: false })
    : null;
  const db: ChaosDatabase = {
    url,
    name,
    client,
    // A getter: a server fault replaces `client` (serverAway), and the enqueuer must follow it.
    get enqueuer(): Executor {
      return pooled?.db ?? db.client;
    },
    pooled,
    drop: async () => {
      await pooled?.close().catch(() => {});
      await db.client.end().catch(() => {});
      await scratch.drop().catch(() => {});
    },
  };
  return db;
}

/**
 * With --pgbouncer: the pooler really carried the work. Samples, as the scenario goes, the
 * backends of its database that are not PgBouncer's server connections (the harness's own
 * connection aside); none may be a worker's or the enqueuer's.
 */
class PoolerWatch {
  private bypassing = new Set<number>();
  private lastAt = 0;
  samples = 0;

  constructor(private readonly db: ChaosDatabase) {}

  /** Samples at most once a second. */
  async sample(): Promise<void> {
    if (!bouncer || Date.now() - this.lastAt < 1_000) return;
    this.lastAt = Date.now();
    const backends = await this.db.client.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity
       WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`,
    );
    // After the snapshot: a server connection opened meanwhile is in both lists or in neither.
    const servers = await bouncer.serverPids(this.db.name);
    for (const { pid } of backends.rows) if (!servers.has(pid)) this.bypassing.add(pid);
    this.samples += 1;
  }

  async figures(): Promise<Figure[]> {
    if (!bouncer) return [];
    this.lastAt = 0;
    await this.sample();
    const stats = (await bouncer.admin('SHOW STATS')).find((r) => r.database === this.db.name);
    const transactions = Number(stats?.total_xact_count ?? 0);
    return [
      {
        name: `worker and enqueuer backends not through PgBouncer (${this.samples} samples)`,
        value: this.bypassing.size,
        pass: this.bypassing.size === 0 && this.samples > 1,
        rule: '= 0',
      },
      {
        name: 'transactions PgBouncer carried',
        value: transactions,
        pass: transactions > 0,
        rule: '> 0 (the pooler carried the work)',
      },
    ];
  }
}

async function count(client: pg.Client, text: string, params: unknown[] = []): Promise<number> {
  const result = await client.query(text, params);
  return Number(Object.values(result.rows[0] ?? { n: 0 })[0] ?? 0);
}

/** Waits until every job is terminal (or the deadline passes); returns when the last one ended. */
async function drain(client: pg.Client, timeoutMs: number): Promise<void> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (
      (await count(client, `SELECT count(*) FROM leasehold.jobs WHERE state <> ALL($1::text[])`, [TERMINAL_STATES])) ===
      0
    )
      return;
    await sleep(200);
  }
}

/**
 * The layout's invariants (db/queue/transitions.ts, drizzle/0001_leasehold_v1_invariants.sql),
 * read in one statement, so that one snapshot sees a job and its rows together (a claim or a
 * settlement changes both at once):
 * - every ready job has its ready row (queue, claim_at, run_at, kind, attempts as the job's),
 *   and no ready row is left for a job that is not ready, nor a second one for a job: a job
 *   without one is never claimed again, a row too many fills a claim's LIMIT;
 * - once every job is terminal, no lease row still counts running jobs;
 * - finished_rollup counts exactly the terminal jobs, per queue, kind, state and attempts (the
 *   harness never removes or retries finished jobs, so nothing may have left the rollup).
 *
 * A lease row's count is set by the reaper from its snapshot, so a settlement committing
 * between the reaper's snapshot and its lock on the row leaves it one too high until the
 * row's deadline, when the reaper counts again (db/queue/transitions.ts, reapStatement). So the
 * lease figure waits a lease and two reaper rounds for rows still counting, and reports how
 * many there were when the check began.
 */
async function layoutFigures(client: pg.Client, jobsTerminal: boolean): Promise<Figure[]> {
  const read = async () =>
    (
      await client.query<Record<string, string>>(
        `SELECT
           (SELECT count(*) FROM leasehold.jobs j WHERE j.state = 'ready' AND NOT EXISTS (
              SELECT 1 FROM leasehold.ready_jobs r WHERE r.id = j.id AND r.queue = j.queue AND r.claim_at = j.claim_at
                AND r.run_at = j.run_at AND r.kind = j.kind AND r.attempts = j.attempts)) AS ready_without_row,
           (SELECT count(*) FROM leasehold.ready_jobs r
             WHERE NOT EXISTS (SELECT 1 FROM leasehold.jobs j WHERE j.id = r.id AND j.state = 'ready'))
             + (SELECT count(*) - count(DISTINCT id) FROM leasehold.ready_jobs) AS stray_rows,
           (SELECT count(*) FROM leasehold.leases WHERE running > 0) AS counting,
           (SELECT coalesce(sum(abs(coalesce(f.jobs, 0) - coalesce(t.jobs, 0))), 0)
              FROM (SELECT queue, kind, state, attempts, sum(jobs) AS jobs FROM leasehold.finished_rollup GROUP BY 1, 2, 3, 4) f
              FULL JOIN (SELECT queue, kind, state, attempts, count(*) AS jobs FROM leasehold.jobs
                          WHERE state = ANY($1::text[]) GROUP BY 1, 2, 3, 4) t USING (queue, kind, state, attempts)
           ) AS rollup_off`,
        [TERMINAL_STATES],
      )
    ).rows[0]!;
  const first = await read();
  const figures: Figure[] = [
    {
      name: 'ready jobs without their ready row',
      value: Number(first.ready_without_row),
      pass: Number(first.ready_without_row) === 0,
      rule: '= 0',
    },
    {
      name: 'ready rows of jobs not ready, or a second one of a job',
      value: Number(first.stray_rows),
      pass: Number(first.stray_rows) === 0,
      rule: '= 0',
    },
    {
      name: 'finished_rollup jobs off from the terminal jobs (per queue, kind, state, attempts)',
      value: Number(first.rollup_off),
      pass: Number(first.rollup_off) === 0,
      rule: '= 0',
    },
  ];
  if (jobsTerminal) {
    const atFirst = Number(first.counting);
    let counting = atFirst;
    const settleBy = Date.now() + LEASE_S * 1000 + 2 * REAP_MS + 1000;
    while (counting > 0 && Date.now() < settleBy) {
      await sleep(200);
      counting = Number((await read()).counting);
    }
    figures.push(
      {
        name: 'lease rows counting running jobs, every job terminal (when checked)',
        value: atFirst,
        pass: true,
        rule: 'reported',
      },
      {
        name: 'lease rows still counting running jobs a lease and two reaper rounds later',
        value: counting,
        pass: counting === 0,
        rule: '= 0',
      },
    );
  }
  return figures;
}

/** layoutFigures, knowing whether every job is terminal now. */
async function layoutFiguresNow(client: pg.Client): Promise<Figure[]> {
  const live = await count(client, `SELECT count(*) FROM leasehold.jobs WHERE state <> ALL($1::text[])`, [
    TERMINAL_STATES,
  ]);
  return layoutFigures(client, live === 0);
}

/** The figures every scenario is held to. */
async function ledgerFigures(
  client: pg.Client,
  fleet: Fleet,
  enqueued: number,
  lastFault: number,
  bound = RECOVERY_BOUND_MS,
  recoverySince = 0,
): Promise<Figure[]> {
  const lastEnd = await count(
    client,
    `SELECT coalesce(extract(epoch FROM max(finished_at)) * 1000, 0) FROM leasehold.jobs`,
  );
  const recovery = Math.max(0, Math.round(lastEnd - lastFault));
  return [
    {
      name: 'lost jobs',
      value: enqueued - (await count(client, 'SELECT count(*) FROM leasehold.jobs')),
      pass: true,
      rule: '= 0',
    },
    {
      name: OVERLAP,
      value:
        fleet.exclusionErrors +
        (await count(
          client,
          `SELECT count(*) FROM chaos.lease_log a JOIN chaos.lease_log b ON a.job_id = b.job_id AND a.token < b.token AND a.valid && b.valid`,
        )),
      pass: true,
      rule: '= 0',
    },
    {
      name: 'stale settlements applied',
      // Failures and releases are attempt rows; a completion is the done job row (its attempt
      // number names the lease it ended).
      value: await count(
        client,
        `SELECT (SELECT count(*) FROM leasehold.job_attempts a JOIN chaos.lease_log l ON l.token = a.lease_token AND l.job_id = a.job_id
                                          WHERE a.outcome IN ('completed', 'failed', 'released') AND a.ended_at > l.deadline)
                                       + (SELECT count(*) FROM leasehold.jobs j JOIN chaos.lease_log l ON l.job_id = j.id AND l.attempt = j.attempts
                                          WHERE j.state = 'done' AND j.finished_at > l.deadline)`,
      ),
      pass: true,
      rule: '= 0',
    },
    {
      // The fence only works if attempt numbers come from the queue: a write naming a number the
      // job never reached means a worker made one up or reused a stale job object.
      name: 'sink writes naming an attempt the queue never issued',
      value: await count(
        client,
        `SELECT count(*) FROM chaos.sink s JOIN leasehold.jobs j ON j.id = s.job_id WHERE s.highest_attempt > j.attempts`,
      ),
      pass: true,
      rule: '= 0',
    },
    {
      // At-least-once: a re-run reaches the side effect again; the delivery key makes it one effect.
      name: 'repeated sink writes absorbed by the delivery key',
      value: await count(client, 'SELECT coalesce(sum(replays), 0) FROM chaos.sink'),
      pass: true,
      rule: 'reported',
    },
    {
      name: 'done jobs without their effect',
      value: await count(
        client,
        `SELECT count(*) FROM leasehold.jobs j WHERE j.state = 'done' AND j.kind = 'chaos.work' AND NOT EXISTS (SELECT 1 FROM chaos.sink s WHERE s.job_id = j.id)`,
      ),
      pass: true,
      rule: '= 0',
    },
    {
      name: 'jobs not terminal',
      value: await count(client, `SELECT count(*) FROM leasehold.jobs WHERE state <> ALL($1::text[])`, [
        TERMINAL_STATES,
      ]),
      pass: true,
      rule: '= 0',
    },
    {
      name: 'ms from last fault to last job end',
      value: recovery,
      pass: recovery <= bound,
      rule: Number.isFinite(bound) ? `<= ${bound}` : 'reported',
    },
    await (async () => {
      // Recovery of each crashed attempt: from its lease's end to the job's next attempt.
      const worst = await count(
        client,
        `SELECT coalesce(max(extract(epoch FROM lower(n.valid) - l.deadline) * 1000), 0)
        FROM leasehold.job_attempts a JOIN chaos.lease_log l ON l.token = a.lease_token AND l.job_id = a.job_id
        JOIN chaos.lease_log n ON n.job_id = l.job_id AND n.attempt = l.attempt + 1
        WHERE a.outcome = 'lease_expired' AND l.deadline > to_timestamp($1::float8 / 1000)`,
        [recoverySince],
      );
      // Reported, not judged: while faults go on every worker may be dead or backing off at once.
      return {
        name: 'max ms from a crashed lease’s end to the next attempt',
        value: Math.round(worst),
        pass: true,
        rule: 'reported',
      };
    })(),
    {
      name: 'worker processes that crashed on their own',
      value: fleet.crashes,
      pass: fleet.crashes === 0,
      rule: '= 0',
    },
    {
      name: 'handler executions beyond one per job',
      value: await count(client, 'SELECT count(*) - count(DISTINCT job_id) FROM chaos.effects'),
      pass: true,
      rule: 'reported',
    },
    ...(await layoutFiguresNow(client)),
  ].map((f) => (f.rule === '= 0' ? { ...f, pass: f.value === 0 } : f));
}

/**
 * A workload whose fault takes the embedded server away (`restart`: a clean stop and start;
 * `crash`: killed, then crash recovery) and reconnects the harness; the fault's own duration is
 * added to the recovery bound.
 */
async function serverFault(name: Scenario, how: 'restart' | 'crash', args: string[] = []): Promise<Result> {
  const takeAway = server.embedded ? server[how] : undefined;
  if (!takeAway) {
    return {
      scenario: name,
      skipped: `needs the embedded server (the harness cannot ${how} a server named by DATABASE_URL)`,
      jobs: 0,
      seconds: 0,
      faults: 0,
      figures: [],
    };
  }
  return workload(name, {
    workers: 3,
    args,
    jobs: secondsEach * 50,
    faultEveryMs: Math.max(4000, (secondsEach * 1000) / 3),
    fault: (_fleet, db) => serverAway(db, takeAway),
  });
}

async function serverAway(db: { url: string; client: pg.Client }, how: () => Promise<void>): Promise<number> {
  const began = Date.now();
  await db.client.end().catch(() => {});
  await how();
  const client = new pg.Client({ connectionString: db.url });
  client.on('error', () => {});
  await client.connect();
  db.client = client; // the enqueuer (a getter over it, without a pooler) follows
  return Date.now() - began; // the server was away this long
}

async function workload(
  name: Scenario,
  options: {
    workers: number;
    args?: string[];
    env?: Record<string, string>;
    jobs: number;
    faultEveryMs: number;
    /** Injects one fault; may return how many ms the fault itself lasted (added to the bound). */
    fault(
      fleet: Fleet,
      db: { url: string; client: pg.Client; enqueuer: Executor },
    ): Promise<number | void> | number | void;
  },
): Promise<Result> {
  const db = await freshDatabase();
  const fleet = new Fleet(db.url, ['--concurrency', '4', ...(options.args ?? [])], options.env);
  const watch = new PoolerWatch(db);
  const started = Date.now();
  try {
    fleet.start(options.workers);
    // Jobs arrive for most of the planned time; faults go on until nothing waits, so the figure below measures
    // recovery of what the faults interrupted, not the draining of a backlog.
    const enqueueFor = secondsEach * 1000 * 0.85;
    const batch = Math.max(1, Math.ceil(options.jobs / (enqueueFor / 200)));
    let enqueued = 0;
    let faults = 0;
    let lastFault = Date.now();
    let backlogAtLastFault = 0;
    const until = Date.now() + secondsEach * 1000;
    let nextFault = Date.now() + options.faultEveryMs;
    let waiting = 1;
    const enqueueEnd = Date.now() + enqueueFor;
    // Faults go on while jobs arrive and until nothing waits (30 s past the plan at most): the
    // last fault then hits jobs in flight, and the recovery figure measures their recovery,
    // not a backlog's drain time.
    while (Date.now() < until + 30_000 && (Date.now() < enqueueEnd || enqueued < options.jobs || waiting > 0)) {
      if (enqueued < options.jobs) {
        const n = Math.min(batch, options.jobs - enqueued);
        await enqueueMany(
          db.enqueuer,
          Array.from({ length: n }, () => ({ queue: 'chaos', kind: 'chaos.work', maxAttempts: 25 })),
        );
        enqueued += n;
      }
      await watch.sample();
      if (Date.now() >= nextFault) {
        await options.fault(fleet, db);
        faults += 1;
        lastFault = Date.now();
        backlogAtLastFault = await count(db.client, `SELECT count(*) FROM leasehold.jobs WHERE state = 'ready'`).catch(
          () => -1,
        );
        nextFault = Date.now() + options.faultEveryMs;
      }
      await sleep(200);
      waiting = await count(db.client, `SELECT count(*) FROM leasehold.jobs WHERE state = 'ready'`).catch(() => 1);
    }
    // One last fault now that nothing waits: it hits only jobs in flight.
    const lasted = (await options.fault(fleet, db)) ?? 0;
    faults += 1;
    lastFault = Date.now();
    backlogAtLastFault = await count(db.client, `SELECT count(*) FROM leasehold.jobs WHERE state = 'ready'`).catch(
      () => -1,
    );
    await drain(db.client, RECOVERY_BOUND_MS + 60_000);
    const figures = await ledgerFigures(db.client, fleet, enqueued, lastFault - lasted, RECOVERY_BOUND_MS + lasted);
    figures.push({ name: 'jobs waiting at the last fault', value: backlogAtLastFault, pass: true, rule: 'reported' });
    figures.push(...(await watch.figures()));
    return { scenario: name, jobs: enqueued, seconds: Math.round((Date.now() - started) / 1000), faults, figures };
  } finally {
    await fleet.stop();
    await db.drop();
  }
}

const scenarios: Record<Scenario, () => Promise<Result>> = {
  'kill-storm': () =>
    workload('kill-storm', {
      // A worker takes about 2 s to start here (tsx): a kill every 1.5 s among 4 workers leaves
      // each alive about 6 s at a time.
      workers: 4,
      jobs: secondsEach * 25,
      faultEveryMs: 1500,
      fault: (fleet) => {
        fleet.random()?.kill('SIGKILL');
      },
    }),

  'crash-points': async () => {
    // Each failpoint armed in its own fleet member, at a low probability, all at once.
    const db = await freshDatabase();
    const points = ['after_claim:0.05', 'after_effect:0.05', 'before_ack:0.1', 'in_heartbeat:0.05', 'in_reap:0.3'];
    const fleets = points.map((p) => new Fleet(db.url, ['--concurrency', '4'], { LEASEHOLD_FAILPOINTS: p }));
    const started = Date.now();
    try {
      for (const f of fleets) f.start(1);
      const jobs = secondsEach * 40;
      for (let i = 0; i < jobs; i += 50) {
        await enqueueMany(
          db.client,
          Array.from({ length: Math.min(50, jobs - i) }, () => ({
            queue: 'chaos',
            kind: 'chaos.work',
            maxAttempts: 50,
          })),
        );
        await sleep((secondsEach * 700) / (jobs / 50));
      }
      // Faults happen as long as the armed workers run: disarm by replacing them with clean
      // ones, started first so that someone is always there to reap.
      const clean = new Fleet(db.url, ['--concurrency', '8']);
      clean.start(2);
      await sleep(3000);
      for (const f of fleets) await f.stop();
      const lastFault = Date.now();
      await drain(db.client, RECOVERY_BOUND_MS + 60_000);
      // While failpoints are armed every worker may be dead at once; recovery is held to the
      // bound from the moment the clean workers take over.
      const figures = await ledgerFigures(db.client, clean, jobs, lastFault, RECOVERY_BOUND_MS + 5_000, lastFault);
      const crashed = fleets.reduce((n, f) => n + f.crashes, 0);
      figures.push({
        name: 'armed workers that crashed other than at a failpoint',
        value: crashed,
        pass: crashed === 0,
        rule: '= 0',
      });
      await clean.stop();
      return {
        scenario: 'crash-points',
        jobs,
        seconds: Math.round((Date.now() - started) / 1000),
        faults: points.length,
        figures,
      };
    } finally {
      await db.drop();
    }
  },

  zombie: async () => {
    // SIGSTOP a worker past its lease, let another reap and finish its jobs, then SIGCONT: the
    // zombie's late acknowledgements, failures and heartbeats must all be refused.
    const db = await freshDatabase();
    const zombie = new Fleet(db.url, ['--concurrency', '4', '--no-maintenance']);
    const healthy = new Fleet(db.url, ['--concurrency', '4']);
    const started = Date.now();
    try {
      zombie.start(1);
      await sleep(1500);
      await enqueueMany(
        db.client,
        Array.from({ length: 4 }, () => ({ queue: 'chaos', kind: 'chaos.work', payload: { ms: 1500 } })),
      );
      const t0 = Date.now();
      while (
        (await count(db.client, `SELECT count(*) FROM leasehold.jobs WHERE state = 'running'`)) < 4 &&
        Date.now() - t0 < 10_000
      )
        await sleep(50);
      const proc = zombie.random()!;
      proc.kill('SIGSTOP');
      healthy.start(1);
      await drain(db.client, 30_000);
      proc.kill('SIGCONT');
      const lastFault = Date.now();
      await sleep(4000); // the zombie wakes, finishes its handlers and tries to settle
      const figures = await ledgerFigures(db.client, healthy, 4, lastFault, Number.POSITIVE_INFINITY);
      const zombieEffects = await count(db.client, `SELECT count(*) FROM chaos.effects WHERE pid = $1`, [proc.pid]);
      figures.push({
        name: 'zombie attempts that ran',
        value: zombieEffects,
        pass: zombieEffects > 0,
        rule: '> 0 (the fault happened)',
      });
      figures.push({
        name: 'late zombie sink writes refused by the fence',
        value: await count(db.client, `SELECT coalesce(sum(fenced), 0) FROM chaos.sink`),
        pass: true,
        rule: 'reported',
      });
      await zombie.stop();
      return { scenario: 'zombie', jobs: 4, seconds: Math.round((Date.now() - started) / 1000), faults: 1, figures };
    } finally {
      await healthy.stop();
      await zombie.stop();
      await db.drop();
    }
  },

  'connection-loss': () =>
    workload('connection-loss', {
      workers: 3,
      jobs: secondsEach * 60,
      faultEveryMs: 500,
      fault: async (_fleet, db) => {
        // Cut a random worker connection: a pooled one, the claim loop's own or the LISTEN one.
        await db.client.query(
          `SELECT pg_terminate_backend(pid) FROM (
             SELECT pid FROM pg_stat_activity
             WHERE datname = current_database() AND application_name IN ('leasehold-worker', 'leasehold-claim', 'leasehold-listen')
             ORDER BY random() LIMIT 1) p`,
        );
      },
    }),

  'listen-cut': async () => {
    // The worker's connections go through a proxy; its LISTEN connection is then cut silently
    // (half-open). Polling is set to 60 s, so only a detected-and-replaced LISTEN connection
    // starts the next job promptly.
    const db = await freshDatabase();
    const target = new URL(db.url);
    const proxy = await SilentCutProxy.start(target.hostname, Number(target.port || 5432));
    const proxied = new URL(db.url);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(proxy.port);
    const fleet = new Fleet(proxied.toString(), ['--concurrency', '2', '--poll-ms', '60000']);
    const started = Date.now();
    const startLatency = async (id: string, timeoutMs: number) => {
      const t0 = Date.now();
      while (Date.now() - t0 < timeoutMs) {
        const ms = await count(
          db.client,
          `SELECT coalesce(extract(epoch FROM started_at - created_at) * 1000, -1) FROM leasehold.jobs WHERE id = $1`,
          [id],
        );
        if (ms >= 0) return Math.round(ms);
        await sleep(100);
      }
      return -1;
    };
    try {
      fleet.start(1);
      const t0 = Date.now();
      while (
        (await count(
          db.client,
          `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'leasehold-listen' AND datname = current_database()`,
        )) < 1
      ) {
        if (Date.now() - t0 > 20_000) throw new Error('the worker never started listening');
        await sleep(100);
      }
      await sleep(1000);
      const before = await enqueue(db.client, { queue: 'chaos', kind: 'chaos.work', payload: { ms: 10 } });
      const beforeMs = await startLatency(before.id, 10_000);
      const cut = proxy.blackhole('leasehold-listen');
      const after = await enqueue(db.client, { queue: 'chaos', kind: 'chaos.work', payload: { ms: 10 } });
      const afterMs = await startLatency(after.id, 40_000);
      const listenBackends = await count(
        db.client,
        `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'leasehold-listen' AND datname = current_database()`,
      );
      // Health query every 15 s, 5 s to answer, then a reconnect: about 21 s at worst.
      const bound = 25_000;
      return {
        scenario: 'listen-cut',
        jobs: 2,
        seconds: Math.round((Date.now() - started) / 1000),
        faults: cut,
        figures: [
          { name: 'LISTEN connections cut silently', value: cut, pass: cut === 1, rule: '= 1 (the fault happened)' },
          {
            name: 'ms to start a job before the cut (LISTEN)',
            value: beforeMs,
            pass: beforeMs >= 0 && beforeMs < 2_000,
            rule: '< 2000',
          },
          {
            name: 'ms to start a job enqueued after the silent cut',
            value: afterMs,
            pass: afterMs >= 0 && afterMs <= bound,
            rule: `<= ${bound} (poll is 60000)`,
          },
          {
            name: 'LISTEN backends seen after (old half-open + new)',
            value: listenBackends,
            pass: listenBackends >= 1,
            rule: 'reported',
          },
          {
            name: 'worker processes that crashed on their own',
            value: fleet.crashes,
            pass: fleet.crashes === 0,
            rule: '= 0',
          },
          ...(await layoutFiguresNow(db.client)),
        ],
      };
    } finally {
      await fleet.stop();
      await proxy.close();
      await db.drop();
    }
  },

  'db-restart': () => serverFault('db-restart', 'restart'),

  // The server crashes (immediate shutdown, then crash recovery) under workers whose claims do
  // not wait for their WAL flush (--async-claims): a claim the crash undoes must cost nothing
  // but a re-run.
  'db-crash': () => serverFault('db-crash', 'crash', ['--async-claims']),

  poison: async () => {
    const db = await freshDatabase();
    const fleet = new Fleet(db.url, ['--concurrency', '2']);
    const started = Date.now();
    try {
      fleet.start(3);
      const poison = await enqueueMany(
        db.client,
        Array.from({ length: 3 }, () => ({ queue: 'chaos', kind: 'chaos.poison', maxAttempts: 3 })),
      );
      await enqueueMany(
        db.client,
        Array.from({ length: 100 }, () => ({ queue: 'chaos', kind: 'chaos.work' })),
      );
      await drain(db.client, 120_000);
      const lastFault = Date.now();
      const figures = await ledgerFigures(db.client, fleet, 103, lastFault, Number.POSITIVE_INFINITY);
      const deadAtMax = await count(
        db.client,
        `SELECT count(*) FROM leasehold.jobs WHERE id = ANY($1::uuid[]) AND state = 'dead' AND attempts = 3`,
        [poison.map((p) => p.id)],
      );
      figures.push({
        name: 'poison jobs dead at max attempts',
        value: deadAtMax,
        pass: deadAtMax === 3,
        rule: '= 3 of 3',
      });
      return { scenario: 'poison', jobs: 103, seconds: Math.round((Date.now() - started) / 1000), faults: 9, figures };
    } finally {
      await fleet.stop();
      await db.drop();
    }
  },

  'priority-flood': async () => {
    const db = await freshDatabase();
    await db.client.query(`INSERT INTO leasehold.queues (name, aging_seconds) VALUES ('chaos', 1)`);
    const fleet = new Fleet(db.url, ['--concurrency', '4']);
    const started = Date.now();
    try {
      fleet.start(2);
      // The window below measures aging, not process start-up (over a second each under load,
      // and most of the window's margin): the flood begins once both workers are registered.
      const upBy = Date.now() + 30_000;
      while ((await count(db.client, 'SELECT count(*) FROM leasehold.workers')) < 2 && Date.now() < upBy)
        await sleep(50);
      // Faster than the workers drain it, so without aging the low job would wait forever.
      const flood = () =>
        enqueueMany(
          db.client,
          Array.from({ length: 25 }, () => ({ queue: 'chaos', kind: 'chaos.work', priority: 3, payload: { ms: 20 } })),
        );
      for (let i = 0; i < 8; i++) await flood();
      const low = await enqueue(db.client, { queue: 'chaos', kind: 'chaos.work', priority: 0, payload: { ms: 20 } });
      let lowStarted = false;
      const until = Date.now() + secondsEach * 1000;
      while (Date.now() < until && !lowStarted) {
        await flood();
        lowStarted =
          (await count(db.client, `SELECT count(*) FROM leasehold.jobs WHERE id = $1 AND state <> 'ready'`, [
            low.id,
          ])) === 1;
        await sleep(100);
      }
      // The bound: claimed before every flood job that became due more than 3 × 1 s after it.
      const overtaken = await count(
        db.client,
        `SELECT count(*) FROM leasehold.jobs f, leasehold.jobs l WHERE l.id = $1 AND f.priority = 3 AND f.run_at > l.run_at + interval '3 seconds'
           AND f.started_at IS NOT NULL AND f.started_at < l.started_at`,
        [low.id],
      );
      const waited = await count(
        db.client,
        `SELECT coalesce(extract(epoch FROM started_at - run_at), -1) FROM leasehold.jobs WHERE id = $1`,
        [low.id],
      );
      const backlog = await count(db.client, `SELECT count(*) FROM leasehold.jobs WHERE state = 'ready'`);
      return {
        scenario: 'priority-flood',
        jobs: await count(db.client, 'SELECT count(*) FROM leasehold.jobs'),
        seconds: Math.round((Date.now() - started) / 1000),
        faults: 0,
        figures: [
          { name: 'low-priority job started', value: lowStarted ? 1 : 0, pass: lowStarted, rule: '= 1' },
          {
            name: 'seconds it waited under the flood',
            value: Math.round(waited * 10) / 10,
            pass: true,
            rule: 'reported',
          },
          { name: 'flood jobs due > 3 s later that overtook it', value: overtaken, pass: overtaken === 0, rule: '= 0' },
          {
            name: 'flood backlog when it started',
            value: backlog,
            pass: true,
            rule: 'reported (> 0: the flood was on)',
          },
          // The backlog is still being drained: the ready rows and the rollup, not the leases.
          ...(await layoutFiguresNow(db.client)),
        ],
      };
    } finally {
      await fleet.stop();
      await db.drop();
    }
  },

  'duplicate-enqueue': async () => {
    // 4 processes, 2 connections each, enqueue the same 300 keys in random orders; about 30 %
    // of the transactions roll back.
    const db = await freshDatabase();
    const started = Date.now();
    try {
      const processes = Array.from({ length: 4 }, () =>
        spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'chaos', 'enqueue-keys.ts'), db.url, '300', '2'], {
          cwd: ROOT,
          stdio: ['ignore', 'ignore', 'inherit'],
        }),
      );
      const codes = await Promise.all(
        processes.map((p) => new Promise<number | null>((r) => p.once('exit', (code) => r(code)))),
      );
      if (codes.some((c) => c !== 0)) throw new Error(`an enqueuing process failed: exit codes ${codes.join(', ')}`);
      const committed = await count(db.client, 'SELECT count(*) FROM chaos.committed_keys');
      const jobs = await count(db.client, 'SELECT count(*) FROM leasehold.jobs');
      const missing = await count(
        db.client,
        `SELECT count(*) FROM chaos.committed_keys k WHERE NOT EXISTS (SELECT 1 FROM leasehold.jobs j WHERE j.idempotency_key = k.key)`,
      );
      const extra = await count(
        db.client,
        `SELECT count(*) FROM (SELECT idempotency_key FROM leasehold.jobs GROUP BY 1 HAVING count(*) > 1) d`,
      );
      return {
        scenario: 'duplicate-enqueue',
        jobs,
        seconds: Math.round((Date.now() - started) / 1000),
        faults: 0,
        figures: [
          { name: 'keys whose enqueue committed', value: committed, pass: committed > 0, rule: 'reported' },
          { name: 'committed keys without a job', value: missing, pass: missing === 0, rule: '= 0' },
          { name: 'keys with more than one job', value: extra, pass: extra === 0, rule: '= 0' },
          { name: 'jobs minus committed keys', value: jobs - committed, pass: jobs === committed, rule: '= 0' },
          // Nothing claims here: every job is ready, each inserted by a statement that also took keys.
          ...(await layoutFiguresNow(db.client)),
        ],
      };
    } finally {
      await db.drop();
    }
  },

  drain: async () => {
    // No faults: jobs enqueued every way an application enqueues them (in bulk, in bulk with
    // keys and again with the same keys, one at a time with a key, and in a transaction of the
    // caller's own that commits or rolls back), drained by three workers. The baseline the
    // fault scenarios are held against, and with --pgbouncer every one of those ways through it.
    const db = await freshDatabase();
    const fleet = new Fleet(db.url, ['--concurrency', '4']);
    const watch = new PoolerWatch(db);
    const started = Date.now();
    const inCallerTransaction = async (work: (tx: Executor) => Promise<void>, commit: boolean) => {
      const rollback = new Error('rolled back on purpose');
      const body = async (tx: Executor) => {
        await work(tx);
        if (!commit) throw rollback;
      };
      try {
        if (db.pooled) await db.pooled.db.transaction(body);
        else {
          await db.client.query('BEGIN');
          await body(db.client).then(
            () => db.client.query('COMMIT'),
            async (error: unknown) => {
              await db.client.query('ROLLBACK');
              throw error;
            },
          );
        }
      } catch (error) {
        if (error !== rollback) throw error;
      }
    };
    try {
      fleet.start(3);
      const jobs = secondsEach * 40;
      const perRound = 20;
      const pause = (secondsEach * 700) / (jobs / perRound);
      const work = (n: number) => Array.from({ length: n }, () => ({ queue: 'chaos', kind: 'chaos.work' }));
      let enqueued = 0;
      for (let round = 0; enqueued < jobs; round++) {
        const n = Math.min(perRound, jobs - enqueued);
        const keyed = (k: number) => ({ queue: 'chaos', kind: 'chaos.work', idempotencyKey: `drain-${round}-${k}` });
        switch (round % 4) {
          case 0:
            await enqueueMany(db.enqueuer, work(n));
            break;
          case 1: {
            const specs = Array.from({ length: n }, (_, k) => keyed(k));
            await enqueueMany(db.enqueuer, specs);
            await enqueueMany(db.enqueuer, specs); // repeats: no new jobs
            break;
          }
          case 2:
            for (let k = 0; k < n; k++) await enqueue(db.enqueuer, keyed(k));
            break;
          default:
            await inCallerTransaction((tx) => enqueueMany(tx, work(n)).then(() => {}), true);
            await inCallerTransaction((tx) => enqueueMany(tx, work(n)).then(() => {}), false);
        }
        enqueued += n;
        await watch.sample();
        await sleep(pause);
      }
      const lastEnqueue = Date.now();
      let drained = false;
      const draining = drain(db.client, 120_000).finally(() => (drained = true));
      while (!drained) {
        await watch.sample(); // the pooler keeps carrying the work to the end
        await sleep(200);
      }
      await draining;
      const figures = await ledgerFigures(db.client, fleet, enqueued, lastEnqueue, Number.POSITIVE_INFINITY);
      figures.push(...(await watch.figures()));
      return {
        scenario: 'drain',
        jobs: enqueued,
        seconds: Math.round((Date.now() - started) / 1000),
        faults: 0,
        figures,
      };
    } finally {
      await fleet.stop();
      await db.drop();
    }
  },
};

/**
 * --self-test: one worker runs 16 jobs of 2.5 s each (its leases held by heartbeats), and a
 * second worker starts once some are running. As shipped, the second claims only what is ready
 * and every figure passes. Armed with `unguarded_claim`, its claims also take the jobs the first
 * holds: each is a second lease overlapping a valid one, which the lease log's exclusion
 * constraint refuses and the harness counts, so the overlap figure must fail the run.
 */
async function selfTestRun(armed: boolean): Promise<Result> {
  const db = await freshDatabase();
  const first = new Fleet(db.url, ['--concurrency', '4']);
  const second = new Fleet(db.url, ['--concurrency', '4'], armed ? { LEASEHOLD_FAILPOINTS: 'unguarded_claim' } : {});
  const started = Date.now();
  const jobs = 16;
  try {
    first.start(1);
    await enqueueMany(
      db.client,
      Array.from({ length: jobs }, () => ({ queue: 'chaos', kind: 'chaos.work', payload: { ms: 2500 } })),
    );
    const upBy = Date.now() + 30_000;
    while ((await count(db.client, `SELECT count(*) FROM leasehold.jobs WHERE state = 'running'`)) === 0) {
      if (Date.now() > upBy) throw new Error('the first worker never started a job');
      await sleep(100);
    }
    second.start(1);
    await drain(db.client, 120_000);
    // The second worker's figures (its refused claims are the overlaps), the first's crashes.
    const figures = await ledgerFigures(db.client, second, jobs, Date.now(), Number.POSITIVE_INFINITY);
    figures.push({
      name: 'first worker processes that crashed on their own',
      value: first.crashes,
      pass: first.crashes === 0,
      rule: '= 0',
    });
    return {
      scenario: armed ? 'self-test: unguarded_claim armed' : 'self-test: as shipped',
      jobs,
      seconds: Math.round((Date.now() - started) / 1000),
      faults: armed ? 1 : 0,
      figures,
    };
  } finally {
    await second.stop();
    await first.stop();
    await db.drop();
  }
}

server = await selectDatabase({
  databaseUrl: process.env.DATABASE_URL,
  dataDir: path.join(ROOT, '.leasehold', 'chaos-postgres'),
  database: 'postgres',
  log,
});
serverUrl = server.url;
const results: Result[] = [];
try {
  if (pooledRun) {
    bouncer = await startPgBouncer(serverUrl);
    log(`PgBouncer (transaction mode) on 127.0.0.1:${bouncer.port} in front of the server`);
  }
  if (selfTest) {
    for (const armed of [false, true]) {
      const name: SelfTestRun = armed ? 'self-test: unguarded_claim armed' : 'self-test: as shipped';
      log(`${name}…`);
      try {
        results.push(await selfTestRun(armed));
      } catch (error) {
        const message = `harness error: ${(error as Error).message}`;
        results.push({
          scenario: name,
          jobs: 0,
          seconds: 0,
          faults: 0,
          figures: [{ name: message, value: 1, pass: false, rule: 'no error' }],
        });
      }
    }
  }
  for (const name of selfTest ? [] : chosen) {
    log(`${name}: running (~${secondsEach} s of faults)…`);
    try {
      results.push(await scenarios[name]());
    } catch (error) {
      results.push({
        scenario: name,
        jobs: 0,
        seconds: 0,
        faults: 0,
        figures: [{ name: `harness error: ${(error as Error).message}`, value: 1, pass: false, rule: 'no error' }],
      });
    }
  }
} finally {
  await bouncer?.stop();
  await server.stop();
}

const failed = results.flatMap((r) => r.figures.filter((f) => !f.pass).map((f) => `${r.scenario}: ${f.name}`));
console.log(
  `\nLeasehold failure harness: ${minutes} min, lease ${LEASE_S} s, reaper ${REAP_MS} ms, poll ${POLL_MS} ms (recovery bound ${RECOVERY_BOUND_MS} ms)` +
    `${pooledRun ? ', every worker and the enqueuer through PgBouncer 1.18 in transaction mode (polling, unnamed statements)' : ''}\n`,
);
console.log('| scenario | jobs | faults | figure | value | rule | pass |\n|---|---:|---:|---|---:|---|---|');
for (const r of results) {
  if (r.skipped) console.log(`| ${r.scenario} | | | skipped: ${r.skipped} | | | — |`);
  for (const f of r.figures)
    console.log(
      `| ${r.scenario} | ${r.jobs} | ${r.faults} | ${f.name} | ${f.value} | ${f.rule} | ${f.pass ? 'yes' : '**NO**'} |`,
    );
}
mkdirSync(values.out!, { recursive: true });
const file = path.join(values.out!, 'chaos-results.json');
writeFileSync(
  file,
  JSON.stringify(
    {
      minutes,
      leaseSeconds: LEASE_S,
      reapIntervalMs: REAP_MS,
      pollMs: POLL_MS,
      recoveryBoundMs: RECOVERY_BOUND_MS,
      pgbouncer: pooledRun,
      results,
    },
    null,
    2,
  ),
);
if (selfTest) {
  // As shipped every figure passes; armed, the overlap figure is non-zero and fails the run.
  const shipped = results.find((r) => r.scenario === 'self-test: as shipped');
  const armed = results.find((r) => r.scenario === 'self-test: unguarded_claim armed');
  const shippedFailed = shipped ? shipped.figures.filter((f) => !f.pass).map((f) => f.name) : ['did not run'];
  const overlap = armed?.figures.find((f) => f.name === OVERLAP);
  const caught = overlap !== undefined && overlap.value > 0 && !overlap.pass;
  console.log(
    `\nself-test: as shipped, ${shippedFailed.length === 0 ? 'every figure passes' : `FAILED: ${shippedFailed.join('; ')}`};` +
      ` with unguarded_claim armed, "${OVERLAP}" = ${overlap?.value ?? 'not measured'}:` +
      ` ${caught ? 'the run fails, as it must' : 'NOT CAUGHT: the harness would pass a claim without its guard'} (${file})`,
  );
  process.exit(shippedFailed.length === 0 && caught ? 0 : 1);
}
console.log(`\n${failed.length === 0 ? 'all figures pass' : `FAILED: ${failed.join('; ')}`} (${file})`);
process.exit(failed.length === 0 ? 0 : 1);
