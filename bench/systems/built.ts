/**
 * Leasehold's code as the package ships it: the JavaScript that `npm run build:package` writes
 * to dist/ (what `npx leasehold workers` and an application's `import 'leasehold/worker'`
 * run), not the TypeScript sources through tsx's loader. The anchors run from their published
 * JavaScript too. tsx's transform cost the worker about 2 µs a job (10.2 against 8.1 µs of
 * worker CPU in a one-process drain of 100,000 jobs, three pairs, 2026-12-02), a fifth of its
 * time, which no user pays. bench/main.ts builds dist/ before every run; the types are the
 * sources' own.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { PROJECT_DIR } from '../../cli/database-select.ts';

/** The module `dist/` holds for a source file (`db/client.ts` → `dist/db/client.js`). */
async function built<T>(source: string): Promise<T> {
  const file = path.join(PROJECT_DIR, 'dist', source.replace(/\.ts$/, '.js'));
  if (!existsSync(file)) throw new Error(`${file} is missing: npm run build:package (bench/main.ts runs it first)`);
  return import(pathToFileURL(file).href) as Promise<T>;
}

export const { createDb } = await built<typeof import('../../db/client.ts')>('db/client.ts');
export const { migrateDatabase } = await built<typeof import('../../db/migrate/index.ts')>('db/migrate/index.ts');
export const { claim, ClaimOptionsCache, completeManyIfLeaseHeld, enqueue, enqueueMany } =
  await built<typeof import('../../db/queue/index.ts')>('db/queue/index.ts');
export const { removeExpiredHistory } =
  await built<typeof import('../../db/queue/retention.ts')>('db/queue/retention.ts');
export const { parseWorkerConfig } = await built<typeof import('../../workers/config.ts')>('workers/config.ts');
export const { defineHandler, HandlerRegistry } =
  await built<typeof import('../../workers/handler.ts')>('workers/handler.ts');
export const { Worker } = await built<typeof import('../../workers/worker.ts')>('workers/worker.ts');
