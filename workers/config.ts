/**
 * Worker settings from command-line flags and the environment (flags win). A bad setting stops
 * start-up with a message that names it. The settings, their flags, variables, defaults and
 * ranges are workers/settings.ts's table (`leasehold workers --help` and docs/operations.md
 * list them); this file maps argv and env onto it, with the rule of each text setting.
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { MAX_CLAIM_BATCH } from '../db/queue/claim.ts';
import {
  MAX_RETENTION_SECONDS,
  parseRetentionDuration,
  type RetentionOptions,
  retentionProblems,
} from '../db/queue/retention.ts';
import { NAME_PATTERN } from '../db/queue/validate.ts';
import { claimStaleDefault } from './health.ts';
import { parseQueueLimitsText } from './queue-limits.ts';
import {
  cliSettings,
  WORKER_SETTINGS,
  type WorkerSetting,
  type WorkerSettingKey,
  workerSettingsHelpLines,
  workerSettingsOf,
} from './settings.ts';
import { ConfigError } from './option-error.ts';
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
/** `emails=10,bulk=100/1s,imports=2+50/1m`: each queue's limit (workers/queue-limits.ts), a problem per bad entry. */
const queueLimits = z.string().transform((text, ctx) => {
  const parsed = parseQueueLimitsText(text);
  if ('limits' in parsed) return parsed.limits;
  for (const message of parsed.problems) ctx.addIssue({ code: 'custom', message });
  return z.NEVER;
});
const bool = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => ['true', '1', 'yes'].includes(v));

/** How each text setting's value is read (whole numbers and booleans follow their type). */
const TEXT_RULES = {
  queues: z
    .string()
    .transform((s) =>
      s
        .split(',')
        .map((q) => q.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.string().regex(NAME_PATTERN, 'not a queue name')).min(1, 'name at least one queue')),
  queueLimits,
  directUrl: z
    .string()
    .refine((s) => URL.canParse(s) && /^postgres(ql)?:$/.test(new URL(s).protocol), 'not a postgres:// URL'),
  metricsHost: host,
  healthHost: host,
  retentionDone: duration,
  retentionDead: duration,
  retentionCancelled: duration,
  retentionAttempts: duration,
  retentionQueue: retentionQueues,
  handlers: z.string().transform((s) =>
    s
      .split(',')
      .map((h) => h.trim())
      .filter(Boolean),
  ),
  workerId: z.string().min(1).max(200),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
} satisfies Record<TextKey, z.ZodType>;
type TextKey = {
  [K in WorkerSettingKey]: (typeof WORKER_SETTINGS)[K] extends { type: 'text' } ? K : never;
}[WorkerSettingKey];

const CLI = cliSettings();
const textRules: Record<string, z.ZodType | undefined> = TEXT_RULES;
const BY_KEY = new Map<string, WorkerSetting>(CLI);

/** The zod schema of the CLI's settings, one entry per flag of the table. */
const schema = z.strictObject(
  Object.fromEntries(
    CLI.map(([key, s]) => {
      const rule = s.type === 'int' ? int(s.min!, s.max!) : s.type === 'boolean' ? bool : textRules[key];
      if (!rule)
        throw new Error(`leasehold workers: no parsing rule for the text setting ${key} (a bug: please report it)`);
      return [key, s.default === undefined ? rule.optional() : rule];
    }),
  ),
);

type Table = typeof WORKER_SETTINGS;
type CliKey = { [K in WorkerSettingKey]: Table[K] extends { flag: string } ? K : never }[WorkerSettingKey];
/** The CLI's settings once parsed, typed from the table: a setting without a default may be unset. */
type ParsedSettings = {
  [K in CliKey]:
    | (Table[K] extends { type: 'int' }
        ? number
        : Table[K] extends { type: 'boolean' }
          ? boolean
          : K extends TextKey
            ? z.output<(typeof TEXT_RULES)[K]>
            : never)
    | (Table[K] extends { default: unknown } ? never : undefined);
};

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

/** The defaults as the parser reads them: strings, as a flag or variable gives them. */
const DEFAULTS: Record<string, string> = Object.fromEntries(
  CLI.flatMap(([key, s]) => (s.default === undefined ? [] : [[key, String(s.default)]])),
);
const BOOLEAN_FLAGS = new Set(CLI.flatMap(([, s]) => (s.type === 'boolean' ? [s.flag] : [])));
/** Flags that may be given more than once, and what joins their values. */
const REPEATABLE: Record<string, string> = {
  // `--handlers a.ts --handlers b.ts` loads both (as `--handlers a.ts,b.ts` does), rather than
  // the last one alone.
  handlers: ',',
  // `--retention-queue a:done=1h --retention-queue b:dead=90d`: one queue each.
  'retention-queue': ';',
  // `--queue-limits emails=10 --queue-limits bulk=100/1s`: as `--queue-limits emails=10,bulk=100/1s`.
  'queue-limits': ',',
};

/** One line per setting (flag, variable, default), for `leasehold workers --help`. */
export function workerSettingsHelp(): string {
  return workerSettingsHelpLines();
}

/** The options node:util's parseArgs takes: every flag of the table (and `--no-` of each boolean). */
export function workerFlagOptions(): Record<string, { type: 'string' | 'boolean'; multiple?: boolean }> {
  const options: Record<string, { type: 'string' | 'boolean'; multiple?: boolean }> = {};
  for (const [, { flag }] of CLI) {
    options[flag] = BOOLEAN_FLAGS.has(flag) ? { type: 'boolean' } : { type: 'string' };
    if (BOOLEAN_FLAGS.has(flag)) options[`no-${flag}`] = { type: 'boolean' };
    if (flag in REPEATABLE) options[flag] = { type: 'string', multiple: true };
  }
  return options;
}

export { ConfigError };

export function parseWorkerConfig(argv: string[], env: Readonly<Record<string, string | undefined>>): WorkerConfig {
  let values: Record<string, string | boolean | undefined>;
  try {
    const parsed = parseArgs({
      args: argv,
      options: workerFlagOptions(),
      strict: true,
      allowPositionals: false,
    }).values;
    values = Object.fromEntries(
      Object.entries(parsed).map(([key, value]) => [key, Array.isArray(value) ? value.join(REPEATABLE[key]) : value]),
    );
  } catch (error) {
    throw new ConfigError(
      `${(error as Error).message} (the settings: leasehold workers --help, or docs/operations.md, "Settings")`,
    );
  }
  const raw: Record<string, string> = { ...DEFAULTS };
  for (const [key, { flag, env: envName }] of CLI) {
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
      const setting = BY_KEY.get(key);
      return `--${setting?.flag ?? key} (${setting?.env ?? ''}) = ${JSON.stringify(raw[key])}: ${i.message}`;
    });
    throw new ConfigError(`invalid worker settings:\n  ${problems.join('\n  ')}`);
  }
  const c = parsed.data as ParsedSettings;
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
    ...workerSettingsOf({
      workerId: c.workerId ?? `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`,
      // None given: the worker serves its handlers' queues (workers/producer.ts, handlerQueues).
      queues: c.queues ?? [],
      // Checked against the queues served once they are known (workers/run-process.ts, createWorker).
      queueLimits: c.queueLimits ?? {},
      concurrency: c.concurrency,
      leaseSeconds: c.leaseSeconds,
      batchSize: c.batchSize ?? MAX_CLAIM_BATCH,
      pollMs: c.pollMs,
      listen: c.listen,
      preparedStatements: c.preparedStatements,
      scheduler: c.scheduler,
      asyncClaims: c.asyncClaims,
      graceMs: c.graceMs,
      abandonAfterMs: c.abandonAfterMs,
      retry: { baseDelayMs: c.retryBaseMs, maxDelayMs: c.retryMaxMs, leaseExpiredDelayMs: c.leaseExpiredDelayMs },
      maintenance: {
        enabled: c.maintenance,
        reapIntervalMs: c.reapIntervalMs,
        retentionIntervalMs: c.retentionIntervalMs,
        historyIntervalMs: c.historyIntervalMs,
        retention,
        unknownKindGraceMs: c.unknownKindGraceMs,
      },
    }),
    directUrl: c.directUrl,
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
