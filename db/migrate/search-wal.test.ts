/**
 * A search index is on its kind's jobs alone (a partial index): another kind's enqueue writes
 * the same WAL, to the byte, with the index as without it; the indexed kind's own enqueue
 * writes more (the index exists and is maintained). Two identical fresh databases, kind A's
 * path indexed in one: N jobs of kind B (then of kind A) enqueued in one transaction in each,
 * after a CHECKPOINT. The bytes counted are the transaction's own WAL records (pg_walinspect, by
 * its xid) less their full-page images, which other sessions of a shared server do not disturb
 * (their CHECKPOINT can add an image, never a record); the LSN distance is printed beside them (pg_current_wal_insert_lsn:
 * pg_current_wal_lsn is the write position, which lags with synchronous_commit off).
 * docs/performance.md, "Search", has the figures.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueueMany, registerKinds } from '../queue/index.ts';
import { run } from '../queue/executor.ts';
import { testDatabase, type TestDatabase } from '../../test/db.ts';
import { syncSearchIndexes } from './search-indexes.ts';

const N = 500;
const A = 'wal.indexed';
const B = 'wal.other';
let plain: TestDatabase;
let indexed: TestDatabase;
let walinspect = false;

async function prepare(t: TestDatabase, index: boolean) {
  await registerKinds(t.db, [
    {
      kind: A,
      version: 1,
      defaultQueue: 'wal',
      displayName: A,
      redactedPaths: [],
      rerunSafe: false,
      searchablePaths: index ? ['orderId'] : [],
    },
  ]);
  if (index) {
    const client = await t.pool.connect();
    try {
      await syncSearchIndexes(client, { lockTimeoutMs: 5_000 });
    } finally {
      client.release();
    }
  }
  const [row] = await run<{ ok: boolean }>(
    t.db,
    sql`SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_walinspect') AS ok`,
  );
  if (row?.ok) await run(t.db, sql`CREATE EXTENSION IF NOT EXISTS pg_walinspect`);
  return row?.ok === true;
}

/**
 * The WAL one transaction enqueueing N jobs of `kind` writes: its records' bytes (by xid) less
 * their full-page images (a checkpoint another test file runs meanwhile adds images, not
 * records: the comparison would depend on the timing), and the LSN distance.
 */
async function enqueueWal(t: TestDatabase, kind: string): Promise<{ records: number | null; lsnBytes: number }> {
  await run(t.db, sql`CHECKPOINT`);
  const [start] = await run<{ lsn: string }>(t.db, sql`SELECT pg_current_wal_insert_lsn()::text AS lsn`);
  const xid = await t.db.transaction(async (tx) => {
    // Flushed at commit, so pg_walinspect can read it (the embedded test server runs with
    // synchronous_commit off); the same WAL records either way.
    await run(tx, sql`SET LOCAL synchronous_commit = on`);
    await enqueueMany(
      tx,
      Array.from({ length: N }, (_, i) => ({
        queue: 'wal',
        kind,
        payload: { orderId: `order-${String(i).padStart(6, '0')}`, note: 'x'.repeat(200) },
      })),
    );
    const [row] = await run<{ xid: string }>(tx, sql`SELECT pg_current_xact_id()::text AS xid`);
    return row!.xid;
  });
  const [end] = await run<{ lsn: string; bytes: string }>(
    t.db,
    sql`SELECT pg_current_wal_insert_lsn()::text AS lsn, pg_current_wal_insert_lsn() - ${start!.lsn}::pg_lsn AS bytes`,
  );
  if (!walinspect) return { records: null, lsnBytes: Number(end!.bytes) };
  const [records] = await run<{ bytes: string | null }>(
    t.db,
    sql`SELECT sum(record_length - fpi_length)::bigint AS bytes FROM pg_get_wal_records_info(${start!.lsn}::pg_lsn, ${end!.lsn}::pg_lsn)
        WHERE xid = (${xid}::xid8)::text::xid`,
  );
  return { records: Number(records?.bytes ?? 0), lsnBytes: Number(end!.bytes) };
}

beforeAll(async () => {
  [plain, indexed] = await Promise.all([testDatabase(), testDatabase()]);
  const [one, two] = await Promise.all([prepare(plain, false), prepare(indexed, true)]);
  walinspect = one && two;
});
afterAll(async () => {
  await Promise.all([plain?.close(), indexed?.close()]);
});

describe("a search index's cost on enqueue", () => {
  it("leaves another kind's enqueue WAL unchanged to the byte, and grows its own kind's", async (context) => {
    if (!walinspect) context.skip();
    const otherPlain = await enqueueWal(plain, B);
    const otherIndexed = await enqueueWal(indexed, B);
    const ownPlain = await enqueueWal(plain, A);
    const ownIndexed = await enqueueWal(indexed, A);
    console.log(
      `[search-wal] ${N} jobs in one transaction, WAL bytes of its records (LSN distance): ` +
        `kind B ${otherPlain.records} (${otherPlain.lsnBytes}) without A's index, ${otherIndexed.records} (${otherIndexed.lsnBytes}) with it; ` +
        `kind A ${ownPlain.records} (${ownPlain.lsnBytes}) without, ${ownIndexed.records} (${ownIndexed.lsnBytes}) with`,
    );
    expect(otherIndexed.records).toBe(otherPlain.records);
    expect(ownIndexed.records).toBeGreaterThan(ownPlain.records!);
  });
});
