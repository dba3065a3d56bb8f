/**
 * What a command's error comes to, from its class (db/errors.ts): each refusal class exits 2
 * and is said as one sentence, each failure class exits 1 (with its message, or its stack when
 * it is not a sentence), exactly as cli/run.ts mapped them by name before the error root. The
 * command's own work is replaced by a throw (in process); no database is used. The commands'
 * real refusals (flags, DATABASE_URL, handlers files, the migration lock) are pinned end to end
 * in cli.test.ts, migrate.test.ts and workers.test.ts. WorkerOptionsError, ConfigError and
 * FailpointSpecError never reached cli/run.ts (`leasehold workers` answers them itself with
 * exit 2: workers/run-process.ts); should one, it exits 2 here too.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MigrationFolderError } from '../db/migrate/files.ts';
import { MigrationRefused } from '../db/migrate/journal.ts';
import { MigrationFailed, MigrationLockBusy } from '../db/migrate/index.ts';
import { LeaseholdInputError, LeaseholdSchemaError, NO_SCHEMA_SENTENCE } from '../db/queue/errors.ts';
import { DatabaseSettingError } from '../cli/database-url.ts';
import { tempProject } from '../test/cli.ts';
import { FailpointSpecError } from '../workers/failpoints.ts';
import { HandlerFileError } from '../workers/handler-files.ts';
import { ConfigError } from '../workers/config.ts';
import { WorkerOptionsError } from '../workers/create-worker.ts';
import { UsageError } from './command.ts';
import { migrateCommand } from './migrate.ts';
import { runCli } from './run.ts';

afterEach(() => {
  vi.restoreAllMocks();
});

/** Runs `leasehold migrate` with its work replaced by throwing `error`: the exit code and stderr. */
async function ending(error: unknown): Promise<{ code: number; stderr: string }> {
  vi.spyOn(migrateCommand, 'run').mockRejectedValue(error);
  const lines: string[] = [];
  vi.spyOn(console, 'error').mockImplementation((line: unknown) => {
    lines.push(String(line));
  });
  const code = await runCli(['migrate'], tempProject());
  return { code, stderr: lines.join('\n') };
}

describe('a command ended by an error exits as its class says', () => {
  const refusals: [string, Error, string][] = [
    ['UsageError', new UsageError('--limit: a whole number'), '--limit: a whole number'],
    ['DatabaseSettingError', new DatabaseSettingError('DATABASE_URL is not set'), 'DATABASE_URL is not set'],
    ['HandlerFileError', new HandlerFileError('handlers.mjs exports no handler'), 'handlers.mjs exports no handler'],
    ['MigrationLockBusy', new MigrationLockBusy('the lock is held by pid 7'), 'the lock is held by pid 7'],
    ['WorkerOptionsError', new WorkerOptionsError('createWorker: invalid options'), 'createWorker: invalid options'],
    ['ConfigError', new ConfigError('--concurrency: 1 to 1000'), '--concurrency: 1 to 1000'],
    ['FailpointSpecError', new FailpointSpecError('unknown failpoint "x"'), 'unknown failpoint "x"'],
  ];
  it.each(refusals)('%s: exit 2, its message alone', async (_name, error, message) => {
    const run = await ending(error);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`leasehold migrate: ${message}`);
  });

  it('LeaseholdInputError: exit 2, its problems as the command’s (the operation unnamed)', async () => {
    const run = await ending(new LeaseholdInputError('enqueue', ['kind: required', 'payload: required']));
    expect(run.code).toBe(2);
    expect(run.stderr).toBe('leasehold migrate: invalid input: kind: required; payload: required');
  });

  it.each([
    ['MigrationRefused', new MigrationRefused('0003 was edited after it was applied')],
    ['MigrationFailed', new MigrationFailed('0004 failed: syntax error', { cause: new Error('syntax error') })],
  ])('%s: exit 1, its message alone', async (_name, error) => {
    const run = await ending(error);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`leasehold migrate: ${error.message}`);
  });

  it.each([
    ['LeaseholdSchemaError', new LeaseholdSchemaError(NO_SCHEMA_SENTENCE)],
    ['MigrationFolderError', new MigrationFolderError('/srv/migrations', ['meta/_journal.json: missing'])],
    ['Error', new Error('a bug')],
  ])('%s: exit 1, failed with its stack', async (_name, error) => {
    const run = await ending(error);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`leasehold migrate: failed: ${error.stack}`);
  });
});
