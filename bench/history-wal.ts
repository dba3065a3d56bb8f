/**
 * `npm run bench:history-wal`: the WAL a day of queue history costs at 1,000 jobs/s
 * (db/queue/queue-history.ts; docs/performance.md, "Queue history").
 *
 * The finishing statements already write the per-minute rollup (finished_rollup) whatever this
 * costs; what the history adds is the maintenance's round, once a minute: recount the recent
 * minutes per queue, sample live work, fold the hours, remove what aged out. Its writes depend
 * on the number of queues, not the job rate; its reads on the rows a minute at that rate leaves.
 * So this fills a fresh database as 1,000 jobs/s over `--queues` queues and 7 kinds leave it
 * (three minutes of rollup rows over 8 shards and 3 attempt counts, 3% of jobs failing an
 * attempt, 1% ready; 7 days of minutes and 90 days of hours already recorded), then runs
 * `--rounds` rounds, each after a second's worth of finishes more in the current minute, and
 * measures each round's WAL (pg_current_wal_lsn) and time, with a checkpoint every 5 rounds (the
 * default checkpoint_timeout's pace). A day is 1,440 rounds.
 *
 *   npm run bench:history-wal -- [--queues 4] [--rounds 20]
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { sql } from 'drizzle-orm';
import { createDb } from '../db/client.ts';
import { PROJECT_DIR, selectDatabase } from '../cli/database-select.ts';
import { migrateDatabase } from '../db/migrate/index.ts';
import { run } from '../db/queue/executor.ts';
import { recordQueueHistory } from '../db/queue/queue-history.ts';
import { createScratchDatabase } from '../test/scratch-database.ts';

const { values } = parseArgs({
  options: { queues: { type: 'string', default: '4' }, rounds: { type: 'string', default: '20' } },
});
const queues = Number(values.queues);
const rounds = Number(values.rounds);
const RATE = 1000;

const server = await selectDatabase({
  databaseUrl: process.env.DATABASE_URL,
  dataDir: path.join(PROJECT_DIR, '.leasehold', 'bench-postgres'),
  database: 'postgres',
  unsafeFast: true,
  log: (l) => console.error(`[bench] ${l}`),
});
const scratch = await createScratchDatabase(server.url, 'leasehold_history_wal');
await migrateDatabase(scratch.url);
const { db, close } = createDb(scratch.url, { max: 2 });
const queueList = sql`(SELECT 'q' || n AS queue FROM generate_series(1, ${queues}) n)`;
const lsn = async () => (await run<{ lsn: string }>(db, sql`SELECT pg_current_wal_lsn()::text AS lsn`))[0]!.lsn;
const walSince = async (from: string) =>
  Number(
    (await run<{ b: string }>(db, sql`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), ${from}::pg_lsn)::text AS b`))[0]!.b,
  );

/** `seconds` of finishes at RATE jobs/s into the minute `minutesAgo` back, as the finishing statements add them. */
async function finish(minutesAgo: number, seconds: number) {
  const jobs = Math.round((RATE * seconds) / queues / 7 / 8 / 3);
  await run(
    db,
    sql`
    INSERT INTO leasehold.finished_rollup AS r (minute, queue, kind, state, attempts, shard, jobs)
    SELECT date_trunc('minute', now()) - ${minutesAgo} * interval '1 minute', q.queue, 'k' || k, 'done', a, s, ${jobs}
    FROM ${queueList} q, generate_series(1, 7) k, generate_series(1, 3) a, generate_series(0, 7) s
    ON CONFLICT (minute, queue, kind, state, attempts, shard) DO UPDATE SET jobs = r.jobs + excluded.jobs`,
  );
  await run(
    db,
    sql`
    INSERT INTO leasehold.job_attempts (job_id, attempt, queue, kind, lease_token, started_at, ended_at, outcome, failure_class, duration_ms)
    SELECT gen_random_uuid(), 1, 'q' || (1 + g % ${queues}), 'k' || (g % 7), gen_random_uuid(), t, t, 'failed', 'transient', 10
    FROM generate_series(1, ${Math.round(RATE * seconds * 0.03)}) g,
      LATERAL (SELECT greatest(date_trunc('minute', now()) - ${minutesAgo} * interval '1 minute', now() - interval '1 second' * (g % 60)) AS t) x`,
  );
}

try {
  console.error(`[bench] filling: ${queues} queues, ${RATE} jobs/s…`);
  for (const ago of [2, 1]) await finish(ago, 60);
  await finish(0, 30);
  await run(
    db,
    sql`
    INSERT INTO leasehold.jobs (id, queue, kind, payload)
    SELECT gen_random_uuid(), 'q' || (1 + g % ${queues}), 'k', '{}'::jsonb FROM generate_series(1, ${RATE * 6}) g`,
  );
  // 7 days of minutes and 90 days of hours, as the rounds before would have left them.
  await run(
    db,
    sql`
    INSERT INTO leasehold.queue_minutes (minute, queue, done, failed_attempts, ready, running, oldest_ready_seconds)
    SELECT date_trunc('minute', now()) - m * interval '1 minute', q.queue, ${(RATE * 60) / queues}, ${(RATE * 60 * 0.03) / queues}, 1500, 8, 3
    FROM generate_series(3, 7 * 1440) m, ${queueList} q`,
  );
  await run(
    db,
    sql`
    INSERT INTO leasehold.queue_hours (hour, queue, done, failed_attempts, ready, running, oldest_ready_seconds)
    SELECT date_bin('1 hour', now(), '2000-01-01 00:00:00+00'::timestamptz) - h * interval '1 hour', q.queue, ${(RATE * 3600) / queues}, 100, 1500, 8, 3
    FROM generate_series(1, 90 * 24 - 1) h, ${queueList} q`,
  );
  await run(db, sql`VACUUM ANALYZE`);
  await recordQueueHistory(db); // the first round after the fill: three minutes recounted
  const wal: number[] = [];
  const ms: number[] = [];
  for (let i = 0; i < rounds; i++) {
    // A checkpoint every 5 rounds, as PostgreSQL's default checkpoint_timeout (5 min) makes
    // them: the first write of each page after one logs the whole page.
    if (i % 5 === 0) await run(db, sql`CHECKPOINT`);
    await finish(0, 1);
    const from = await lsn();
    const started = performance.now();
    await recordQueueHistory(db);
    ms.push(performance.now() - started);
    wal.push(await walSince(from));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const mean = wal.reduce((a, b) => a + b, 0) / wal.length;
  const result = {
    queues,
    jobsPerSecond: RATE,
    rounds,
    walPerRoundBytes: {
      median: median(wal),
      mean: Math.round(mean),
      afterCheckpoint: median(wal.filter((_, i) => i % 5 === 0)),
    },
    roundMs: { median: Math.round(median(ms) * 10) / 10, max: Math.round(Math.max(...ms) * 10) / 10 },
    /** 1,440 rounds at the mean (a checkpoint every 5 rounds' full pages included). */
    walPerDayMB: Math.round(((mean * 1440) / 1e6) * 10) / 10,
    /** Without full-page images: every round at the median. */
    walPerDayNoFullPagesMB: Math.round(((median(wal) * 1440) / 1e6) * 10) / 10,
  };
  console.log(JSON.stringify(result, null, 2));
} finally {
  await close();
  await scratch.drop();
  await server.stop();
}
