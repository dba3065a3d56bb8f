/**
 * `createDb(url)`: one pool and the Drizzle database over it. Each entrypoint (web, workers,
 * tests, bench) makes its own; `db/` keeps no globals and reads no environment.
 */
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { attachPolicy, StatementNames } from './queue/executor';
import * as schema from './schema';

export type Db = NodePgDatabase<typeof schema>;

export interface DbHandle {
  pool: pg.Pool;
  db: Db;
  close: () => Promise<void>;
}

export interface CreateDbOptions {
  /** Connections in the pool (default 10). */
  max?: number;
  applicationName?: string;
  /** Per-statement limit, so a stuck query fails loudly instead of hanging a loop. */
  statementTimeoutMs?: number;
  /** Idle connections close after this long (default 10 s; 0 keeps them). */
  idleTimeoutMs?: number;
  /**
   * Whether hot statements (claims, acknowledgements, single enqueues) are prepared by name
   * (default true). `false` runs every statement unnamed: for a pooler that keeps no prepared
   * statements, such as PgBouncer before 1.21 in transaction mode.
   */
  preparedStatements?: boolean;
}

export function createDb(url: string, options: CreateDbOptions = {}): DbHandle {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'leasehold',
    statement_timeout: options.statementTimeoutMs ?? 30_000,
    keepAlive: true,
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: options.idleTimeoutMs ?? 10_000,
  });
  // An idle client that loses its server (restart, pg_terminate_backend) emits 'error' on the
  // pool; without a listener that would crash the process. The next checkout reconnects.
  pool.on('error', () => {});
  // A connection that dies while checked out (between the statements of a transaction) emits
  // 'error' on its client, which pg-pool does not listen to then: without this listener a
  // pg_terminate_backend or a server restart at that moment crashes the process (found by
  // `npm run chaos`, connection-loss). The statement in flight fails; the pool drops the client.
  pool.on('connect', (client) => client.on('error', () => {}));
  attachPolicy(pool, { names: new StatementNames({ prepared: options.preparedStatements ?? true }) });
  const db = drizzle(pool, { schema });
  return { pool, db, close: () => pool.end() };
}
