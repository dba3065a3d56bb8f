import { workerSettings } from '../test/workers.ts';
import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { listWorkers } from '../db/queue/index.ts';
import { run } from '../db/queue/executor.ts';
import { SCHEMA_VERSION } from '../db/schema-version.ts';
import { testDatabase, type TestDatabase } from '../test/db.ts';
import { silentLogger } from '../test/attempts.ts';
import { uniqueQueue } from '../test/factories.ts';
import { defineHandler, HandlerRegistry } from './handler.ts';
import { Worker } from './worker.ts';

let t: TestDatabase;
const workers: Worker[] = [];
beforeAll(async () => {
  t = await testDatabase();
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop(0)));
  // Back to the journal the template was migrated with.
  await run(t.db, sql`DELETE FROM leasehold.migrations WHERE name LIKE 'from_a_newer_version%'`);
});
afterAll(async () => {
  await t?.close();
});

const noop = defineHandler({
  kind: 'noop',
  versions: [1],
  schema: z.unknown(),
  timeoutMs: 1000,
  handle: async () => 'ok',
});

function worker(queue: string): Worker {
  const settings = workerSettings(queue, `schema-${queue}`);
  const w = new Worker(settings, {
    db: t.db,
    databaseUrl: t.url,
    registry: new HandlerRegistry([noop]),
    logger: silentLogger,
  });
  workers.push(w);
  return w;
}

/** A migration as a newer Leasehold would record it: its schema version and the oldest code it suits. */
async function newerMigration(schemaVersion: number, compatibleFrom: number): Promise<void> {
  await run(
    t.db,
    sql`INSERT INTO leasehold.migrations (name, position, checksum, schema_version, compatible_from)
        SELECT 'from_a_newer_version', max(position) + 1, 'x', ${schemaVersion}, ${compatibleFrom} FROM leasehold.migrations`,
  );
}

const registered = async (queue: string) => (await listWorkers(t.db, 60)).some((w) => w.id === `schema-${queue}`);

describe("a worker's start", () => {
  it('refuses a schema that needs newer code, with the sentence, before registering', async () => {
    await newerMigration(SCHEMA_VERSION + 2, SCHEMA_VERSION + 1);
    const queue = uniqueQueue();
    await expect(worker(queue).start()).rejects.toThrow(
      `Leasehold: this code is too old for the database: the schema is at version ${SCHEMA_VERSION + 2} and needs code of schema version ${SCHEMA_VERSION + 1} or later`,
    );
    expect(await registered(queue)).toBe(false);
  });

  it('goes ahead on a newer schema that declares itself compatible with this code (expand)', async () => {
    await newerMigration(SCHEMA_VERSION + 1, SCHEMA_VERSION);
    const queue = uniqueQueue();
    await worker(queue).start();
    expect(await registered(queue)).toBe(true);
  });
});
