/**
 * Real processes for tests: worker processes, the demo provider, the demo orders script,
 * each a Node process running TypeScript through tsx, with its output kept for assertions.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface Proc {
  child: ChildProcess;
  output: string[];
  /** Resolves with the exit code (or the signal's name). */
  exited: Promise<number | string>;
  /** Resolves when a line matching `pattern` appears. */
  line(pattern: RegExp, timeoutMs?: number): Promise<string>;
  kill(signal?: NodeJS.Signals): void;
}

const running = new Set<ChildProcess>();

export function start(script: string, args: string[], env: Record<string, string>): Proc {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, script), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  const output: string[] = [];
  const waiters: { pattern: RegExp; resolve(line: string): void }[] = [];
  const onData = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line) continue;
      output.push(line);
      // oxlint-disable-next-line unicorn/no-useless-spread -- the copy is needed: the loop splices waiters
      for (const w of [...waiters]) {
        if (w.pattern.test(line)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(line);
        }
      }
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | string>((resolve) =>
    child.on('exit', (code, signal) => {
      running.delete(child);
      resolve(code ?? signal ?? 'unknown');
    }),
  );
  return {
    child,
    output,
    exited,
    line(pattern, timeoutMs = 30_000) {
      const seen = output.find((l) => pattern.test(l));
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(
                `${script}: no line matching ${pattern} within ${timeoutMs} ms; last output:\n${output.slice(-15).join('\n')}`,
              ),
            ),
          timeoutMs,
        );
        waiters.push({ pattern, resolve: (l) => (clearTimeout(timer), resolve(l)) });
      });
    },
    kill(signal = 'SIGTERM') {
      child.kill(signal);
    },
  };
}

/** Ends every process a test left running (afterAll). */
export async function stopAll(): Promise<void> {
  const children = [...running];
  for (const child of children) child.kill('SIGKILL');
  await Promise.all(
    children.map(
      (c) => new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r(null) : c.once('exit', r))),
    ),
  );
}
