import 'server-only';
/** The web process's one pool (kept on globalThis so dev reloads do not open new pools). */
import { createDb, type DbHandle } from '../db/client.ts';
import { webEnv } from './env.ts';

const holder = globalThis as unknown as { leaseholdDb?: DbHandle };

export function database(): DbHandle['db'] {
  holder.leaseholdDb ??= createDb(webEnv().databaseUrl, {
    max: 10,
    applicationName: 'leasehold-dashboard',
    statementTimeoutMs: 5_000,
  });
  return holder.leaseholdDb.db;
}

/** Ends the pool; the web process never does, a test that pointed DATABASE_URL here does. */
export async function closeDatabase(): Promise<void> {
  const handle = holder.leaseholdDb;
  holder.leaseholdDb = undefined;
  await handle?.close();
}
