/**
 * The `leasehold` CLI as a user runs it: a real process (`node --import tsx cli/main.ts`), in a
 * working directory of the test's choosing, with only the environment the test gives (plus
 * PATH and HOME), so nothing of the test run's own DATABASE_URL leaks in.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { onTestFinished } from 'vitest';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TSX = import.meta.resolve('tsx');
const MAIN = path.join(ROOT, 'cli', 'main.ts');

export interface CliRun {
  code: number | string;
  stdout: string;
  stderr: string;
}

export interface CliProcess {
  child: ChildProcess;
  /** Everything written so far, stdout and stderr together. */
  output(): string;
  exited: Promise<CliRun>;
}

/** TZ=UTC: the CLI prints times in the machine's zone (docs/cli.md, "Times"); a test names another itself. */
function baseEnv(): Record<string, string> {
  return { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? os.tmpdir(), TZ: 'UTC' };
}

export interface CliOptions {
  env?: Record<string, string>;
  cwd?: string;
  script?: string;
  /** What standard input carries (then closed); none: standard input is /dev/null. */
  input?: string;
}

/** Starts `leasehold <args>` (or another TypeScript entry, `script`) in `cwd`. */
export function startCli(args: string[], options: CliOptions = {}): CliProcess {
  const child = spawn(process.execPath, ['--import', TSX, options.script ?? MAIN, ...args], {
    cwd: options.cwd ?? ROOT,
    // A clean environment (Next.js's types declare NODE_ENV always set; here it is not).
    env: { ...baseEnv(), ...options.env } as unknown as NodeJS.ProcessEnv,
    stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  if (options.input !== undefined) child.stdin!.end(options.input);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<CliRun>((resolve) =>
    child.on('close', (code, signal) => resolve({ code: code ?? signal ?? 'unknown', stdout, stderr })),
  );
  return { child, output: () => stdout + stderr, exited };
}

/** Runs `leasehold <args>` to its end. */
export function cli(args: string[], options: CliOptions = {}): Promise<CliRun> {
  return startCli(args, options).exited;
}

/** A new empty folder under the system's temp folder, a user's project; removed when the test ends. */
export function tempProject(prefix = 'leasehold-cli-'): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
