/** Small helpers shared by the benchmark's cases. */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Nearest-rank percentile (p in 0..100). */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export function round(value: number, digits = 2): number {
  if (!Number.isFinite(value)) return value;
  const magnitude = Math.abs(value) >= 100 ? 0 : digits;
  return Number(value.toFixed(magnitude));
}

const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'child.ts');

export interface Child {
  process: ChildProcess;
  /** Resolves with the next message of `type`; rejects if the child exits first. */
  next<T = Record<string, unknown>>(type: string): Promise<T>;
  onMessage(listener: (message: Record<string, unknown>) => void): void;
  /** Rejects when the child exits (any exit before stop() is a failure of the run). */
  crashed: Promise<never>;
  /** CPU time (user + system) the child has used so far, µs. */
  cpuMicros(): Promise<number>;
  stop(): Promise<void>;
}

/** Forks bench/child.ts under this same Node binary (and tsx), and waits until it has loaded. */
export async function forkChild(args: string[]): Promise<Child> {
  const child = fork(CHILD, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const listeners: ((message: Record<string, unknown>) => void)[] = [];
  child.on('message', (message: Record<string, unknown>) => {
    for (const l of listeners) l(message);
  });
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const crashed = exit.then((code) => {
    throw new Error(`bench child ${args.slice(0, 2).join(' ')} exited with ${code}`);
  });
  crashed.catch(() => {}); // awaited only while the child should be running
  const handle: Child = {
    process: child,
    next: <T>(type: string) =>
      Promise.race([
        new Promise<T>((resolve) =>
          listeners.push((message) => {
            if (message.type === type) resolve(message as T);
          }),
        ),
        crashed,
      ]),
    onMessage: (listener) => listeners.push(listener),
    crashed,
    cpuMicros: async () => {
      const answer = handle.next<{ micros: number }>('cpu');
      child.send({ type: 'cpu' });
      return (await answer).micros;
    },
    stop: async () => {
      if (child.exitCode === null) child.send({ type: 'stop' });
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exit;
      clearTimeout(timer);
    },
  };
  await handle.next('loaded');
  return handle;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
