/**
 * The one place entrypoints read the database settings from the environment.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { selectDatabase, type DatabaseHandle } from '../db/database';

export const PROJECT_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** DATABASE_URL when set, else the embedded server under `.leasehold/postgres`. */
export function databaseFromEnv(
  log: (line: string) => void = (line) => console.error(`[leasehold] ${line}`),
): Promise<DatabaseHandle> {
  return selectDatabase({
    databaseUrl: process.env.DATABASE_URL,
    dataDir: process.env.LEASEHOLD_DATA_DIR ?? path.join(PROJECT_DIR, '.leasehold', 'postgres'),
    log,
  });
}
