/**
 * The one root of Leasehold's errors. Every error class of the product extends LeaseholdError
 * and says, once, what it is:
 *
 * - `code`: a stable snake_case string per class, public API (docs/versioning.md lists them):
 *   what a program matches on, where the message is for a person and may be reworded. It never
 *   looks like an SQLSTATE (`23505`) or a Node code (`ECONNRESET`), which code elsewhere reads
 *   from the same property.
 * - `exitCode`: what the CLI exits with when the error ends a command (docs/cli.md): 2 refused
 *   (bad input or settings; nothing was written), 1 failed.
 * - `sentence`: whether the message is the whole story for a person at the command line (the
 *   CLI prints it alone), or the error is unexpected there (the CLI prints its stack).
 *
 * `exitCode` and `sentence` are getters on the class, not fields of each error, so a logged or
 * serialised error carries only its `code`. Nothing else of Leasehold is imported here: every
 * layer may import db/, and cli/run.ts loads this module before any command's.
 */
export abstract class LeaseholdError extends Error {
  /** The class's stable identifier (docs/versioning.md). */
  abstract readonly code: string;

  /** The CLI's exit code when this error ends a command: 2 refused, 1 failed. */
  get exitCode(): 1 | 2 {
    return 1;
  }

  /** Whether the CLI prints the message alone (true) or the stack, as for a bug (false). */
  get sentence(): boolean {
    return false;
  }
}

/**
 * Input, a setting or a command line refused before anything was written or started: the
 * message says what to change. The CLI prints it and exits 2.
 */
export abstract class LeaseholdRefusal extends LeaseholdError {
  override get exitCode(): 1 | 2 {
    return 2;
  }

  override get sentence(): boolean {
    return true;
  }
}

/**
 * Every code a Leasehold error class sets (docs/versioning.md, "Error codes"; test/errors.test.ts
 * holds this list to the classes). An attempt's failure detail leaves these out, as the recorded
 * class name says the same, and keeps any other code: a handler's own subclass's, a driver's.
 */
export const LEASEHOLD_CODES: ReadonlySet<string> = new Set([
  'invalid_input',
  'invalid_request',
  'usage',
  'schema_unusable',
  'migration_refused',
  'migration_folder_invalid',
  'migration_lock_busy',
  'migration_failed',
  'database_setting_invalid',
  'invalid_worker_options',
  'invalid_worker_setting',
  'handler_file_invalid',
  'invalid_failpoints',
  'heartbeat_timeout',
  'attempt_aborted',
  'job_error',
  'transient',
  'rate_limited',
  'unknown_outcome',
  'permanent',
  'validation',
  'cancelled',
  'snooze',
  'job_not_runnable',
  'enqueued_assertion_failed',
  'session_ended',
  'auth_refused',
  'request_refused',
]);
