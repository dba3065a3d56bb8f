/**
 * `.env` in the working directory, loaded into process.env under the environment: a variable
 * the environment already has keeps its value (so `DATABASE_URL=… leasehold migrate` wins over
 * the file). A missing file is no error; an unreadable one is.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { UsageError } from './command.ts';

/** Loads `<cwd>/.env` into process.env, never over a variable already set; returns the file's path, or null when there is none. */
export function loadDotEnv(cwd: string): string | null {
  const file = path.join(cwd, '.env');
  if (!existsSync(file)) return null;
  if (typeof process.loadEnvFile !== 'function')
    throw new UsageError(
      `${file} is there, but this Node (${process.version}) cannot read .env files: use Node 20.12 or later`,
    );
  // process.loadEnvFile writes process.env; what was set before it is put back, so the environment wins.
  const before = { ...process.env };
  try {
    process.loadEnvFile(file);
  } catch (error) {
    throw new UsageError(`could not read ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
  for (const [key, value] of Object.entries(before)) process.env[key] = value;
  return file;
}
