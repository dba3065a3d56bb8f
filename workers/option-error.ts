/**
 * The two refusals of a worker's settings, in a module of their own that imports nothing of
 * workers/: createWorker's (workers/create-worker.ts) and the command line's
 * (workers/config.ts), which both re-export theirs, so either may import the other; and how
 * a refused value is quoted in their messages.
 */
import { LeaseholdRefusal } from '../db/errors.ts';

/** A createWorker option (or runFor's) that is missing, unknown or out of range; nothing was started. */
export class WorkerOptionsError extends LeaseholdRefusal {
  override readonly name: string = 'WorkerOptionsError';
  /** `invalid_worker_options`; workers/config.ts's ConfigError (a subclass): `invalid_worker_setting`. */
  readonly code: 'invalid_worker_options' | 'invalid_worker_setting' = 'invalid_worker_options';
}

/**
 * A worker setting (a flag or an environment variable of `leasehold workers`) that is missing,
 * unknown or out of range; nothing was started. A WorkerOptionsError, from the command line.
 */
export class ConfigError extends WorkerOptionsError {
  override readonly name = 'ConfigError';
  override readonly code = 'invalid_worker_setting';
}

/** A refused option value as a refusal quotes it: JSON cut at 60 characters, a function as such. */
export function describeValue(value: unknown): string {
  if (typeof value === 'function') return 'a function';
  try {
    const text = JSON.stringify(value);
    return text === undefined ? String(value) : text.length > 60 ? `${text.slice(0, 57)}…` : text;
  } catch {
    return String(value);
  }
}
