/**
 * One worker process on `DATABASE_URL` (`npm run workers` goes through scripts/workers.ts,
 * which sets it to the embedded server when unset); settings in workers/config.ts.
 * SIGTERM/SIGINT stop it gracefully; a second signal exits at once.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pino from 'pino';
import { createDb } from '../db/client.ts';
import { migrateDatabase } from '../db/migrate.ts';
import { ConfigError, parseWorkerConfig } from './config.ts';
import type { Handler } from './handler.ts';
import { HandlerRegistry } from './handler.ts';
import { builtinHandlers } from './handlers/index.ts';
import { FailpointSpecError, Failpoints, parseFailpoints } from './failpoints.ts';
import { createMetrics, serveMetrics } from './metrics.ts';
import { Worker } from './worker.ts';

/** The database this process serves: the entrypoint's environment names it, db/ reads none. */
function databaseUrlFromEnv(env: Readonly<Record<string, string | undefined>>): string {
  const url = env.DATABASE_URL?.trim();
  if (!url)
    throw new ConfigError('DATABASE_URL is not set (`npm run workers` uses the embedded server when it is unset)');
  return url;
}

let config;
let databaseUrl: string;
let failpoints: Failpoints | undefined;
try {
  config = parseWorkerConfig(process.argv.slice(2), process.env);
  databaseUrl = databaseUrlFromEnv(process.env);
  if (process.env.LEASEHOLD_FAILPOINTS) failpoints = new Failpoints(parseFailpoints(process.env.LEASEHOLD_FAILPOINTS));
} catch (error) {
  if (error instanceof ConfigError || error instanceof FailpointSpecError) {
    console.error(`leasehold workers: ${error.message}`);
    process.exit(2);
  }
  throw error;
}

const logger = pino({ level: config.logLevel, base: { workerId: config.workerId, pid: process.pid } });

async function loadHandlers(modules: string[]): Promise<Handler[]> {
  const handlers: Handler[] = [...builtinHandlers];
  for (const file of modules) {
    const mod = (await import(pathToFileURL(path.resolve(file)).href)) as { default?: unknown; handlers?: unknown };
    const found = mod.handlers ?? mod.default;
    const list = Array.isArray(found) ? found : [found];
    if (list.length === 0 || !list.every((h) => h && typeof h === 'object' && 'kind' in h && 'handle' in h)) {
      throw new ConfigError(`--handlers ${file}: export \`handlers\` (an array) or a default handler`);
    }
    handlers.push(...(list as Handler[]));
  }
  return handlers;
}

let registry: HandlerRegistry;
try {
  registry = new HandlerRegistry(await loadHandlers(config.handlerModules));
} catch (error) {
  logger.fatal({ err: error }, 'could not load handlers');
  process.exit(2);
}
// Migrations hold a session advisory lock: behind a transaction pooler they need the direct URL.
if (config.migrate) await migrateDatabase(config.directUrl ?? databaseUrl);

const handle = createDb(databaseUrl, {
  max: Math.min(config.concurrency + 4, 30),
  applicationName: 'leasehold-worker',
  preparedStatements: config.preparedStatements,
});
const metrics = createMetrics();
const worker = new Worker(config, {
  db: handle.db,
  databaseUrl,
  listenUrl: config.directUrl,
  registry,
  logger,
  metrics,
  failpoints,
  version: process.env.npm_package_version ?? null,
});
if (failpoints)
  logger.warn(
    { failpoints: process.env.LEASEHOLD_FAILPOINTS },
    'failpoints armed: this worker will kill itself on purpose',
  );
if (failpoints && failpoints.guardSkips().length > 0)
  logger.error(
    { skipped: failpoints.guardSkips() },
    'failpoints armed that skip a guard: this worker breaks the queue on purpose (the failure harness’s self-test only)',
  );

try {
  await worker.start();
} catch (error) {
  logger.fatal(
    { err: error },
    'worker could not start (is the database reachable and migrated? run npm run db:migrate)',
  );
  await handle.close();
  process.exit(1);
}
let metricsServer: Awaited<ReturnType<typeof serveMetrics>> | null = null;
if (config.metricsPort > 0) {
  try {
    metricsServer = await serveMetrics(config.metricsPort, metrics.registry, () => worker.health());
    logger.info({ port: config.metricsPort }, 'metrics on /metrics, health on /healthz');
  } catch (error) {
    logger.fatal({ err: error, port: config.metricsPort }, 'could not serve metrics on that port; stopping');
    await worker.stop(0);
    await handle.close().catch(() => {});
    process.exit(1);
  }
}

let signals = 0;
const onSignal = (signal: NodeJS.Signals) => {
  signals += 1;
  if (signals > 1) {
    logger.warn({ signal }, 'second signal: exiting now');
    process.exit(130);
  }
  logger.info({ signal }, 'stopping gracefully (send again to exit at once)');
  void (async () => {
    let code = 0;
    try {
      await worker.stop();
      metricsServer?.close();
      await handle.close();
    } catch (error) {
      logger.error({ err: error }, 'error while stopping');
      code = 1;
    }
    process.exit(code);
  })();
};
process.on('SIGTERM', onSignal);
process.on('SIGINT', onSignal);
