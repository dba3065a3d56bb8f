/**
 * Worker settings from command-line flags and the environment (flags win). A bad setting stops
 * start-up with a message that names it.
 *
 *   --queues a,b            LEASEHOLD_QUEUES            queues to serve (default: the handlers' default queues and default)
 *   --concurrency N         LEASEHOLD_CONCURRENCY       handlers running at once (default 10, at most 10,000)
 *   --lease-seconds N       LEASEHOLD_LEASE_SECONDS     lease per attempt (default 30)
 *   --batch-size N          LEASEHOLD_BATCH_SIZE        most jobs per claim (default: concurrency, at most 1,000)
 *   --poll-ms N             LEASEHOLD_POLL_MS           poll interval (default 2000)
 *   --no-listen             LEASEHOLD_LISTEN=false      no LISTEN wake-ups: poll only
 *   --direct-url URL        LEASEHOLD_DIRECT_URL        PostgreSQL itself, not a pooler: LISTEN and --migrate use it
 *                                                       (default DATABASE_URL; behind PgBouncer set this or --no-listen)
 *   --no-prepared-statements LEASEHOLD_PREPARED_STATEMENTS=false every statement unnamed (PgBouncer in transaction mode)
 *   --async-claims          LEASEHOLD_ASYNC_CLAIMS=true claims commit without waiting for the WAL flush (default off)
 *   --metrics-port N        LEASEHOLD_METRICS_PORT      Prometheus /metrics and /healthz (0 = off, default)
 *   --metrics-host H        LEASEHOLD_METRICS_HOST      where metrics listen (default 127.0.0.1: this host's scraper)
 *   --health-port N         LEASEHOLD_HEALTH_PORT       /healthz alone, served from before the start (0 = off, default)
 *   --health-host H         LEASEHOLD_HEALTH_HOST       where /healthz listens (default 0.0.0.0: probes come from outside)
 *                                                       (one port for both: one listener, and both hosts must agree)
 *   --claim-stale-ms N      LEASEHOLD_CLAIM_STALE_MS    /healthz: claim loop stale after this long with a free slot
 *                                                       (default max(30000, 5 × poll-ms); above poll-ms × 1.2)
 *   --grace-ms N            LEASEHOLD_GRACE_MS          shutdown grace period (default 10000)
 *   --abandon-after-ms N    LEASEHOLD_ABANDON_AFTER_MS  how long a stopped handler that ignores its signal keeps
 *                                                       its slot before it is abandoned (default 30000)
 *   --reap-interval-ms N    LEASEHOLD_REAP_INTERVAL_MS  reaper period (default 5000)
 *   --retention-interval-ms N LEASEHOLD_RETENTION_INTERVAL_MS (default 60000)
 *   --retention-done D      LEASEHOLD_RETENTION_DONE    how long done jobs are kept (30s, 15m, 36h, 7d; default 1d)
 *   --retention-dead D      LEASEHOLD_RETENTION_DEAD    dead jobs (default 14d)
 *   --retention-cancelled D LEASEHOLD_RETENTION_CANCELLED cancelled jobs (default 7d)
 *   --retention-attempts D  LEASEHOLD_RETENTION_ATTEMPTS attempt history (default 14d)
 *   --retention-queue Q:S=D LEASEHOLD_RETENTION_QUEUES  a queue's own windows: `audit:dead=90d,done=7d`, the flag
 *                                                       repeated or the variable `;`-separated (docs/operations.md)
 *   --unknown-kind-grace-ms N LEASEHOLD_UNKNOWN_KIND_GRACE_MS how long a job whose kind version no live worker
 *                                                       runs waits before it ends dead (default 86400000: 24 h)
 *   --no-maintenance        LEASEHOLD_MAINTENANCE=false no reaper/retention in this process
 *   --retry-base-ms N       LEASEHOLD_RETRY_BASE_MS     first backoff step (default 1000)
 *   --retry-max-ms N        LEASEHOLD_RETRY_MAX_MS      backoff cap (default 3600000)
 *   --lease-expired-delay-ms N LEASEHOLD_LEASE_EXPIRED_DELAY_MS delay before a reaped job runs again (default 5000)
 *   --handlers a.ts,b.ts    LEASEHOLD_HANDLERS          the handler files to load (at least one; workers/handler-files.ts)
 *   --worker-id ID          LEASEHOLD_WORKER_ID         default host:pid:random
 *   --log-level L           LEASEHOLD_LOG_LEVEL         default info
 *   --migrate               LEASEHOLD_MIGRATE=true      apply migrations at start (always on the embedded database)
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { MAX_CLAIM_BATCH } from '../db/queue/claim.ts';
import { DEFAULT_UNKNOWN_KIND_GRACE_MS } from '../db/queue/reap.ts';
import {
  DEFAULT_RETENTION,
  MAX_RETENTION_SECONDS,
  parseRetentionDuration,
  type RetentionOptions,
  retentionProblems,
} from '../db/queue/retention.ts';
import { NAME_PATTERN } from '../db/queue/validate.ts';
import { claimStaleDefault } from './health.ts';
import { DEFAULT_HEALTH_HOST, DEFAULT_METRICS_HOST } from './metrics.ts';
import { ConfigError } from './option-error.ts';
import { DEFAULT_ABANDON_AFTER_MS } from './producer.ts';
import type { WorkerSettings } from './worker.ts';

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
/** A host name (`localhost`, `worker-3.internal`) or an IP address, as `server.listen` takes it. */
const HOSTNAME =
  /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const host = z
  .string()
  .refine((s) => net.isIP(s) !== 0 || HOSTNAME.test(s), 'not an IP address or host name (e.g. 0.0.0.0, 127.0.0.1, ::)');
/** A retention window: `30s`, `15m`, `36h`, `7d`, as seconds. */
const duration = z.string().transform((text, ctx) => {
  const seconds = parseRetentionDuration(text);
  if (seconds === undefined || seconds > MAX_RETENTION_SECONDS) {
    ctx.addIssue({
      code: 'custom',
      message: 'expected a duration such as 30s, 15m, 36h or 7d (at most 36500d)',
    });
    return z.NEVER;
  }
  return seconds;
});
const RETENTION_STATES = {
  done: 'doneAfterSeconds',
  dead: 'deadAfterSeconds',
  cancelled: 'cancelledAfterSeconds',
} as const;
/** `audit:dead=90d,done=7d;mail:done=1h`: each queue's own windows. */
const retentionQueues = z.string().transform((text, ctx) => {
  const queues: NonNullable<RetentionOptions['queues']> = {};
  for (const entry of text
    .split(';')
    .map((e) => e.trim())
    .filter(Boolean)) {
    const colon = entry.lastIndexOf(':');
    const queue = entry.slice(0, colon);
    const windows = colon > 0 ? entry.slice(colon + 1).split(',') : [];
    const own: Record<string, number> = {};
    for (const window of windows) {
      const [state = '', value = ''] = window.split('=').map((p) => p.trim());
      const key = RETENTION_STATES[state as keyof typeof RETENTION_STATES];
      const seconds = parseRetentionDuration(value);
      if (!key || seconds === undefined) {
        ctx.addIssue({
          code: 'custom',
          message: `${JSON.stringify(entry)}: expected QUEUE:STATE=DURATION[,STATE=DURATION] with STATE done, dead or cancelled and DURATION such as 36h or 7d`,
        });
        return z.NEVER;
      }
      own[key] = seconds;
    }
    if (colon <= 0 || windows.length === 0) {
      ctx.addIssue({
        code: 'custom',
        message: `${JSON.stringify(entry)}: expected QUEUE:STATE=DURATION (audit:dead=90d)`,
      });
      return z.NEVER;
    }
    if (!NAME_PATTERN.test(queue)) {
      ctx.addIssue({ code: 'custom', message: `${JSON.stringify(queue)}: not a queue name` });
      return z.NEVER;
    }
    queues[queue] = { ...queues[queue], ...own };
  }
  return queues;
});
const bool = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => ['true', '1', 'yes'].includes(v));

const schema = z.strictObject({
  queues: z
    .string()
    .transform((s) =>
      s
        .split(',')
        .map((q) => q.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.string().regex(NAME_PATTERN, 'not a queue name')).min(1, 'name at least one queue'))
    .optional(),
  concurrency: int(1, 10_000),
  leaseSeconds: int(2, 3600),
  batchSize: int(1, MAX_CLAIM_BATCH).optional(),
  pollMs: int(50, 600_000),
  listen: bool,
  directUrl: z
    .string()
    .refine((s) => URL.canParse(s) && /^postgres(ql)?:$/.test(new URL(s).protocol), 'not a postgres:// URL')
    .optional(),
  preparedStatements: bool,
  asyncClaims: bool,
  metricsPort: int(0, 65535),
  metricsHost: host,
  healthPort: int(0, 65535),
  healthHost: host,
  claimStaleMs: int(100, 86_400_000).optional(),
  graceMs: int(0, 3_600_000),
  abandonAfterMs: int(0, 86_400_000),
  reapIntervalMs: int(100, 3_600_000),
  retentionIntervalMs: int(1000, 86_400_000),
  retentionDone: duration,
  retentionDead: duration,
  retentionCancelled: duration,
  retentionAttempts: duration,
  retentionQueue: retentionQueues.optional(),
  unknownKindGraceMs: int(0, 365 * 86_400_000),
  maintenance: bool,
  retryBaseMs: int(0, 86_400_000),
  retryMaxMs: int(0, 30 * 86_400_000),
  leaseExpiredDelayMs: int(0, 86_400_000),
  handlers: z.string().transform((s) =>
    s
      .split(',')
      .map((h) => h.trim())
      .filter(Boolean),
  ),
  workerId: z.string().min(1).max(200).optional(),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
  migrate: bool,
});

export type WorkerConfig = WorkerSettings & {
  /** Where LISTEN and migrations connect, when DATABASE_URL is a pooler's. */
  directUrl: string | undefined;
  metricsPort: number;
  metricsHost: string;
  /** `/healthz` on its own listener (0: none; equal to metricsPort: the metrics listener serves it). */
  healthPort: number;
  healthHost: string;
  /** /healthz reports the claim loop stale after this long without a claim while a slot is free. */
  claimStaleMs: number;
  handlerModules: string[];
  logLevel: string;
  migrate: boolean;
};

const DEFAULTS: Record<string, string> = {
  concurrency: '10',
  leaseSeconds: '30',
  pollMs: '2000',
  listen: 'true',
  preparedStatements: 'true',
  asyncClaims: 'false',
  metricsPort: '0',
  metricsHost: DEFAULT_METRICS_HOST,
  healthPort: '0',
  healthHost: DEFAULT_HEALTH_HOST,
  graceMs: '10000',
  abandonAfterMs: String(DEFAULT_ABANDON_AFTER_MS),
  reapIntervalMs: '5000',
  retentionIntervalMs: '60000',
  retentionDone: `${DEFAULT_RETENTION.doneAfterSeconds / 86_400}d`,
  retentionDead: `${DEFAULT_RETENTION.deadAfterSeconds / 86_400}d`,
  retentionCancelled: `${DEFAULT_RETENTION.cancelledAfterSeconds / 86_400}d`,
  retentionAttempts: `${DEFAULT_RETENTION.attemptsAfterSeconds / 86_400}d`,
  unknownKindGraceMs: String(DEFAULT_UNKNOWN_KIND_GRACE_MS),
  maintenance: 'true',
  retryBaseMs: '1000',
  retryMaxMs: '3600000',
  leaseExpiredDelayMs: '5000',
  handlers: '',
  logLevel: 'info',
  migrate: 'false',
};

const FLAGS = {
  queues: 'LEASEHOLD_QUEUES',
  concurrency: 'LEASEHOLD_CONCURRENCY',
  'lease-seconds': 'LEASEHOLD_LEASE_SECONDS',
  'batch-size': 'LEASEHOLD_BATCH_SIZE',
  'poll-ms': 'LEASEHOLD_POLL_MS',
  listen: 'LEASEHOLD_LISTEN',
  'direct-url': 'LEASEHOLD_DIRECT_URL',
  'prepared-statements': 'LEASEHOLD_PREPARED_STATEMENTS',
  'async-claims': 'LEASEHOLD_ASYNC_CLAIMS',
  'metrics-port': 'LEASEHOLD_METRICS_PORT',
  'metrics-host': 'LEASEHOLD_METRICS_HOST',
  'health-port': 'LEASEHOLD_HEALTH_PORT',
  'health-host': 'LEASEHOLD_HEALTH_HOST',
  'claim-stale-ms': 'LEASEHOLD_CLAIM_STALE_MS',
  'grace-ms': 'LEASEHOLD_GRACE_MS',
  'abandon-after-ms': 'LEASEHOLD_ABANDON_AFTER_MS',
  'reap-interval-ms': 'LEASEHOLD_REAP_INTERVAL_MS',
  'retention-interval-ms': 'LEASEHOLD_RETENTION_INTERVAL_MS',
  'retention-done': 'LEASEHOLD_RETENTION_DONE',
  'retention-dead': 'LEASEHOLD_RETENTION_DEAD',
  'retention-cancelled': 'LEASEHOLD_RETENTION_CANCELLED',
  'retention-attempts': 'LEASEHOLD_RETENTION_ATTEMPTS',
  'retention-queue': 'LEASEHOLD_RETENTION_QUEUES',
  'unknown-kind-grace-ms': 'LEASEHOLD_UNKNOWN_KIND_GRACE_MS',
  maintenance: 'LEASEHOLD_MAINTENANCE',
  'retry-base-ms': 'LEASEHOLD_RETRY_BASE_MS',
  'retry-max-ms': 'LEASEHOLD_RETRY_MAX_MS',
  'lease-expired-delay-ms': 'LEASEHOLD_LEASE_EXPIRED_DELAY_MS',
  handlers: 'LEASEHOLD_HANDLERS',
  'worker-id': 'LEASEHOLD_WORKER_ID',
  'log-level': 'LEASEHOLD_LOG_LEVEL',
  migrate: 'LEASEHOLD_MIGRATE',
} as const;
const BOOLEAN_FLAGS = new Set(['listen', 'prepared-statements', 'async-claims', 'maintenance', 'migrate']);

/** Defaults made from other settings, as the help shows them. */
const COMPUTED_DEFAULTS: Record<string, string> = {
  batchSize: 'concurrency, at most 1000',
  claimStaleMs: 'max(30000, 5 × poll-ms)',
};

/** One line per setting (flag, variable, default), for `leasehold workers --help`. */
export function workerSettingsHelp(): string {
  const rows = Object.entries(FLAGS).map(([flag, envName]) => {
    const boolean = BOOLEAN_FLAGS.has(flag);
    const fallback = DEFAULTS[camel(flag)] ?? COMPUTED_DEFAULTS[camel(flag)];
    const name = boolean ? `--${flag} / --no-${flag}` : `--${flag} <value>`;
    return [name, envName, fallback === undefined || fallback === '' ? '' : `default ${fallback}`];
  });
  const w0 = Math.max(...rows.map((r) => r[0]!.length));
  const w1 = Math.max(...rows.map((r) => r[1]!.length));
  return rows.map(([a, b, c]) => `  ${a!.padEnd(w0)}  ${b!.padEnd(w1)}  ${c}`.trimEnd()).join('\n');
}

export { ConfigError };

const camel = (flag: string) => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

export function parseWorkerConfig(argv: string[], env: Readonly<Record<string, string | undefined>>): WorkerConfig {
  let values: Record<string, string | boolean | undefined>;
  try {
    const options: Record<string, { type: 'string' | 'boolean'; multiple?: boolean }> = {};
    for (const flag of Object.keys(FLAGS)) {
      options[flag] = { type: BOOLEAN_FLAGS.has(flag) ? 'boolean' : 'string' };
      if (BOOLEAN_FLAGS.has(flag)) options[`no-${flag}`] = { type: 'boolean' };
    }
    // `--handlers a.ts --handlers b.ts` loads both (as `--handlers a.ts,b.ts` does), rather than
    // the last one alone.
    options.handlers = { type: 'string', multiple: true };
    // `--retention-queue a:done=1h --retention-queue b:dead=90d`: one queue each.
    options['retention-queue'] = { type: 'string', multiple: true };
    const parsed = parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values;
    values = Object.fromEntries(
      Object.entries(parsed).map(([key, value]) => [
        key,
        Array.isArray(value) ? value.join(key === 'retention-queue' ? ';' : ',') : value,
      ]),
    );
  } catch (error) {
    throw new ConfigError(`${(error as Error).message} (the settings: leasehold workers --help, or docs/workers.md)`);
  }
  const raw: Record<string, string> = { ...DEFAULTS };
  for (const [flag, envName] of Object.entries(FLAGS)) {
    const key = camel(flag);
    const fromEnv = env[envName];
    if (fromEnv !== undefined && fromEnv !== '') raw[key] = fromEnv;
    const fromFlag = values[flag];
    if (typeof fromFlag === 'string') raw[key] = fromFlag;
    if (fromFlag === true) raw[key] = 'true';
    if (values[`no-${flag}`] === true) raw[key] = 'false';
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => {
      const key = String(i.path[0] ?? '');
      const flag = Object.keys(FLAGS).find((f) => camel(f) === key);
      return `--${flag ?? key} (${flag ? FLAGS[flag as keyof typeof FLAGS] : ''}) = ${JSON.stringify(raw[key])}: ${i.message}`;
    });
    throw new ConfigError(`invalid worker settings:\n  ${problems.join('\n  ')}`);
  }
  const c = parsed.data;
  if (c.retryMaxMs < c.retryBaseMs)
    throw new ConfigError('invalid worker settings: --retry-max-ms is below --retry-base-ms');
  const retention: RetentionOptions = {
    doneAfterSeconds: c.retentionDone,
    deadAfterSeconds: c.retentionDead,
    cancelledAfterSeconds: c.retentionCancelled,
    attemptsAfterSeconds: c.retentionAttempts,
    queues: c.retentionQueue ?? {},
  };
  const retentionIssues = retentionProblems(retention);
  if (retentionIssues.length > 0) throw new ConfigError(`invalid worker settings:\n  ${retentionIssues.join('\n  ')}`);
  const claimStaleMs = c.claimStaleMs ?? claimStaleDefault(c.pollMs);
  // With a free slot the loop claims at least every pollMs ± 20 %: a shorter bound reports a
  // healthy worker stale between two polls.
  if (claimStaleMs <= c.pollMs * 1.2)
    throw new ConfigError(
      `invalid worker settings: --claim-stale-ms (LEASEHOLD_CLAIM_STALE_MS) = ${claimStaleMs} must exceed --poll-ms × 1.2 (${c.pollMs * 1.2} ms: a poll may take that long)`,
    );
  // One port is one listener, and a listener has one address.
  if (c.healthPort > 0 && c.healthPort === c.metricsPort && c.healthHost !== c.metricsHost)
    throw new ConfigError(
      `invalid worker settings: --health-port and --metrics-port are both ${c.healthPort}, which is one listener, but --health-host (LEASEHOLD_HEALTH_HOST) is ${c.healthHost} and --metrics-host (LEASEHOLD_METRICS_HOST) ${c.metricsHost}: give both the same host, or use two ports`,
    );
  return {
    workerId: c.workerId ?? `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`,
    // None given: the worker serves its handlers' queues (workers/producer.ts, handlerQueues).
    queues: c.queues ?? [],
    concurrency: c.concurrency,
    leaseSeconds: c.leaseSeconds,
    batchSize: Math.min(c.batchSize ?? MAX_CLAIM_BATCH, c.concurrency),
    pollMs: c.pollMs,
    listen: c.listen,
    directUrl: c.directUrl,
    preparedStatements: c.preparedStatements,
    asyncClaims: c.asyncClaims,
    graceMs: c.graceMs,
    abandonAfterMs: c.abandonAfterMs,
    ackFlushMs: 5,
    retry: { baseDelayMs: c.retryBaseMs, maxDelayMs: c.retryMaxMs, leaseExpiredDelayMs: c.leaseExpiredDelayMs },
    registryIntervalMs: 10_000,
    maintenance: {
      enabled: c.maintenance,
      reapIntervalMs: c.reapIntervalMs,
      retentionIntervalMs: c.retentionIntervalMs,
      staleWorkerSeconds: 60,
      receiptsRetentionSeconds: 30 * 86_400,
      retention,
      unknownKindGraceMs: c.unknownKindGraceMs,
    },
    metricsPort: c.metricsPort,
    metricsHost: c.metricsHost,
    healthPort: c.healthPort,
    healthHost: c.healthHost,
    claimStaleMs,
    handlerModules: c.handlers,
    logLevel: c.logLevel,
    migrate: c.migrate,
  };
}
