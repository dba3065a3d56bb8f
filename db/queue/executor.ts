/**
 * What the queue functions run their SQL on: a Drizzle database or transaction, a plain `pg`
 * pool, pool client or client, or a StatementRunner (any other client: adapters.ts makes one for
 * Kysely and for postgres.js). Passing the caller's transaction is how a job commits or rolls
 * back together with the business write that asked for it (docs/executors.md).
 *
 * How statements run on a pool's connections (named or not, and what a transaction Leasehold
 * opens sets first) is the pool's own policy, which createDb attaches to the pool and to each
 * of its connections (see ConnectionPolicy). This module keeps no state of its own beyond that
 * association, held weakly: a pool that is dropped takes its policy with it.
 */
import { sql as drizzleSql, type SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { LeaseholdInputError } from './errors.ts';

/**
 * What a Drizzle executor's `execute` is given: Drizzle's `SQL` (any SQLWrapper), declared by
 * its shape so that Leasehold's published types import nothing from drizzle-orm (a user's
 * compiler with skipLibCheck: false would check all of Drizzle's own declarations). The string
 * is there because Drizzle's `execute` takes one too: its parameter, `SQLWrapper | string`,
 * must fit this one. Leasehold passes only SQL objects.
 */
interface DrizzleQuery {
  getSQL(): unknown;
}

/**
 * A Drizzle database or transaction over pg (`drizzle-orm/node-postgres`), by the one method
 * the queue functions call. Drizzle's own types need not be the ones Leasehold was built with:
 * any version whose `execute` returns pg's result (`rows`) fits.
 */
export interface DrizzleExecutor {
  execute(query: DrizzleQuery | string): Promise<{ rows: unknown[]; rowCount?: number | null }>;
}

/**
 * A Drizzle database over pg, by what Leasehold's own callers use of it: an executor that opens
 * transactions (Drizzle's `transaction`, BEGIN … COMMIT, ROLLBACK when `work` throws). What the
 * testing kit's TestDatabase.db is typed as.
 */
export interface DrizzleDatabase extends DrizzleExecutor {
  transaction<T>(work: (tx: DrizzleExecutor) => Promise<T>): Promise<T>;
}

type PgExecutor = Pick<pg.Pool | pg.PoolClient | pg.Client, 'query'>;

/**
 * The executor interface for a client Leasehold has no built-in support for: one method that
 * runs one statement and returns its rows. What it must do (docs/executors.md):
 *
 * - run `text` as one statement (no `;`-separated lists are sent) with `$1 … $n` bound to
 *   `values` as parameters, never spliced into the text. The values are strings, numbers,
 *   booleans, null, Dates and arrays of these; bind them as node-postgres does (text form,
 *   typed by the server from the statement, which casts them: `$5::jsonb` gets JSON text);
 * - on the caller's connection and transaction: no BEGIN, COMMIT or savepoint of its own, so
 *   the statement commits or rolls back with the caller's work;
 * - return the rows as objects keyed by column name exactly as PostgreSQL names them (no
 *   camel-casing), with json and jsonb parsed, int4 as number, timestamptz as a Date or
 *   PostgreSQL's text, int8 and numeric as string, number or bigint;
 * - throw PostgreSQL's errors with the SQLSTATE as `code` and the constraint's name as
 *   `constraint` (as pg's DatabaseError has them).
 *
 * Statements on a runner are never prepared by name (the client's own policy applies).
 */
export interface StatementRunner {
  runStatement(text: string, values: readonly unknown[]): Promise<readonly unknown[]>;
}

export type Executor = DrizzleExecutor | PgExecutor | StatementRunner;

const dialect = new PgDialect();

interface DrizzleSession {
  prepareQuery(
    query: { sql: string; params: unknown[] },
    fields: undefined,
    name: string,
    arrayMode: false,
  ): {
    execute(): Promise<{ rows: unknown[] }>;
  };
}

/**
 * Runs one statement and returns its rows, typed as `Row`: declare at the call site what the
 * statement returns (see PgTimestamp for the columns whose JS type depends on the executor).
 * With `name`, the statement is prepared once per connection under that name and its plan
 * reused (for hot statements whose planning costs as much as running them). A name must
 * always go with the same SQL text.
 *
 * @internal
 */
export async function run<Row = Record<string, unknown>>(
  executor: Executor,
  query: SQL,
  name?: string,
): Promise<Row[]> {
  if (isRunner(executor)) {
    const { sql: text, params } = dialect.sqlToQuery(query);
    return declaredRows<Row>(await executor.runStatement(text, params));
  }
  if (isDrizzle(executor)) refuseUnadapted(executor);
  // A Drizzle executor that will not prepare runs the SQL object as it is.
  if (isDrizzle(executor) && !(name && preparer(executor))) return drizzleRows<Row>(() => executor.execute(query));
  const { sql: text, params } = dialect.sqlToQuery(query);
  return runText<Row>(executor, text, params, name);
}

function isDrizzle(executor: Executor): executor is DrizzleExecutor {
  return 'execute' in executor && typeof executor.execute === 'function';
}

/**
 * Refuses, before anything runs, a Drizzle executor over postgres.js passed as it is: its types
 * do not match Executor, but a cast or plain JavaScript gets it here, and its results have no
 * `rows` (the write would go through, then the call would fail). fromDrizzlePostgresJs adapts it.
 */
function refuseUnadapted(executor: DrizzleExecutor): void {
  const client = field(field(executor, 'session'), 'client');
  if (typeof client === 'function' && 'unsafe' in client) {
    throw new LeaseholdInputError('executor', [
      'executor: a Drizzle database or transaction over postgres.js; pass fromDrizzlePostgresJs(db) (docs/executors.md)',
    ]);
  }
}

function isRunner(executor: Executor): executor is StatementRunner {
  return 'runStatement' in executor && typeof executor.runStatement === 'function';
}

/** The Drizzle session that can prepare named statements, if this executor has one. */
function preparer(executor: DrizzleExecutor): DrizzleSession | null {
  const session = field(executor, 'session');
  return isDrizzleSession(session) ? session : null;
}

/** Drizzle's session is internal: what is checked is that it prepares (the one method used). */
function isDrizzleSession(value: unknown): value is DrizzleSession {
  return typeof field(value, 'prepareQuery') === 'function';
}

/**
 * The rows of a result as the caller declared them: the one assertion on a row's type in the
 * queue. Nothing checks PostgreSQL's result against the declaration, so each call site's row
 * interface says what its statement returns, as it arrives (PgTimestamp; bigint as text), and
 * its mapping converts (toDate, Number) and checks closed lists (oneOf).
 */
function declaredRows<Row>(rows: readonly unknown[]): Row[] {
  return rows as Row[];
}

async function drizzleRows<Row>(work: () => Promise<{ rows: unknown[] }>): Promise<Row[]> {
  try {
    return declaredRows<Row>((await work()).rows);
  } catch (error) {
    // Drizzle wraps the driver's error ("Failed query: …"); hand out pg's own DatabaseError
    // (code, constraint, detail) so callers see the same error whichever executor they use.
    const cause = field(error, 'cause');
    if (cause instanceof Error && 'code' in cause) throw cause;
    throw error;
  }
}

/**
 * `run` for a statement whose text is fixed, built once by the caller (the hottest paths,
 * where building the text from a template on every call shows in the profile).
 *
 * A named statement can vanish from the server while the driver still counts it as prepared
 * on that connection: `DEALLOCATE ALL` or `DISCARD ALL` (a pooler's reset), or a pooler
 * without prepared-statement support that moved the connection to another server process.
 * Every later use of the name on that connection would then fail (26000), and a Parse on a
 * server process that has the name from another client fails too (42P05). Either error comes
 * before the statement runs, so: the names move to a new generation (no connection has those
 * cached; each prepares them again on first use), and the statement runs again at once,
 * unprepared, when nothing of the caller's is lost by that (a pool or a Drizzle database over
 * one, or a pg client outside a transaction). Inside the caller's transaction the error has
 * aborted it; the caller retries it as any failed transaction. When names keep vanishing
 * (LOST_LIMIT times within LOST_WINDOW_MS, or MAX_GENERATIONS in the pool's life: each
 * generation leaves the old statements on connections that kept them), statements run
 * unprepared on that pool from then on, slower but working, with one process warning.
 *
 * Names and generations belong to the pool (its ConnectionPolicy). A pool made with
 * `preparedStatements: false` never names a statement: the setting for a pooler known to keep
 * none (PgBouncer in transaction mode), where the fallback above would otherwise pay a failed
 * statement per connection and generation before it gives up.
 */
export async function runText<Row = Record<string, unknown>>(
  executor: Executor,
  text: string,
  values: unknown[],
  name?: string,
): Promise<Row[]> {
  // A runner's client keeps its own statement policy: nothing is named, nothing to recover.
  if (isRunner(executor)) return declaredRows<Row>(await executor.runStatement(text, values));
  if (isDrizzle(executor)) refuseUnadapted(executor);
  const { names } = policyOf(executor);
  const generation = names.generation;
  const prepared = name ? names.current(name) : undefined;
  try {
    return await runOnce<Row>(executor, text, values, prepared);
  } catch (error) {
    if (!prepared || !isLostStatement(error)) throw error;
    names.lost(generation);
    if (!outsideTransaction(executor)) throw error;
    return runOnce<Row>(executor, text, values, undefined);
  }
}

async function runOnce<Row>(
  executor: DrizzleExecutor | PgExecutor,
  text: string,
  values: unknown[],
  name: string | undefined,
): Promise<Row[]> {
  if (isDrizzle(executor)) {
    const session = preparer(executor);
    if (name && session)
      return drizzleRows<Row>(() =>
        session.prepareQuery({ sql: text, params: values }, undefined, name, false).execute(),
      );
    return drizzleRows<Row>(() => executor.execute(sqlText(text, values)));
  }
  const result = name ? await executor.query({ name, text, values }) : await executor.query(text, values);
  return declaredRows<Row>(result.rows);
}

/** 26000: no prepared statement of that name; 42P05: one of that name exists already. */
function isLostStatement(error: unknown): boolean {
  const code = field(error, 'code');
  return code === '26000' || code === '42P05';
}

/** True when running the statement again loses nothing: no transaction of the caller's is open. */
function outsideTransaction(executor: Executor): boolean {
  if (autocommits(executor)) return true;
  return (
    'getTransactionStatus' in executor &&
    typeof executor.getTransactionStatus === 'function' &&
    executor.getTransactionStatus() === 'I'
  );
}

/** Names move on this many times within LOST_WINDOW_MS before statements stop being named. */
export const LOST_LIMIT = 5;
const LOST_WINDOW_MS = 60_000;
/** Generations in a pool's life before its statements stop being named. */
export const MAX_GENERATIONS = 50;

/** The names hot statements are prepared under on one pool's connections (see runText). */
export class StatementNames {
  generation = 0;
  private recentLosses: number[] = [];
  private unprepared: boolean;

  /** `prepared: false`: every statement runs unnamed, from the start. */
  constructor(options: { prepared?: boolean } = {}) {
    this.unprepared = options.prepared === false;
  }

  /** The name to prepare `base` under now, or undefined once statements run unprepared. */
  current(base: string): string | undefined {
    if (this.unprepared) return undefined;
    return this.generation === 0 ? base : `${base}_g${this.generation}`;
  }

  /**
   * A statement named in `generation` was lost. Calls that fail together (one DEALLOCATE, one
   * pooler reset, seen by several statements in flight) count once: only a loss in the current
   * generation moves the names on.
   */
  lost(generation: number): void {
    if (generation !== this.generation || this.unprepared) return;
    this.generation += 1;
    const now = Date.now();
    this.recentLosses = [...this.recentLosses.filter((at) => now - at < LOST_WINDOW_MS), now];
    if (this.recentLosses.length >= LOST_LIMIT || this.generation >= MAX_GENERATIONS) {
      this.unprepared = true;
      process.emitWarning(
        `Leasehold: the server lost a pool's prepared statements ${this.recentLosses.length} times within ${LOST_WINDOW_MS / 1000} s ` +
          `(${this.generation} times in all; a pooler without prepared-statement support, or DISCARD ALL after each transaction?); ` +
          "hot statements run unprepared on that pool from now on (createDb's preparedStatements: false says so from the start)",
        { code: 'LEASEHOLD_UNPREPARED' },
      );
    }
  }
}

/**
 * What Leasehold does on the connections of one pool: the names its hot statements are
 * prepared under (or none), and the settings every transaction Leasehold opens there starts
 * with. Made by createDb from its options.
 */
export interface ConnectionPolicy {
  readonly names: StatementNames;
  /**
   * Statements run right after BEGIN, in the same round trip (`SET LOCAL statement_timeout =
   * …; …`), or '' for none. Per transaction, because a transaction pooler keeps no session
   * state and refuses such settings as startup parameters.
   */
  readonly transactionSettings: string;
}

/**
 * Policies by what statements run on: a pool, a pool's client (each of its connections, so a
 * Drizzle transaction or a checked-out client finds its pool's policy), or any other executor
 * (given a default policy of its own on first use). Weak: nothing here outlives its pool.
 */
const policies = new WeakMap<object, ConnectionPolicy>();

/** Makes `policy` the policy of `pool` and of every connection it opens (createDb calls this). */
export function attachPolicy(pool: pg.Pool, policy: ConnectionPolicy): void {
  policies.set(pool, policy);
  pool.on('connect', (client) => policies.set(client, policy));
}

/**
 * The policy of what `executor` runs on. An executor createDb did not make (the caller's own
 * pool or client) gets the defaults: named statements with the lost-statement fallback, names
 * of its own, and no transaction settings (the caller's pool keeps the caller's settings).
 */
export function policyOf(executor: Executor): ConnectionPolicy {
  const client = field(field(executor, 'session'), 'client');
  const key: object = typeof client === 'object' && client !== null ? client : executor;
  let policy = policies.get(key);
  if (!policy) {
    policy = { names: new StatementNames(), transactionSettings: '' };
    policies.set(key, policy);
  }
  return policy;
}

/**
 * A fixed text with $n placeholders as a Drizzle SQL object (for executors without prepare, and EXPLAIN).
 *
 * @internal
 */
export function sqlText(text: string, values: unknown[]): SQL {
  const chunks: SQL[] = [];
  let last = 0;
  for (const match of text.matchAll(/\$(\d+)/g)) {
    chunks.push(
      drizzleSql.raw(text.slice(last, match.index)),
      drizzleSql`${drizzleSql.param(values[Number(match[1]) - 1])}`,
    );
    last = match.index + match[0].length;
  }
  chunks.push(drizzleSql.raw(text.slice(last)));
  return drizzleSql.join(chunks);
}

/**
 * The pool under `executor` when each of its statements commits by itself: a pool, or a Drizzle
 * database over a pool (not a transaction of one). Null for a client, a pool client or a
 * transaction, which may be inside the caller's longer transaction.
 */
export function ownPool(executor: Executor): pg.Pool | null {
  if (executor instanceof pg.Pool) return executor;
  const client = field(field(executor, 'session'), 'client');
  const isTransaction = typeof field(executor, 'rollback') === 'function';
  return !isTransaction && client instanceof pg.Pool ? client : null;
}

/** True when each statement on `executor` commits by itself (see ownPool), so its effects are visible moments after it returns. */
export function autocommits(executor: Executor): boolean {
  return ownPool(executor) !== null;
}

/**
 * What a `timestamptz` column arrives as: a Date from plain pg, PostgreSQL's text from Drizzle
 * (it turns pg's parser off: `2026-11-29 14:10:22.498759+00`), ISO text inside JSON
 * (`row_to_json`, `json_build_object`). Row interfaces declare it so; toDate converts.
 */
export type PgTimestamp = Date | string;

/**
 * A property of a value whose type does not declare it (a driver's internals, a thrown value's
 * `code`), or undefined when it is not an object that has it: read with checks, not asserted.
 */
export function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null && key in value ? Reflect.get(value, key) : undefined;
}

/** A timestamp as pg, Drizzle or JSON hands it out (PgTimestamp), as a Date. */
export function toDate(value: unknown): Date {
  if (value instanceof Date) return value;
  if (typeof value === 'string') {
    const fast = parseUtcTimestamp(value);
    if (fast !== null) return new Date(fast);
    const iso = value.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00');
    const date = new Date(iso);
    if (!Number.isNaN(date.getTime())) return date;
  }
  throw new Error(`Leasehold: expected a timestamp from PostgreSQL, got ${JSON.stringify(value)}`);
}

const digit = (text: string, at: number) => text.charCodeAt(at) - 48;
const digits = (text: string, from: number, count: number) => {
  let n = 0;
  for (let i = from; i < from + count; i++) {
    const d = digit(text, i);
    if (d < 0 || d > 9) return Number.NaN;
    n = n * 10 + d;
  }
  return n;
};

/**
 * Milliseconds of PostgreSQL's text form of a timestamptz in UTC (`2026-11-29 14:10:22.498759+00`,
 * fraction optional), or null for any other shape. The hot path: a claim returns six of these
 * per job, and Date's own parser costs ten times more.
 */
function parseUtcTimestamp(text: string): number | null {
  const n = text.length;
  if (
    n < 22 ||
    text.charCodeAt(10) !== 32 ||
    text.charCodeAt(n - 3) !== 43 ||
    text.charCodeAt(n - 2) !== 48 ||
    text.charCodeAt(n - 1) !== 48
  )
    return null;
  let ms = 0;
  if (n > 22) {
    if (text.charCodeAt(19) !== 46) return null;
    ms = digits(text, 20, Math.min(3, n - 23));
    for (let i = n - 23; i < 3; i++) ms *= 10;
  }
  const time = Date.UTC(
    digits(text, 0, 4),
    digits(text, 5, 2) - 1,
    digits(text, 8, 2),
    digits(text, 11, 2),
    digits(text, 14, 2),
    digits(text, 17, 2),
    ms,
  );
  return Number.isNaN(time) ? null : time;
}

export function toDateOrNull(value: unknown): Date | null {
  return value === null || value === undefined ? null : toDate(value);
}

export function toInt(value: unknown): number {
  return typeof value === 'number' ? value : Number(value);
}

/**
 * BEGIN … COMMIT on a client of the pool: a transaction and a connection of this call's own. The
 * client goes back unless its connection broke. The transaction starts with the pool's
 * transaction settings (its timeouts, SET LOCAL), sent with the BEGIN in one round trip.
 */
export async function inPoolTransaction<T>(pool: pg.Pool, work: (tx: Executor) => Promise<T>): Promise<T> {
  const { transactionSettings } = policyOf(pool);
  const begin = transactionSettings ? `BEGIN; ${transactionSettings}` : 'BEGIN';
  const client = await pool.connect();
  // A pool adds no error listener to a checked-out client: without one, a connection that dies
  // during the call (a server restart) would crash the process.
  let broken: Error | undefined;
  const onError = (error: Error) => (broken ??= error);
  client.on('error', onError);
  try {
    try {
      await client.query(begin);
    } catch (error) {
      broken ??= error instanceof Error ? error : new Error(String(error));
      throw error;
    }
    try {
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch((rollbackError: unknown) => {
        broken ??= rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
      });
      throw error;
    }
  } finally {
    client.off('error', onError);
    client.release(broken); // a broken connection is closed, a sound one reused
  }
}
