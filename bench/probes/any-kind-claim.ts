/**
 * The any-kind claim (`claim` without `kinds`: tests, tools) of this tree against the previous
 * release's (test/fixtures/release-10/any-kind-claim.sql, which walks `ready_jobs_claim_idx`),
 * with 1, 10 and 100 kind versions ready in the queue. Each round claims 10 jobs and
 * acknowledges them; the two texts alternate, one queue each, in one scratch database, so both
 * see the same server, the same dead index entries (autovacuum off on CI's server) and the same
 * load. Prints the median and the 90th percentile of a claim's round trip per text and count.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/probes/any-kind-claim.ts
 *
 * It creates a scratch database (`leasehold_probe_any_kind_…`) and drops it at the end.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { migrateDatabase } from '../../db/migrate/index.ts';
import { claim, completeManyIfLeaseHeld, enqueueMany } from '../../db/queue/index.ts';
import { createScratchDatabase } from '../../test/scratch-database.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PREVIOUS = readFileSync(
  path.resolve(HERE, '..', '..', 'test', 'fixtures', 'release-10', 'any-kind-claim.sql'),
  'utf8',
);
const ROUNDS = Number(process.env.ROUNDS ?? 400);
const JOBS = 10_000;
const LIMIT = 10;

const server = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

const scratch = await createScratchDatabase(server, 'leasehold_probe_any_kind');
try {
  await migrateDatabase(scratch.url);
  const client = new pg.Client({ connectionString: scratch.url });
  await client.connect();
  try {
    console.log('| kind versions ready | previous p50 (ms) | previous p90 | this tree p50 (ms) | this tree p90 |');
    console.log('| ---: | ---: | ---: | ---: | ---: |');
    for (const versions of [1, 10, 100]) {
      const queues = { previous: `previous-${versions}`, current: `current-${versions}` };
      for (const queue of Object.values(queues)) {
        await enqueueMany(
          client,
          Array.from({ length: JOBS }, (_, i) => ({ queue, kind: `probe.k${i % versions}` })),
          { notify: false },
        );
      }
      await client.query('ANALYZE leasehold.ready_jobs');
      const times = { previous: [] as number[], current: [] as number[] };
      for (let round = 0; round < ROUNDS; round++) {
        for (const which of round % 2 === 0 ? (['previous', 'current'] as const) : (['current', 'previous'] as const)) {
          const start = performance.now();
          let taken: { id: string; leaseToken: string }[];
          if (which === 'previous') {
            const token = randomUUID();
            const { rows } = await client.query<{ id: string }>(PREVIOUS, [queues.previous, LIMIT, token, 60, 'probe']);
            taken = rows.map((r) => ({ id: r.id, leaseToken: token }));
          } else {
            const jobs = await claim(client, {
              queues: [queues.current],
              workerId: 'probe',
              limit: LIMIT,
              leaseSeconds: 60,
            });
            taken = jobs.map((j) => ({ id: j.id, leaseToken: j.leaseToken }));
          }
          times[which].push(performance.now() - start);
          if (taken.length !== LIMIT) throw new Error(`${which}: claimed ${taken.length} of ${LIMIT}`);
          await completeManyIfLeaseHeld(client, taken);
        }
      }
      const row = (xs: number[]) => {
        const sorted = xs.slice(10).sort((a, b) => a - b); // the first rounds plan and warm up
        return `${pct(sorted, 0.5).toFixed(3)} | ${pct(sorted, 0.9).toFixed(3)}`;
      };
      console.log(`| ${versions} | ${row(times.previous)} | ${row(times.current)} |`);
    }
  } finally {
    await client.end();
  }
} finally {
  await scratch.drop();
}
