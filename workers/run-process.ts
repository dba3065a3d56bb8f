/**
 * One worker process: `runWorkerProcess(argv, env)` parses the settings (workers/config.ts),
 * loads the handler files, connects to `DATABASE_URL`, and runs until SIGTERM/SIGINT stop it
 * gracefully (a second signal exits at once, 130). It resolves with the exit code for the
 * caller to exit with: `workers/main.ts` (`npm run workers`, the tests, the failure harness)
 * and `leasehold workers` (cli/workers.ts) both call it. The worker is built by createWorker
 * (workers/create-worker.ts), the one place a Worker is built: the settings go as its options
 * (workerOptionsOf), the few that are the CLI's alone as its internals.
 *
 * Start-up checks in order, each stopping with a sentence and exit code 2 before anything is
 * written: the settings, that a database is named, the handler files, that every queue limit
 * is of a queue the worker serves. Only then is the
 * caller's fallback database (the embedded server, where the caller's policy allows it)
 * started and the worker connected. The `/healthz` and `/metrics` listeners come up next,
 * before the migrations (`--migrate`) and the worker's start, so that a probe is answered
 * (503, "worker not started") while the worker waits for its database; a port that cannot be
 * listened on stops start-up (exit code 1).
 */
import type http from 'node:http';
import pino, { type Logger } from 'pino';
import { migrateDatabase } from '../db/migrate/index.ts';
import { LeaseholdSchemaError } from '../db/queue/errors.ts';
import { ConfigError, parseWorkerConfig, type WorkerConfig } from './config.ts';
import { type CreateWorkerOptions, createWorker, type LeaseholdWorker, type WorkerInternals } from './create-worker.ts';
import { armFailpoints, FailpointSpecError, type Failpoints } from './failpoints.ts';
import { HandlerFileError, loadHandlerFiles } from './handler-files.ts';
import { createMetrics, serveHealth, serveMetrics, type WorkerMetrics } from './metrics.ts';
import { handlerQueues } from './producer.ts';
import { unservedQueueLimits } from './queue-limits.ts';

type Env = Readonly<Record<string, string | undefined>>;

export interface WorkerProcessOptions {
  /**
   * The database when `DATABASE_URL` is unset, by the caller's policy (the embedded server for
   * `--embedded`); `migrate` applies the migrations first. Without it an unset DATABASE_URL
   * stops start-up. Called after the settings and handler files are checked.
   */
  fallbackDatabase?: () => Promise<{ url: string; migrate: boolean }>;
  /** How the caller's user gets a development database, for the missing-DATABASE_URL sentence. */
  embeddedHint?: string;
  /** Relative `--handlers` paths are relative to this (default: the process's working directory). */
  cwd?: string;
  /** The version this worker records in the workers registry (default npm_package_version). */
  version?: string | null;
  /** Where the start-up sentences go (default: stderr, prefixed `leasehold workers: `). */
  report?: (line: string) => void;
}

export async function runWorkerProcess(
  argv: readonly string[],
  env: Env,
  options: WorkerProcessOptions = {},
): Promise<number> {
  const report = options.report ?? ((line: string) => console.error(`leasehold workers: ${line}`));
  const checked = await checkSettings(argv, env, options, report);
  if (!checked) return 2;
  const { config, failpoints } = checked;
  let databaseUrl = checked.databaseUrl;

  const logger = pino({ level: config.logLevel, base: { workerId: config.workerId, pid: process.pid } });

  let registry;
  let schedules;
  try {
    ({ registry, schedules } = await loadHandlerFiles(config.handlerModules, options.cwd ?? process.cwd()));
  } catch (error) {
    if (!(error instanceof HandlerFileError)) throw error;
    report(error.message);
    return 2;
  }
  // A queue limit the worker's claims would never count toward: said with the flags' names.
  const unserved = unservedQueueLimits(
    config.queueLimits ?? {},
    config.queues.length > 0 ? config.queues : handlerQueues(registry),
    { limits: '--queue-limits (LEASEHOLD_QUEUE_LIMITS)', queues: '--queues' },
  );
  if (unserved.length > 0) {
    report(unserved.join('; '));
    return 2;
  }

  let migrate = config.migrate;
  if (!databaseUrl && options.fallbackDatabase) {
    const fallback = await options.fallbackDatabase();
    databaseUrl = fallback.url;
    migrate ||= fallback.migrate;
  }

  const metrics = createMetrics();
  // The pool (concurrency + 4, at most 30) is createWorker's, made from the URL; stop() closes it.
  const built = workerOptionsOf(config, {
    connectionString: databaseUrl,
    jobs: registry.handlers(),
    schedules,
    logger,
    metrics,
    version: (options.version !== undefined ? options.version : env.npm_package_version) ?? undefined,
    failpoints,
  });
  const worker = createWorker(built.options, built.internal);
  if (failpoints) warnOfFailpoints(logger, failpoints, env.LEASEHOLD_FAILPOINTS);

  const lifecycle = handleSignals(worker, logger);

  try {
    await serveProbes(config, metrics, worker, logger, lifecycle.servers);
  } catch (error) {
    logger.fatal({ err: error }, 'could not serve metrics or health on that port; stopping');
    await lifecycle.release();
    return 1;
  }

  if (migrate) {
    try {
      // Migrations hold a session advisory lock: behind a transaction pooler they need the direct URL.
      await migrateDatabase(config.directUrl ?? databaseUrl);
    } catch (error) {
      await lifecycle.release();
      throw error;
    }
    if (lifecycle.stopRequested()) {
      // Stopped while migrating: nothing of the worker was started.
      await lifecycle.release();
      return 0;
    }
  }

  try {
    await worker.start();
  } catch (error) {
    if (error instanceof LeaseholdSchemaError) {
      // No schema, or one this code may not run on: a sentence and exit code 2 (the worker's
      // start-up refusal, docs/cli.md), where `leasehold enqueue` fails with the class's 1.
      report(error.message.replace(/^Leasehold: /, ''));
      await lifecycle.release();
      return 2;
    }
    logger.fatal(
      { err: error },
      'worker could not start (is the database DATABASE_URL names reachable and migrated? run npx leasehold migrate)',
    );
    await lifecycle.release();
    return 1;
  }
  return lifecycle.untilStopped();
}

/**
 * The settings, that a database is named (or the caller has a fallback), and the failpoints, in
 * that order: the first that fails is reported and gives null (exit code 2).
 */
async function checkSettings(
  argv: readonly string[],
  env: Env,
  options: WorkerProcessOptions,
  report: (line: string) => void,
): Promise<{ config: WorkerConfig; failpoints: Failpoints | undefined; databaseUrl: string } | null> {
  const databaseUrl = env.DATABASE_URL?.trim() ?? '';
  try {
    const config = parseWorkerConfig([...argv], env);
    if (!databaseUrl && !options.fallbackDatabase)
      throw new ConfigError(
        `DATABASE_URL is not set: set it to your PostgreSQL's URL (postgres://user:password@host:5432/dbname)${options.embeddedHint ? `, or ${options.embeddedHint}` : ''}`,
      );
    const failpoints = env.LEASEHOLD_FAILPOINTS ? await armFailpoints(env.LEASEHOLD_FAILPOINTS) : undefined;
    return { config, failpoints, databaseUrl };
  } catch (error) {
    if (error instanceof ConfigError || error instanceof FailpointSpecError) {
      report(error.message);
      return null;
    }
    throw error;
  }
}

function warnOfFailpoints(logger: Logger, failpoints: Failpoints, spec: string | undefined): void {
  logger.warn({ failpoints: spec }, 'failpoints armed: this worker will kill itself on purpose');
  if (failpoints.guardSkips().length > 0)
    logger.error(
      { skipped: failpoints.guardSkips() },
      'failpoints armed that skip a guard: this worker breaks the queue on purpose (the failure harness’s self-test only)',
    );
}

/**
 * SIGTERM/SIGINT, handled from before the start: one that arrives while the worker registers and
 * starts (a rolling deploy) stops it gracefully once started, instead of killing it midway; a
 * second exits at once (130). `servers` are the listeners the shutdown closes after the worker's
 * stop; `release()` undoes a start-up that went no further; `untilStopped()`, once start() has
 * returned, resolves with the exit code when a signal has stopped the worker.
 */
function handleSignals(worker: LeaseholdWorker, logger: Logger) {
  let started = false;
  let stopRequested = false;
  const servers: http.Server[] = [];
  const closeServers = () => {
    for (const server of servers.splice(0)) {
      server.close();
      server.closeAllConnections();
    }
  };
  let resolveStopped: (code: number) => void = () => {};
  const stopped = new Promise<number>((resolve) => (resolveStopped = resolve));
  const shutdown = async () => {
    let code = 0;
    try {
      await worker.stop(); // and closes its pool
      closeServers();
    } catch (error) {
      logger.error({ err: error }, 'error while stopping');
      code = 1;
    }
    resolveStopped(code);
  };
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals += 1;
    if (signals > 1) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(130);
    }
    logger.info({ signal }, 'stopping gracefully (send again to exit at once)');
    stopRequested = true;
    if (started) void shutdown();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  const detach = () => {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  };
  return {
    servers,
    stopRequested: () => stopRequested,
    async release() {
      closeServers();
      await worker.stop().catch(() => {}); // not started (or its start failed): closes the pool
      detach();
    },
    async untilStopped(): Promise<number> {
      started = true;
      if (stopRequested) void shutdown();
      const code = await stopped;
      detach();
      return code;
    },
  };
}

/**
 * The listeners come up before the migrations and the start, so that a probe gets an answer
 * (503, "worker not started") while the worker waits for its database, rather than a refused
 * connection. Until start() has returned the worker reports itself not started: Worker counts
 * itself running from the call on, while it may still be waiting for the database
 * (WorkerInternals.notStartedUntilStarted). Its health() asks the database on its pool. Each
 * listener goes into `servers` as it comes up; a port that cannot be listened on throws.
 */
async function serveProbes(
  config: WorkerConfig,
  metrics: WorkerMetrics,
  worker: LeaseholdWorker,
  logger: Logger,
  servers: http.Server[],
): Promise<void> {
  const sharedPort = config.healthPort > 0 && config.healthPort === config.metricsPort;
  if (config.metricsPort > 0) {
    servers.push(await serveMetrics(config.metricsPort, config.metricsHost, metrics.registry, { health: worker }));
    logger.info(
      { host: config.metricsHost, port: config.metricsPort, ...address(servers.at(-1)!) },
      'metrics on /metrics, health on /healthz',
    );
  }
  if (config.healthPort > 0 && !sharedPort) {
    servers.push(await serveHealth(config.healthPort, config.healthHost, worker));
    logger.info(
      { host: config.healthHost, port: config.healthPort, ...address(servers.at(-1)!) },
      'health on /healthz',
    );
  }
}

/**
 * The CLI's settings as createWorker's options, and those no option takes (the CLI's alone) as
 * its internals. workers/settings.test.ts holds the Worker settings createWorker makes of them
 * to the CLI's, setting by setting.
 * @internal
 */
export function workerOptionsOf(
  config: WorkerConfig,
  given: Pick<CreateWorkerOptions, 'connectionString' | 'jobs' | 'schedules' | 'logger' | 'metrics' | 'version'> &
    Pick<WorkerInternals, 'failpoints'>,
): { options: CreateWorkerOptions; internal: WorkerInternals } {
  const { failpoints, ...connection } = given;
  const { maintenance } = config;
  return {
    options: {
      ...connection,
      // None given: the handlers' queues (createWorker's default, the Worker's too).
      queues: config.queues.length > 0 ? config.queues : undefined,
      queueLimits: config.queueLimits,
      concurrency: config.concurrency,
      leaseSeconds: config.leaseSeconds,
      pollMs: config.pollMs,
      batchSize: config.batchSize,
      graceMs: config.graceMs,
      abandonAfterMs: config.abandonAfterMs,
      listen: config.listen,
      listenConnectionString: config.directUrl,
      preparedStatements: config.preparedStatements,
      maintenance: maintenance.enabled,
      scheduler: config.scheduler,
      retry: config.retry,
      retention: maintenance.retention,
      workerId: config.workerId,
      claimStaleMs: config.claimStaleMs,
    },
    internal: {
      asyncClaims: config.asyncClaims,
      reapIntervalMs: maintenance.reapIntervalMs,
      retentionIntervalMs: maintenance.retentionIntervalMs,
      historyIntervalMs: maintenance.historyIntervalMs,
      unknownKindGraceMs: maintenance.unknownKindGraceMs,
      failpoints,
      notStartedUntilStarted: true,
    },
  };
}

/** The address a listener is bound to, for the log line. */
function address(server: http.Server): { bound?: string } {
  const a = server.address();
  return a && typeof a === 'object' ? { bound: `${a.address}:${a.port}` } : {};
}
