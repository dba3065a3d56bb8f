/**
 * Every worker setting, once: its name, type, default, range, environment variable, flag and
 * help. The CLI's flags and environment (workers/config.ts), `createWorker`'s options
 * (workers/create-worker.ts), `leasehold workers --help`, and the settings tables of
 * docs/operations.md and docs/workers.md (`npm run docs:settings`) are all made from this table;
 * workers/settings.test.ts fails when one of them names a setting this table does not, or the
 * other way round. Adding a setting is one entry here (and its use).
 *
 * `key` is the createWorker option (`option`) and the CLI setting; the flag is `key` in
 * kebab-case, its `no-` form too for booleans. Whole numbers are checked against `min`..`max`
 * on both sides; `default` is both sides' default. A setting without `env` is createWorker's
 * alone, one without `option` the CLI's alone.
 */
import { MAX_CLAIM_BATCH } from '../db/queue/claim.ts';
import { DEFAULT_UNKNOWN_KIND_GRACE_MS } from '../db/queue/reap.ts';
import { DEFAULT_RETENTION } from '../db/queue/retention.ts';
import { DEFAULT_DATABASE_TIMEOUT_MS } from './health.ts';
import { DEFAULT_HEALTH_HOST, DEFAULT_METRICS_HOST } from './metrics.ts';
import { DEFAULT_ABANDON_AFTER_MS } from './producer.ts';
import type { WorkerSettings } from './worker.ts';

export interface WorkerSetting {
  /** `int`: a whole number in min..max; `boolean`; `text`: parsed by the CLI's own rule (workers/config.ts); `object`: createWorker's alone. */
  readonly type: 'int' | 'boolean' | 'text' | 'object';
  readonly min?: number;
  readonly max?: number;
  /** The default on both sides; none: computed (`computed` says how) or unset. */
  readonly default?: number | boolean | string;
  /** A default made of other settings, as --help and the docs say it. */
  readonly computed?: string;
  /** The flag, `--<flag>` (`--no-<flag>` for booleans), and the environment variable. */
  readonly flag?: string;
  readonly env?: string;
  /** What the docs show after the flag (`N`, `a,b`); booleans show their `--no-` or bare form. */
  readonly arg?: string;
  /** The docs' flag and variable cells when they are not the plain ones (`--no-listen`, `LEASEHOLD_LISTEN=false`). */
  readonly flagCell?: string;
  readonly envCell?: string;
  /** The CLI docs table's default cell, when not `default` as it is. */
  readonly shown?: string;
  /** What it does, in the CLI table (docs/operations.md). */
  readonly help?: string;
  /** A createWorker option: its default cell and meaning in docs/workers.md. */
  readonly option?: { readonly shown: string; readonly help: string };
}

const day = 86_400_000;
const days = (seconds: number) => `${seconds / 86_400}d`;

export const WORKER_SETTINGS = {
  pool: {
    type: 'object',
    option: {
      shown: '—',
      help: 'your `pg.Pool`; every statement runs on it, claims included. `stop()` never closes it',
    },
  },
  connectionString: {
    type: 'object',
    option: {
      shown: '—',
      help: 'or a `postgres://` URL: the worker makes a pool (concurrency + 4, at most 30), a claim connection and a heartbeat pool of two (with a client-side query timeout of a sixth of the lease), and `stop()` closes them',
    },
  },
  jobs: { type: 'object', option: { shown: '— (required)', help: 'the handlers, one per kind' } },
  queues: {
    type: 'text',
    flag: 'queues',
    env: 'LEASEHOLD_QUEUES',
    arg: 'a,b',
    shown: "the handlers' queues",
    help: "queues served; by default its handlers' `defaultQueue`s and `default` (where a job goes whose producer names no queue)",
    option: {
      shown: "the handlers' `defaultQueue`s and `default`",
      help: 'queues served (`default` is where a job goes when its producer names no queue)',
    },
  },
  queueLimits: {
    type: 'text',
    flag: 'queue-limits',
    env: 'LEASEHOLD_QUEUE_LIMITS',
    arg: 'Q=N,…',
    shown: 'none',
    help: 'limits of queues served, across every worker: `emails=10` running at once, `bulk=100/1s` starts, `imports=2+50/1m` both (docs/workers.md, Queue limits)',
    option: {
      shown: 'none',
      help: "`{ emails: { max: 10 }, bulk: { rate: { max: 100, perMs: 1000 } } }`: a served queue's limits, across every worker (Queue limits, below)",
    },
  },
  concurrency: {
    type: 'int',
    min: 1,
    max: 10_000,
    default: 10,
    flag: 'concurrency',
    env: 'LEASEHOLD_CONCURRENCY',
    arg: 'N',
    help: 'handlers running at once (at most 10,000)',
    option: { shown: '10', help: 'handlers running at once (1–10,000)' },
  },
  leaseSeconds: {
    type: 'int',
    min: 2,
    max: 3600,
    default: 30,
    flag: 'lease-seconds',
    env: 'LEASEHOLD_LEASE_SECONDS',
    arg: 'N',
    help: 'lease per attempt; heartbeats at a third of it',
    option: { shown: '30', help: 'lease per attempt (2–3,600); heartbeats at a third' },
  },
  batchSize: {
    type: 'int',
    min: 1,
    max: MAX_CLAIM_BATCH,
    computed: `concurrency, at most ${MAX_CLAIM_BATCH}`,
    flag: 'batch-size',
    env: 'LEASEHOLD_BATCH_SIZE',
    arg: 'N',
    shown: 'concurrency, at most 1,000',
    help: 'most jobs per claim (at most 1,000)',
    option: { shown: 'concurrency', help: 'most jobs per claim (at most 1,000)' },
  },
  pollMs: {
    type: 'int',
    min: 50,
    max: 600_000,
    default: 2000,
    flag: 'poll-ms',
    env: 'LEASEHOLD_POLL_MS',
    arg: 'N',
    help: 'poll interval (±20 % jitter)',
    option: { shown: '2000', help: 'poll interval when no wake-up comes (50–600,000)' },
  },
  listen: {
    type: 'boolean',
    default: true,
    flag: 'listen',
    env: 'LEASEHOLD_LISTEN',
    flagCell: '--no-listen',
    envCell: 'LEASEHOLD_LISTEN=false',
    shown: 'listen on',
    help: 'turn LISTEN wake-ups off',
    option: { shown: 'true', help: 'LISTEN for enqueue wake-ups, on one connection of its own' },
  },
  directUrl: {
    type: 'text',
    flag: 'direct-url',
    env: 'LEASEHOLD_DIRECT_URL',
    arg: 'URL',
    shown: '`DATABASE_URL`',
    help: 'PostgreSQL itself, not a pooler: the LISTEN connection and `--migrate` use it (Behind PgBouncer)',
  },
  listenConnectionString: {
    type: 'object',
    option: {
      shown: "the connection string, or your pool's own options",
      help: 'where LISTEN connects: PostgreSQL itself when your pool goes through a transaction pooler (or `listen: false`)',
    },
  },
  preparedStatements: {
    type: 'boolean',
    default: true,
    flag: 'prepared-statements',
    env: 'LEASEHOLD_PREPARED_STATEMENTS',
    flagCell: '--no-prepared-statements',
    envCell: 'LEASEHOLD_PREPARED_STATEMENTS=false',
    shown: 'prepared',
    help: 'every statement unnamed (PgBouncer before 1.21 in transaction mode)',
    option: {
      shown: 'true',
      help: 'with `connectionString` only: `false` behind PgBouncer before 1.21 in transaction mode',
    },
  },
  asyncClaims: {
    type: 'boolean',
    default: false,
    flag: 'async-claims',
    env: 'LEASEHOLD_ASYNC_CLAIMS',
    envCell: 'LEASEHOLD_ASYNC_CLAIMS=true',
    shown: 'off',
    help: 'claims commit without waiting for their WAL flush: faster pickup; a database crash can undo a claim made just before it (docs/contract.md §4)',
  },
  metricsPort: {
    type: 'int',
    min: 0,
    max: 65535,
    default: 0,
    flag: 'metrics-port',
    env: 'LEASEHOLD_METRICS_PORT',
    arg: 'N',
    shown: '0 (off)',
    help: '`/metrics` (Prometheus) and `/healthz` on one listener (Metrics, below)',
  },
  metricsHost: {
    type: 'text',
    default: DEFAULT_METRICS_HOST,
    flag: 'metrics-host',
    env: 'LEASEHOLD_METRICS_HOST',
    arg: 'H',
    shown: '`127.0.0.1`',
    help: 'where the metrics listen: this host only, for a scraper beside the worker (the metrics name queues and kinds); `0.0.0.0` for every interface',
  },
  healthPort: {
    type: 'int',
    min: 0,
    max: 65535,
    default: 0,
    flag: 'health-port',
    env: 'LEASEHOLD_HEALTH_PORT',
    arg: 'N',
    shown: '0 (off)',
    help: '`/healthz` alone, answering from before the start (503 "worker not started" while the worker waits for its database); the same port as `--metrics-port` shares that listener',
  },
  healthHost: {
    type: 'text',
    default: DEFAULT_HEALTH_HOST,
    flag: 'health-host',
    env: 'LEASEHOLD_HEALTH_HOST',
    arg: 'H',
    shown: '`0.0.0.0`',
    help: 'where `/healthz` listens (probes come from outside); with one port for both, it must equal `--metrics-host`',
  },
  claimStaleMs: {
    type: 'int',
    min: 100,
    max: day,
    computed: 'max(30000, 5 × poll-ms)',
    flag: 'claim-stale-ms',
    env: 'LEASEHOLD_CLAIM_STALE_MS',
    arg: 'N',
    help: '`/healthz` reports the claim loop stale after this long without a claim while a slot is free; must exceed `--poll-ms` × 1.2',
    option: {
      shown: 'max(30 s, 5 × `pollMs`)',
      help: '`health()`: the claim loop is stale after this long without a claim while a slot is free',
    },
  },
  healthTimeoutMs: {
    type: 'int',
    min: 10,
    max: 600_000,
    default: DEFAULT_DATABASE_TIMEOUT_MS,
    option: { shown: String(DEFAULT_DATABASE_TIMEOUT_MS), help: '`health()`: how long `SELECT 1` may take' },
  },
  graceMs: {
    type: 'int',
    min: 0,
    max: 3_600_000,
    default: 10_000,
    flag: 'grace-ms',
    env: 'LEASEHOLD_GRACE_MS',
    arg: 'N',
    help: 'shutdown grace before releasing',
    option: { shown: '10000', help: 'how long `stop()` lets running handlers finish before releasing them' },
  },
  abandonAfterMs: {
    type: 'int',
    min: 0,
    max: day,
    default: DEFAULT_ABANDON_AFTER_MS,
    flag: 'abandon-after-ms',
    env: 'LEASEHOLD_ABANDON_AFTER_MS',
    arg: 'N',
    help: 'how long after its stop (timeout, lease lost, shutdown) a handler that ignores its signal keeps its slot; then it is abandoned: counted, logged, its slot freed',
    option: {
      shown: String(DEFAULT_ABANDON_AFTER_MS),
      help: 'how long a stopped handler that ignores its signal keeps its slot (see Handlers that ignore their signal)',
    },
  },
  reapIntervalMs: {
    type: 'int',
    min: 100,
    max: 3_600_000,
    default: 5000,
    flag: 'reap-interval-ms',
    env: 'LEASEHOLD_REAP_INTERVAL_MS',
    arg: 'N',
    help: 'reaper period',
  },
  retentionIntervalMs: {
    type: 'int',
    min: 1000,
    max: day,
    default: 60_000,
    flag: 'retention-interval-ms',
    env: 'LEASEHOLD_RETENTION_INTERVAL_MS',
    arg: 'N',
    help: 'retention period',
  },
  historyIntervalMs: {
    type: 'int',
    min: 1000,
    max: 3_600_000,
    default: 60_000,
    flag: 'history-interval-ms',
    env: 'LEASEHOLD_HISTORY_INTERVAL_MS',
    arg: 'N',
    help: "how often each queue's history is recorded for the dashboard's charts (a minute is its resolution)",
  },
  retentionDone: {
    type: 'text',
    default: days(DEFAULT_RETENTION.doneAfterSeconds),
    flag: 'retention-done',
    env: 'LEASEHOLD_RETENTION_DONE',
    arg: 'D',
    help: 'how long done jobs are kept after they finished (`30s`, `15m`, `36h`, `7d`; at most 36500d); see Retention',
  },
  retentionDead: {
    type: 'text',
    default: days(DEFAULT_RETENTION.deadAfterSeconds),
    flag: 'retention-dead',
    env: 'LEASEHOLD_RETENTION_DEAD',
    arg: 'D',
    help: 'how long dead jobs are kept',
  },
  retentionCancelled: {
    type: 'text',
    default: days(DEFAULT_RETENTION.cancelledAfterSeconds),
    flag: 'retention-cancelled',
    env: 'LEASEHOLD_RETENTION_CANCELLED',
    arg: 'D',
    help: 'how long cancelled jobs are kept',
  },
  retentionAttempts: {
    type: 'text',
    default: days(DEFAULT_RETENTION.attemptsAfterSeconds),
    flag: 'retention-attempts',
    env: 'LEASEHOLD_RETENTION_ATTEMPTS',
    arg: 'D',
    help: 'how long attempt history rows are kept after the attempt ended',
  },
  retentionQueue: {
    type: 'text',
    flag: 'retention-queue',
    env: 'LEASEHOLD_RETENTION_QUEUES',
    arg: 'Q:S=D,…',
    shown: 'none',
    help: "a queue's own windows (`audit:dead=90d,cancelled=90d`): the flag once per queue, the variable `;`-separated",
  },
  retention: {
    type: 'object',
    option: {
      shown: 'done 1 d, dead 14 d, cancelled 7 d, attempts 14 d',
      help: 'seconds: `doneAfterSeconds`, `deadAfterSeconds`, `cancelledAfterSeconds`, `attemptsAfterSeconds`, and `queues: { name: { … } }` (docs/operations.md, Retention)',
    },
  },
  unknownKindGraceMs: {
    type: 'int',
    min: 0,
    max: 365 * day,
    default: DEFAULT_UNKNOWN_KIND_GRACE_MS,
    flag: 'unknown-kind-grace-ms',
    env: 'LEASEHOLD_UNKNOWN_KIND_GRACE_MS',
    arg: 'N',
    shown: `${DEFAULT_UNKNOWN_KIND_GRACE_MS} (24 h)`,
    help: 'how long a due job waits for a live worker that runs its kind version before it ends `dead` (Deploying a new kind); at most 365 days',
  },
  maintenance: {
    type: 'boolean',
    default: true,
    flag: 'maintenance',
    env: 'LEASEHOLD_MAINTENANCE',
    flagCell: '--no-maintenance',
    envCell: 'LEASEHOLD_MAINTENANCE=false',
    shown: 'on',
    help: 'no reaper/retention here',
    option: {
      shown: 'true',
      help: 'run the reaper and retention here too (an advisory lock lets one process per database do a round)',
    },
  },
  scheduler: {
    type: 'boolean',
    default: true,
    flag: 'scheduler',
    env: 'LEASEHOLD_SCHEDULER',
    flagCell: '--no-scheduler',
    envCell: 'LEASEHOLD_SCHEDULER=false',
    shown: 'on',
    help: 'enqueue no schedule ticks here (docs/scheduling.md)',
    option: {
      shown: 'true',
      help: "enqueue due schedules' ticks from this process too (every worker may: a tick is enqueued once, docs/scheduling.md)",
    },
  },
  schedules: {
    type: 'object',
    option: {
      shown: '[]',
      help: 'schedules declared in code (`defineSchedule`), declared at start; a handlers file exports them as `schedules`',
    },
  },
  retryBaseMs: {
    type: 'int',
    min: 0,
    max: day,
    default: 1000,
    flag: 'retry-base-ms',
    env: 'LEASEHOLD_RETRY_BASE_MS',
    arg: 'N',
    help: 'first backoff step',
  },
  retryMaxMs: {
    type: 'int',
    min: 0,
    max: 30 * day,
    default: 3_600_000,
    flag: 'retry-max-ms',
    env: 'LEASEHOLD_RETRY_MAX_MS',
    arg: 'N',
    help: 'backoff cap',
  },
  leaseExpiredDelayMs: {
    type: 'int',
    min: 0,
    max: day,
    default: 5000,
    flag: 'lease-expired-delay-ms',
    env: 'LEASEHOLD_LEASE_EXPIRED_DELAY_MS',
    arg: 'N',
    help: 'delay before a reaped job may run again',
  },
  retry: {
    type: 'object',
    option: {
      shown: '1 s base, 1 h cap',
      help: 'retry policy fields (`baseDelayMs`, `maxDelayMs`, `leaseExpiredDelayMs`, `maxRetryAfterMs`)',
    },
  },
  handlers: {
    type: 'text',
    default: '',
    flag: 'handlers',
    env: 'LEASEHOLD_HANDLERS',
    arg: 'a.ts,b.ts',
    shown: 'none',
    help: 'extra handler modules',
  },
  workerId: {
    type: 'text',
    flag: 'worker-id',
    env: 'LEASEHOLD_WORKER_ID',
    arg: 'ID',
    shown: 'host:pid:random',
    help: 'id in logs, leases, registry',
    option: { shown: '`<host>:<pid>:<random>`', help: 'the id in the worker registry' },
  },
  logLevel: {
    type: 'text',
    default: 'info',
    flag: 'log-level',
    env: 'LEASEHOLD_LOG_LEVEL',
    arg: 'L',
    help: 'pino level',
  },
  migrate: {
    type: 'boolean',
    default: false,
    flag: 'migrate',
    env: 'LEASEHOLD_MIGRATE',
    envCell: 'LEASEHOLD_MIGRATE=true',
    shown: 'off',
    help: 'apply migrations at start',
  },
  logger: {
    type: 'object',
    option: {
      shown: 'pino at `warn`',
      help: 'a pino logger (child loggers carry `jobId`, `attempt`, `kind`, `queue`)',
    },
  },
  metrics: { type: 'object', option: { shown: 'none', help: "`createMetrics()`'s counters, to scrape (see below)" } },
  version: { type: 'object', option: { shown: 'none', help: "what the dashboard shows as the worker's version" } },
} as const satisfies Record<string, WorkerSetting>;

export type WorkerSettingKey = keyof typeof WORKER_SETTINGS;

/** The settings as entries, in the table's order. */
export const settingEntries = (): [string, WorkerSetting][] => Object.entries<WorkerSetting>(WORKER_SETTINGS);

/** The keys createWorker takes, as a type (workers/settings.test.ts holds CreateWorkerOptions to it). */
export type WorkerOptionKey = {
  [K in WorkerSettingKey]: (typeof WORKER_SETTINGS)[K] extends { option: object } ? K : never;
}[WorkerSettingKey];

/** The CLI's settings: those with a flag. */
export const cliSettings = (): [string, WorkerSetting & { flag: string; env: string }][] =>
  settingEntries().flatMap(([key, s]) => (s.flag && s.env ? [[key, { ...s, flag: s.flag, env: s.env }]] : []));

/** The names createWorker takes. */
export const optionKeys = (): string[] => settingEntries().flatMap(([key, s]) => (s.option ? [key] : []));

/**
 * Variables the worker process reads that are not worker settings, each with its reason
 * (workers/settings.test.ts fails on a variable read in workers/ that is in neither list).
 */
export const NOT_WORKER_SETTINGS = {
  /** The connection: lib/settings.ts lists it with the dashboard's settings. */
  DATABASE_URL: 'the database (listed with the connection’s settings)',
  /** The failure harness's crash points (workers/failpoints.ts): tests only. */
  LEASEHOLD_FAILPOINTS: 'test-only crash points',
  /** npm's, when run by npm: the version the worker registry shows. */
  npm_package_version: "npm's",
} as const;

/**
 * Settings no flag or option changes: written once here, for the CLI and createWorker alike.
 */
export const FIXED_SETTINGS = {
  /** How long the completer gathers acknowledgements before it writes them. */
  ackFlushMs: 5,
  /** How often the worker registry entry is refreshed. */
  registryIntervalMs: 10_000,
  /** A registry entry this old is a dead worker's. */
  staleWorkerSeconds: 60,
  /** How long receipts are kept. */
  receiptsRetentionSeconds: 30 * 86_400,
} as const;

type Fixed = 'ackFlushMs' | 'registryIntervalMs' | 'staleWorkerSeconds' | 'receiptsRetentionSeconds';
/** What both sides resolve from their settings: a Worker's settings without the fixed ones. */
export type ResolvedWorkerSettings = Omit<WorkerSettings, Fixed | 'maintenance'> & {
  maintenance: Omit<WorkerSettings['maintenance'], Fixed>;
};

/** The one place a Worker's settings are assembled (the CLI's and createWorker's). */
export function workerSettingsOf(s: ResolvedWorkerSettings): WorkerSettings {
  return {
    ...s,
    batchSize: Math.min(s.batchSize, s.concurrency),
    ackFlushMs: FIXED_SETTINGS.ackFlushMs,
    registryIntervalMs: FIXED_SETTINGS.registryIntervalMs,
    maintenance: {
      ...s.maintenance,
      staleWorkerSeconds: FIXED_SETTINGS.staleWorkerSeconds,
      receiptsRetentionSeconds: FIXED_SETTINGS.receiptsRetentionSeconds,
    },
  };
}

/** The default as --help shows it ('' when there is none). */
export function helpDefault(s: WorkerSetting): string {
  const value = s.default === undefined ? s.computed : String(s.default);
  return value === undefined || value === '' ? '' : `default ${value}`;
}

/** One line per CLI setting (flag, variable, default), for `leasehold workers --help`. */
export function workerSettingsHelpLines(): string {
  const rows = cliSettings().map(([, s]) => [
    s.type === 'boolean' ? `--${s.flag} / --no-${s.flag}` : `--${s.flag} <value>`,
    s.env,
    helpDefault(s),
  ]);
  const w0 = Math.max(...rows.map((r) => r[0]!.length));
  const w1 = Math.max(...rows.map((r) => r[1]!.length));
  return rows.map(([a, b, c]) => `  ${a!.padEnd(w0)}  ${b!.padEnd(w1)}  ${c}`.trimEnd()).join('\n');
}

/** A table of the docs: its header and rows (scripts/settings-docs.ts writes it as markdown). */
export interface DocsTable {
  header: string[];
  rows: string[][];
}

/** docs/operations.md's "Settings" table: the CLI's flags and variables. */
export function cliSettingsRows(): DocsTable {
  return {
    header: ['flag', 'environment', 'default', 'meaning'],
    rows: cliSettings().map(([, s]) => [
      `\`${s.flagCell ?? `--${s.flag}${s.arg ? ` ${s.arg}` : ''}`}\``,
      `\`${s.envCell ?? s.env}\``,
      s.shown ?? String(s.default ?? s.computed),
      s.help ?? '',
    ]),
  };
}

/** docs/workers.md's "Options" table: createWorker's options. */
export function optionRows(): DocsTable {
  return {
    header: ['option', 'default', 'meaning'],
    rows: settingEntries().flatMap(([key, s]) => (s.option ? [[`\`${key}\``, s.option.shown, s.option.help]] : [])),
  };
}
