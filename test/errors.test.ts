/**
 * One error root (db/errors.ts): every error class of the product extends LeaseholdError, each
 * with its own stable `code` (public API: docs/versioning.md's table is this list), and the
 * exit code and sentence the CLI derives from it. A class added without a row here fails the
 * scan below; a code changed fails the table. No database is used.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../cli/command.ts';
import { LEASEHOLD_CODES, LeaseholdError, LeaseholdRefusal } from '../db/errors.ts';
import { errorDetail } from '../db/queue/error-detail.ts';
import { MigrationFolderError } from '../db/migrate/files.ts';
import { MigrationRefused } from '../db/migrate/journal.ts';
import { MigrationFailed, MigrationLockBusy } from '../db/migrate/index.ts';
import { LeaseholdInputError, LeaseholdSchemaError } from '../db/queue/errors.ts';
import { SessionEnded } from '../lib/auth.ts';
import { AuthError, InputError, RequestRefused } from '../lib/errors.ts';
import { DatabaseSettingError } from '../cli/database-url.ts';
import { EnqueuedAssertionError } from '../testing/enqueued.ts';
import { JobNotRunnable } from '../testing/run.ts';
import { AttemptAborted } from '../workers/attempt.ts';
import { ConfigError } from '../workers/config.ts';
import { WorkerOptionsError } from '../workers/create-worker.ts';
import {
  CancelledJobError,
  JobError,
  PermanentError,
  RateLimitedError,
  TransientError,
  UnknownOutcomeError,
  ValidationError,
} from '../workers/errors.ts';
import { FailpointSpecError } from '../workers/failpoints.ts';
import { HandlerFileError } from '../workers/handler-files.ts';
import { HeartbeatTimeout } from '../workers/lease-keeper.ts';
import { SnoozeError } from '../workers/snooze.ts';
import { ROOT } from './cli.ts';

interface Row {
  make: () => LeaseholdError;
  code: string;
  /** What the CLI exits with when it ends a command, and whether it prints the message alone. */
  exit: 1 | 2;
  sentence: boolean;
}

/** Class name → code, exit code and sentence: docs/versioning.md, "Error codes". */
const ERRORS: Record<string, Row> = {
  LeaseholdInputError: {
    make: () => new LeaseholdInputError('enqueue', ['kind: required']),
    code: 'invalid_input',
    exit: 2,
    sentence: true,
  },
  InputError: { make: () => new InputError('bad filter'), code: 'invalid_request', exit: 2, sentence: true },
  UsageError: { make: () => new UsageError('bad flag'), code: 'usage', exit: 2, sentence: true },
  LeaseholdSchemaError: {
    make: () => new LeaseholdSchemaError('no schema'),
    code: 'schema_unusable',
    exit: 1,
    sentence: false,
  },
  MigrationRefused: { make: () => new MigrationRefused('edited'), code: 'migration_refused', exit: 1, sentence: true },
  MigrationFolderError: {
    make: () => new MigrationFolderError('/m', ['x']),
    code: 'migration_folder_invalid',
    exit: 1,
    sentence: false,
  },
  MigrationLockBusy: {
    make: () => new MigrationLockBusy('held'),
    code: 'migration_lock_busy',
    exit: 2,
    sentence: true,
  },
  MigrationFailed: {
    make: () => new MigrationFailed('failed', { cause: null }),
    code: 'migration_failed',
    exit: 1,
    sentence: true,
  },
  DatabaseSettingError: {
    make: () => new DatabaseSettingError('unset'),
    code: 'database_setting_invalid',
    exit: 2,
    sentence: true,
  },
  WorkerOptionsError: {
    make: () => new WorkerOptionsError('bad'),
    code: 'invalid_worker_options',
    exit: 2,
    sentence: true,
  },
  ConfigError: { make: () => new ConfigError('bad'), code: 'invalid_worker_setting', exit: 2, sentence: true },
  HandlerFileError: {
    make: () => new HandlerFileError('no handler'),
    code: 'handler_file_invalid',
    exit: 2,
    sentence: true,
  },
  FailpointSpecError: {
    make: () => new FailpointSpecError('unknown'),
    code: 'invalid_failpoints',
    exit: 2,
    sentence: true,
  },
  HeartbeatTimeout: { make: () => new HeartbeatTimeout(10), code: 'heartbeat_timeout', exit: 1, sentence: false },
  AttemptAborted: {
    make: () => new AttemptAborted('timeout', 'late'),
    code: 'attempt_aborted',
    exit: 1,
    sentence: false,
  },
  JobError: { make: () => new JobError('transient', 'x'), code: 'job_error', exit: 1, sentence: false },
  TransientError: { make: () => new TransientError('x'), code: 'transient', exit: 1, sentence: false },
  RateLimitedError: { make: () => new RateLimitedError('x'), code: 'rate_limited', exit: 1, sentence: false },
  UnknownOutcomeError: { make: () => new UnknownOutcomeError('x'), code: 'unknown_outcome', exit: 1, sentence: false },
  PermanentError: { make: () => new PermanentError('x'), code: 'permanent', exit: 1, sentence: false },
  ValidationError: { make: () => new ValidationError('x'), code: 'validation', exit: 1, sentence: false },
  CancelledJobError: { make: () => new CancelledJobError('x'), code: 'cancelled', exit: 1, sentence: false },
  SnoozeError: { make: () => new SnoozeError(1000), code: 'snooze', exit: 1, sentence: false },
  JobNotRunnable: {
    make: () => new JobNotRunnable('not_found', 'x'),
    code: 'job_not_runnable',
    exit: 1,
    sentence: false,
  },
  EnqueuedAssertionError: {
    make: () => new EnqueuedAssertionError('x'),
    code: 'enqueued_assertion_failed',
    exit: 1,
    sentence: false,
  },
  SessionEnded: { make: () => new SessionEnded('x'), code: 'session_ended', exit: 1, sentence: false },
  AuthError: { make: () => new AuthError(401, 'x'), code: 'auth_refused', exit: 1, sentence: false },
  RequestRefused: { make: () => new RequestRefused(413, 'x'), code: 'request_refused', exit: 1, sentence: false },
};

/** Where error classes live: the product's folders, and scripts/ (its database selection). */
const SCANNED = ['app', 'components', 'lib', 'db', 'workers', 'cli', 'entry', 'testing', 'scripts'];

function sources(folder: string): string[] {
  return readdirSync(path.join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.tsx?$/.test(f) && !/\.test(-d)?\.tsx?$/.test(f) && !f.includes('node_modules'))
    .map((f) => path.join(folder, f));
}

/** `class X extends Y` in the scanned sources, as [file, X, Y]. */
function classes(): [string, string, string][] {
  return SCANNED.flatMap(sources).flatMap((file) =>
    [...readFileSync(path.join(ROOT, file), 'utf8').matchAll(/\bclass (\w+) extends (\w+)/g)].map(
      (m) => [file, m[1]!, m[2]!] as [string, string, string],
    ),
  );
}

describe('one error root', () => {
  it('no class but LeaseholdError extends Error itself', () => {
    const direct = classes().filter(([, , base]) => base === 'Error' || base === 'TypeError' || base === 'RangeError');
    expect(direct).toEqual([['db/errors.ts', 'LeaseholdError', 'Error']]);
  });

  it('every class that extends a Leasehold error has its row in the table (its code pinned)', () => {
    const errors = new Set(['LeaseholdError', 'LeaseholdRefusal', ...Object.keys(ERRORS)]);
    const unlisted = classes()
      .filter(([, name, base]) => errors.has(base) && !errors.has(name))
      .map(([file, name]) => `${file}: ${name}`);
    expect(unlisted).toEqual([]);
  });

  it('every class is a LeaseholdError, keeps its name and has its own stable code', () => {
    for (const [name, row] of Object.entries(ERRORS)) {
      const error = row.make();
      expect(error, name).toBeInstanceOf(LeaseholdError);
      expect(error, name).toBeInstanceOf(Error);
      expect(error.name, name).toBe(name);
      expect(error.constructor.name, name).toBe(name);
      expect(error.code, name).toBe(row.code);
      expect(error.code, name).toMatch(/^[a-z][a-z_]*[a-z]$/);
    }
    const codes = Object.values(ERRORS).map((r) => r.code);
    expect(new Set(codes).size).toBe(codes.length);
  });

  it('LEASEHOLD_CODES is exactly the classes’ codes (the failure detail leaves these out)', () => {
    expect([...LEASEHOLD_CODES].sort()).toEqual(
      Object.values(ERRORS)
        .map((r) => r.code)
        .sort(),
    );
  });

  it('a handler’s own subclass may set a code of its own, which the failure detail records', () => {
    class ResetError extends TransientError {
      override readonly code: string = 'ECONNRESET';
    }
    const own = errorDetail(new ResetError('reset by peer'));
    expect(own?.code).toBe('ECONNRESET');
    // A Leasehold class's own code is not recorded (the class name says it), as before.
    expect(errorDetail(new TransientError('503'))).not.toHaveProperty('code');
    expect(errorDetail(new LeaseholdInputError('enqueue', ['payload: bad']))?.code).toBe('invalid_input');
  });

  it('the CLI’s exit code and sentence come from the class: refusals 2, failures 1', () => {
    for (const [name, row] of Object.entries(ERRORS)) {
      const error = row.make();
      expect([name, error.exitCode, error.sentence]).toEqual([name, row.exit, row.sentence]);
      expect(error instanceof LeaseholdRefusal, name).toBe(row.exit === 2);
    }
  });

  it('a logged error carries its code, not the CLI’s exit code or sentence', () => {
    const error = new HandlerFileError('no handler');
    expect(Object.keys(error)).not.toContain('exitCode');
    expect(Object.keys(error)).not.toContain('sentence');
    expect(JSON.parse(JSON.stringify(error))).toMatchObject({ code: 'handler_file_invalid' });
  });
});

describe('the overlapping pairs are one family each', () => {
  it('a ConfigError (the command line’s) is a WorkerOptionsError (createWorker’s)', () => {
    const error = new ConfigError('--concurrency: a whole number from 1 to 1000');
    expect(error).toBeInstanceOf(WorkerOptionsError);
    expect(new WorkerOptionsError('x')).not.toBeInstanceOf(ConfigError);
  });

  it('the dashboard’s InputError and the CLI’s UsageError are LeaseholdInputErrors, their message their own', () => {
    for (const error of [new InputError('filter: unknown state'), new UsageError('--limit: a whole number')]) {
      expect(error).toBeInstanceOf(LeaseholdInputError);
      expect(error.problems).toEqual([error.message]);
      expect(error.stack).toMatch(new RegExp(`^${error.name}: ${error.message}`));
    }
    expect(new InputError('x')).not.toBeInstanceOf(UsageError);
    expect(new UsageError('x')).not.toBeInstanceOf(InputError);
    // The queue's own is unchanged: its message names the operation and lists the problems.
    const queue = new LeaseholdInputError('enqueue', ['kind: required', 'payload: required']);
    expect(queue.message).toBe('Leasehold enqueue: invalid input: kind: required; payload: required');
    expect(queue.code).toBe('invalid_input');
  });
});

describe('docs/versioning.md', () => {
  it('lists every class with its code, meaning and exit code, as the table above', () => {
    const doc = readFileSync(path.join(ROOT, 'docs', 'versioning.md'), 'utf8');
    const rows = [...doc.matchAll(/^\| `(\w+)`\s+\| `([a-z_]+)`\s+\|[^|]+\|\s+([12])\s+\|$/gm)].map(
      (m) => `${m[1]} ${m[2]} ${m[3]}`,
    );
    expect(rows).toEqual(Object.entries(ERRORS).map(([name, r]) => `${name} ${r.code} ${r.exit}`));
  });
});
