import pg from 'pg';

/**
 * A pool that tolerates its database being dropped under it: the benchmark drops each run's
 * database WITH (FORCE), which ends idle connections with an error that would otherwise crash
 * the process.
 */
export function benchPool(url: string, max: number): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max });
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}
