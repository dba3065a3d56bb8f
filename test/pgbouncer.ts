/**
 * A real PgBouncer in front of the test server, started by the test (or the failure harness)
 * that needs one: `const bouncer = await startPgBouncer(url)`, `bouncer.url` to connect,
 * `bouncer.stop()` at the end.
 *
 * What it runs is what an operator gets from Debian's package with one line changed:
 * `pool_mode = transaction`. Everything else stays at PgBouncer's defaults, in particular
 * `ignore_startup_parameters` is empty, so a client that sends `statement_timeout` (or any
 * parameter PgBouncer does not track) at connection start is refused, as in production; and
 * PgBouncer 1.18 keeps no prepared statements across transactions. Authentication is md5 (the
 * package's default) against an auth file holding the server's password, which PgBouncer also
 * uses to log in to the server (a server that trusts local connections ignores it).
 *
 * PgBouncer refuses to run as root: under root it runs as the `postgres` system user, with
 * its config, auth file, log and pid file in a temp folder that user owns. It listens on a
 * free port of 127.0.0.1 only and on no Unix socket.
 */
import { freePort } from '../cli/database-select.ts';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

export interface PgBouncer {
  /** The URL startPgBouncer was given, through the pooler (same user, password, database). */
  url: string;
  /** Any database URL of the same server, through the pooler (as the server's user, or one of `users`). */
  pooled(databaseUrl: string): string;
  /** The pooler's port on 127.0.0.1. */
  port: number;
  /** PgBouncer's process id. */
  pid: number;
  /** Rows of an admin console command (`SHOW POOLS`, `SHOW CLIENTS`, `SHOW SERVERS`, …). */
  admin(command: string): Promise<Record<string, unknown>[]>;
  /** The server processes PgBouncer has connections to, for `database` (SHOW SERVERS' remote_pid). */
  serverPids(database: string): Promise<Set<number>>;
  /** PgBouncer's log so far. */
  log(): string;
  stop(): Promise<void>;
}

const CANDIDATES = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer', '/usr/local/bin/pgbouncer'];
const START_TIMEOUT_MS = 10_000;

export interface PgBouncerOptions {
  /** More logins to accept besides the URL's user (the auth file holds each one's password). */
  users?: { name: string; password: string }[];
}

export async function startPgBouncer(databaseUrl: string, options: PgBouncerOptions = {}): Promise<PgBouncer> {
  const binary = process.env.PGBOUNCER ?? CANDIDATES.find((c) => existsSync(c));
  if (!binary)
    throw new Error(
      `PgBouncer is not installed (looked for ${CANDIDATES.join(', ')}; set PGBOUNCER to its path, or apt-get install pgbouncer)`,
    );
  const target = new URL(databaseUrl);
  const user = decodeURIComponent(target.username || 'postgres');
  // The client's password is the server's; a server that trusts us gets one it ignores.
  const password = target.password ? decodeURIComponent(target.password) : randomBytes(12).toString('hex');
  const owner = process.getuid?.() === 0 ? systemUser('postgres') : null;
  // Bind races (another process took the probed port first) are tried again on a new port.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      return await launch({ binary, target, user, password, users: options.users ?? [], owner, port });
    } catch (error) {
      if (attempt >= 5 || !/Address already in use/i.test(String((error as Error).message))) throw error;
    }
  }
}

async function launch(o: {
  binary: string;
  target: URL;
  user: string;
  password: string;
  users: { name: string; password: string }[];
  owner: { uid: number; gid: number } | null;
  port: number;
}): Promise<PgBouncer> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'leasehold-pgbouncer-'));
  const file = (name: string) => path.join(dir, name);
  const quote = (s: string) => `"${s.replaceAll('"', '""')}"`;
  const logins = [{ name: o.user, password: o.password }, ...o.users];
  writeFileSync(file('userlist.txt'), logins.map((l) => `${quote(l.name)} ${quote(l.password)}\n`).join(''), {
    mode: 0o600,
  });
  writeFileSync(
    file('pgbouncer.ini'),
    [
      '[databases]',
      // Every database of the server, under its own name (tests use one database per file).
      `* = host=${o.target.hostname} port=${o.target.port || '5432'}`,
      '',
      '[pgbouncer]',
      'pool_mode = transaction',
      'listen_addr = 127.0.0.1',
      `listen_port = ${o.port}`,
      'unix_socket_dir =',
      'auth_type = md5',
      `auth_file = ${file('userlist.txt')}`,
      `admin_users = ${o.user}`,
      `logfile = ${file('pgbouncer.log')}`,
      `pidfile = ${file('pgbouncer.pid')}`,
      '',
    ].join('\n'),
  );
  if (o.owner)
    for (const f of [dir, file('userlist.txt'), file('pgbouncer.ini')]) chownSync(f, o.owner.uid, o.owner.gid);

  const child = spawn(o.binary, [file('pgbouncer.ini')], {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(o.owner ? { uid: o.owner.uid, gid: o.owner.gid } : {}),
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // A test process that dies must not leave a pooler listening.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const log = () => {
    try {
      return readFileSync(file('pgbouncer.log'), 'utf8');
    } catch {
      return output;
    }
  };

  const pooled = (databaseUrl: string) => {
    const url = new URL(databaseUrl);
    url.hostname = '127.0.0.1';
    url.port = String(o.port);
    // The URL's own login when it is one of `users`; otherwise the server's.
    if (!o.users.some((u) => u.name === decodeURIComponent(url.username))) {
      url.username = encodeURIComponent(o.user);
      url.password = encodeURIComponent(o.password);
    }
    return url.toString();
  };
  const adminUrl = (() => {
    const url = new URL(pooled(o.target.toString()));
    url.pathname = '/pgbouncer';
    url.search = '';
    return url.toString();
  })();
  const admin = async (command: string) => {
    const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 2_000 });
    await client.connect();
    try {
      return (await client.query(command)).rows as Record<string, unknown>[];
    } finally {
      await client.end();
    }
  };
  const stop = async () => {
    process.off('exit', killOnExit);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM'); // 1.18: immediate shutdown
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };

  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      const why = `${log()}\n${output}`.trim();
      await stop();
      throw new Error(`PgBouncer exited at start (${child.exitCode ?? child.signalCode}):\n${why.slice(-3000)}`);
    }
    try {
      await admin('SHOW VERSION');
      break;
    } catch (error) {
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`PgBouncer did not answer within ${START_TIMEOUT_MS} ms: ${(error as Error).message}`, {
          cause: error,
        });
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  return {
    url: pooled(o.target.toString()),
    pooled,
    port: o.port,
    pid: child.pid!,
    admin,
    serverPids: async (database) =>
      new Set((await admin('SHOW SERVERS')).filter((r) => r.database === database).map((r) => Number(r.remote_pid))),
    log,
    stop,
  };
}

/** uid and gid of a system user, from /etc/passwd (Node has no getpwnam). */
function systemUser(name: string): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${name}:`));
  const [, , uid, gid] = line?.split(':') ?? [];
  if (uid === undefined || gid === undefined)
    throw new Error(`PgBouncer refuses to run as root, and there is no ${name} user to run it as`);
  return { uid: Number(uid), gid: Number(gid) };
}
