/**
 * Why rate limits keep a sliding-window log, not a token bucket (issue 36; db/queue/limits.ts).
 * Measures what each costs a rate-limited claim on its own, beside the claim: the bookkeeping
 * statement a claim of `n` jobs adds, its time and its WAL, over ITERATIONS claims, and checks
 * the promise each keeps: the most starts one window of the interval can hold.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/probes/rate-window.ts
 *
 * Each variant runs in a schema of its own, dropped at the end. Figures: medians of REPEATS.
 */
import pg from 'pg';

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const ITERATIONS = Number(process.env.ITERATIONS ?? 5000);
const REPEATS = Number(process.env.REPEATS ?? 3);
// A cap no claim reaches, so every claim takes its jobs and writes its bookkeeping: the cost of
// a claim that starts jobs (a claim the rate refuses writes nothing in the log, and still
// updates the bucket's row). The log's cost grows with the claims in one window (its rows).
const RATE = 1_000_000_000;
const BENCH_RATE = 5000; // starts per second, as the bench's rated drain
const SCHEMA = `rate_probe_${process.pid}`;

interface Variant {
  name: string;
  /** The log's rows in one window, read after the run (the log's cost grows with them). */
  rows?: string;
  setup: string[];
  /** The statement one claim of $2 jobs adds, at statement time; returns the starts it may take. */
  take: string;
}

/** The log with a window of `ms`: as fast as one session claims, its rows number claims/s × ms. */
const log = (ms: number): Variant => ({
  name: `sliding-window log, ${ms} ms window`,
  // What the last claim left: it removed every row older than its window.
  rows: `SELECT count(*)::int AS n FROM ${SCHEMA}.starts`,
  setup: [`CREATE TABLE ${SCHEMA}.starts (key text, at timestamptz, n int, PRIMARY KEY (key, at))`],
  take: `WITH used AS (
           SELECT coalesce(sum(n), 0) AS n FROM ${SCHEMA}.starts WHERE key = $1 AND at > statement_timestamp() - interval '${ms} milliseconds'
         ), ins AS (
           INSERT INTO ${SCHEMA}.starts (key, at, n) SELECT $1, statement_timestamp(), least($2, ${RATE} - (SELECT n FROM used))
           WHERE ${RATE} - (SELECT n FROM used) > 0
           ON CONFLICT (key, at) DO UPDATE SET n = starts.n + excluded.n RETURNING n
         ), aged AS (
           DELETE FROM ${SCHEMA}.starts WHERE key = $1 AND at <= statement_timestamp() - interval '${ms} milliseconds' RETURNING 1
         )
         SELECT coalesce((SELECT n FROM ins), 0) AS took`,
});

const variants: Variant[] = [
  log(1000),
  log(40),
  log(4),
  {
    name: 'token bucket (one row)',
    setup: [
      `CREATE TABLE ${SCHEMA}.buckets (key text PRIMARY KEY, tokens float8, at timestamptz)`,
      `INSERT INTO ${SCHEMA}.buckets VALUES ('k', ${RATE}, now())`,
    ],
    take: `UPDATE ${SCHEMA}.buckets b SET
             tokens = r.t - least($2, floor(r.t)), at = statement_timestamp()
           FROM (SELECT least(${RATE}, tokens + extract(epoch FROM statement_timestamp() - at) * ${RATE}) AS t
                 FROM ${SCHEMA}.buckets WHERE key = $1) r
           WHERE b.key = $1
           RETURNING least($2, floor(r.t))::int AS took`,
  },
];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function measure(client: pg.Client, v: Variant, n: number) {
  const times: number[] = [];
  const wal: number[] = [];
  const rows: number[] = [];
  for (let r = 0; r < REPEATS; r++) {
    await client.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
    await client.query(`CREATE SCHEMA ${SCHEMA}`);
    for (const s of v.setup) await client.query(s);
    const [{ lsn: before }] = (await client.query('SELECT pg_current_wal_insert_lsn() AS lsn')).rows;
    const start = performance.now();
    for (let i = 0; i < ITERATIONS; i++) {
      await client.query({ name: `${v.name}-take`, text: v.take, values: ['k', n] });
    }
    times.push(((performance.now() - start) * 1000) / ITERATIONS);
    const [{ bytes }] = (
      await client.query('SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1)::float8 AS bytes', [before])
    ).rows;
    wal.push(bytes / ITERATIONS);
    if (v.rows) rows.push((await client.query(v.rows)).rows[0].n);
  }
  await client.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  return { usPerClaim: median(times), walPerClaim: median(wal), rows: rows.length ? median(rows) : null };
}

const client = new pg.Client({ connectionString: url });
await client.connect();
try {
  const server = (await client.query('SHOW server_version')).rows[0].server_version;
  console.log(`PostgreSQL ${server}; ${ITERATIONS} claims × ${REPEATS}, as fast as one session goes; medians`);
  for (const n of [50]) {
    for (const v of variants) {
      const m = await measure(client, v, n);
      const rows = m.rows === null ? '' : `, ${m.rows} rows in its window`;
      console.log(
        `${v.name.padEnd(34)} claims of ${n}: ${m.usPerClaim.toFixed(1)} µs, ${m.walPerClaim.toFixed(0)} B WAL a claim${rows}`,
      );
    }
  }
  // The promise: with a bucket of capacity N refilled at N per interval, a full bucket emptied
  // at the end of one interval refills while the next passes, so one window of the interval
  // can hold ~2N starts; the log counts the starts in the window itself, so never more than N.
  console.log(
    `most starts in one 1 s window at ${BENCH_RATE}/s: log ${BENCH_RATE}; bucket (capacity ${BENCH_RATE}) ${2 * BENCH_RATE - 1} (a full bucket taken at t, refilled by t + 1 s − 1/${BENCH_RATE} s)`,
  );
} finally {
  await client.end();
}
