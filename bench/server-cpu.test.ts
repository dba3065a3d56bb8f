import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { postmasterPid, readable, watchServerCpu } from './server-cpu.ts';

const BURN = 'SELECT count(*) FROM generate_series(1, 4000000) AS g WHERE g % 7 = 3';

let sampler: pg.Client;
let postmaster: number | null = null;
let skipReason: string | null = null;

beforeAll(async () => {
  sampler = new pg.Client({ connectionString: inject('serverUrl') });
  await sampler.connect();
  if (!(await readable(sampler))) skipReason = "the server's /proc is not readable from here";
  else postmaster = await postmasterPid(sampler);
});
afterAll(() => sampler?.end());

async function burnOn(client: pg.Client): Promise<number> {
  const started = process.cpuUsage();
  const t0 = performance.now();
  await client.query(BURN);
  const ms = performance.now() - t0;
  // The query's time is the server's: this process only waited.
  expect(process.cpuUsage(started).user / 1000).toBeLessThan(ms);
  return ms;
}

describe("the database server's CPU time, read from its processes", () => {
  it('counts the CPU of a busy client backend under backends', async (context) => {
    if (skipReason) return context.skip(skipReason);
    const worker = new pg.Client({ connectionString: inject('serverUrl') });
    await worker.connect();
    try {
      const watch = watchServerCpu(sampler, postmaster!, 50);
      await watch.start();
      const ms = await burnOn(worker);
      const spent = await watch.stop();
      // The query ran on one core for most of its wall time (ticks are 10 ms).
      expect(spent.backends / 1000).toBeGreaterThan(ms * 0.5);
      expect(spent.total).toBeGreaterThanOrEqual(spent.backends);
    } finally {
      await worker.end();
    }
  });

  it("keeps a connection's CPU when it closes before the last sample (reaped by the postmaster)", async (context) => {
    if (skipReason) return context.skip(skipReason);
    // Sampled too seldom to see the connection at all: its time reaches the total through the
    // postmaster's reaped-children time, as `exited`.
    const watch = watchServerCpu(sampler, postmaster!, 60_000);
    await watch.start();
    const shortLived = new pg.Client({ connectionString: inject('serverUrl') });
    await shortLived.connect();
    const { rows } = await shortLived.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const ms = await burnOn(shortLived);
    await shortLived.end();
    // The backend exits after its client goes, and the postmaster reaps it: wait for that.
    const gone = async () =>
      (await sampler.query('SELECT 1 FROM pg_catalog.pg_stat_activity WHERE pid = $1', [rows[0]!.pid])).rowCount === 0;
    for (let i = 0; i < 100 && !(await gone()); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const spent = await watch.stop();
    expect(spent.exited / 1000).toBeGreaterThan(ms * 0.5);
  });
});
