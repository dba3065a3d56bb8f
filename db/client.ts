/**
 * `createDb(url)`: one pool and the Drizzle database over it. Each entrypoint (web, workers,
 * tests, bench) makes its own; `db/` keeps no globals and reads no environment.
 *
 * Nothing is sent at connection start but the user, database and application name: a pooler
 * in transaction mode (PgBouncer) refuses other startup parameters, and any session setting
 * would stay behind on a server connection that other clients get next. So the limits are set
 * per transaction (SET LOCAL, at the start of every transaction on this database and every one
 * Leasehold opens on its pool), and single statements outside a transaction get theirs from the
 * database role they log in as (set by `npm run db:roles` on each login of leasehold_worker and
 * leasehold_dashboard, docs/operations.md), never from a session.
 */
import { sql } from 'drizzle-orm';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { attachPolicy, StatementNames } from './queue/executor.ts';
import * as schema from './schema.ts';

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
  /**
   * Per-statement limit inside transactions, so a stuck query fails loudly instead of hanging
   * a loop (default 30 s). This and the two below are set with SET LOCAL at the start of each
   * transaction; 0 turns a limit off for the transaction, null leaves the role's setting.
   */
  statementTimeoutMs?: number | null;
  /** How long a statement in a transaction waits for a lock before it fails (default 10 s). */
  lockTimeoutMs?: number | null;
  /** A transaction left idle this long is ended by the server, its locks freed (default 60 s). */
  idleInTransactionTimeoutMs?: number | null;
  /** Idle connections close after this long (default 10 s; 0 keeps them). */
  idleTimeoutMs?: number;
  /**
   * Whether hot statements (claims, acknowledgements, single enqueues) are prepared by name
   * (default true). `false` runs every statement unnamed: for a pooler that keeps no prepared
   * statements, such as PgBouncer before 1.21 in transaction mode.
   */
  preparedStatements?: boolean;
  /**
   * Client-side limit on each query's wait for its answer (pg's `query_timeout`; default none).
   * A query past it fails and its connection is dropped from the pool, so a connection that
   * went half-open (a NAT or firewall lost its state: no answer, no reset) cannot hold the
   * caller for the ~15 min TCP takes to give up. Set it only on a pool whose statements are
   * all short (the worker's heartbeat pool), never on one that runs handlers' own queries.
   */
  queryTimeoutMs?: number;
}

/**
 * TCP keepalive starts probing a connection this long after it went quiet (the OS default is
 * two hours), so an idle connection whose peer vanished is found and dropped.
 */
const KEEPALIVE_INITIAL_DELAY_MS = 10_000;

const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000;
const DEFAULT_LOCK_TIMEOUT_MS = 10_000;
const DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS = 60_000;

export function createDb(url: string, options: CreateDbOptions = {}): DbHandle {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'leasehold',
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_INITIAL_DELAY_MS,
    connectionTimeoutMillis: 10_000,
    ...(options.queryTimeoutMs !== undefined ? { query_timeout: options.queryTimeoutMs } : {}),
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
  const transactionSettings = transactionSettingsText(options);
  attachPolicy(pool, {
    names: new StatementNames({ prepared: options.preparedStatements ?? true }),
    transactionSettings,
  });
  const db = drizzle(pool, { schema });
  if (transactionSettings) startTransactionsWith(db, transactionSettings);
  return { pool, db, close: () => pool.end() };
}

/** The SET LOCAL statements for the options' limits, or '' when every one is left to the role. */
export function transactionSettingsText(options: CreateDbOptions): string {
  const limits: [string, number | null | undefined, number][] = [
    ['statement_timeout', options.statementTimeoutMs, DEFAULT_STATEMENT_TIMEOUT_MS],
    ['lock_timeout', options.lockTimeoutMs, DEFAULT_LOCK_TIMEOUT_MS],
    ['idle_in_transaction_session_timeout', options.idleInTransactionTimeoutMs, DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS],
  ];
  const statements: string[] = [];
  for (const [setting, given, fallback] of limits) {
    if (given === null) continue;
    const ms = given ?? fallback;
    if (!Number.isSafeInteger(ms) || ms < 0)
      throw new RangeError(`Leasehold: createDb: ${setting} must be a whole number of ms >= 0 (or null), got ${ms}`);
    statements.push(`SET LOCAL ${setting} = ${ms}`);
  }
  return statements.join('; ');
}

/**
 * Every `db.transaction` (the maintenance rounds', the caller's) runs `settings` first, on the
 * transaction's connection. Savepoints (`tx.transaction`) are inside one and need nothing.
 */
function startTransactionsWith(db: Db, settings: string): void {
  const transaction = db.transaction.bind(db);
  const statement = sql.raw(settings);
  db.transaction = (work, config) =>
    transaction(async (tx) => {
      await tx.execute(statement);
      return work(tx);
    }, config);
}
