/**
 * Executors for clients other than Drizzle and pg: Kysely, postgres.js and Drizzle over
 * postgres.js, each made into a StatementRunner (executor.ts) that runs Leasehold's statements
 * on the caller's connection and transaction, so `enqueue(fromKysely(trx), …)` commits or rolls
 * back with `trx`.
 *
 * Neither library is imported, not even for its types: what is used of each is declared here
 * structurally, so a user without Kysely or postgres.js installed is unaffected, and the emitted
 * declarations name neither package.
 *
 * Invariants: an adapter adds no statement of its own (no BEGIN, savepoint or SET), names no
 * prepared statement, and hands back the client's own rows and errors (postgres.js's errors get
 * the `constraint` pg's have, nothing else changes).
 */
import { LeaseholdInputError } from './errors.ts';
import { field, type StatementRunner } from './executor.ts';

/** A compiled raw query as Kysely's `executeQuery` takes one (its public CompiledQuery shape). */
export interface KyselyRawQuery {
  readonly sql: string;
  readonly parameters: readonly unknown[];
  readonly query: {
    readonly kind: 'RawNode';
    readonly sqlFragments: readonly string[];
    readonly parameters: readonly [];
  };
  readonly queryId: { readonly queryId: string };
}

/** What fromKysely uses of a Kysely instance, Transaction or ControlledTransaction. */
export interface KyselyExecutor {
  withoutPlugins(): { executeQuery(query: KyselyRawQuery): Promise<{ rows: readonly unknown[] }> };
}

/**
 * A Kysely instance or transaction (over Kysely's PostgresDialect, which runs on pg) as an
 * executor. The statements run without the instance's plugins: a CamelCasePlugin would rename
 * the columns Leasehold reads. Kysely over another driver (kysely-postgres-js) is not supported:
 * use fromPostgresJs on that driver's `sql` instead.
 */
export function fromKysely(db: KyselyExecutor): StatementRunner {
  if (typeof field(db, 'withoutPlugins') !== 'function') {
    throw new LeaseholdInputError('fromKysely', ['db: expected a Kysely instance or transaction']);
  }
  const plain = db.withoutPlugins();
  return {
    async runStatement(text, values) {
      const query: KyselyRawQuery = {
        sql: text,
        parameters: values,
        query: { kind: 'RawNode', sqlFragments: [text], parameters: [] },
        queryId: { queryId: 'leasehold' },
      };
      return (await plain.executeQuery(query)).rows;
    },
  };
}

/**
 * What fromPostgresJs uses of a postgres.js `sql`: the instance, or the one `sql.begin` hands
 * out. `P` is postgres.js's Parameter, which `typed` makes and `unsafe` takes.
 */
export interface PostgresJsSql<P = unknown> {
  unsafe(text: string, values: (P | null)[]): PromiseLike<readonly unknown[]>;
  typed(value: string, oid: number): P;
  /** Present on the instance only (a transaction's `sql` has none). */
  readonly options?: {
    readonly transform?: {
      readonly column?: { readonly from?: unknown };
      readonly value?: { readonly from?: unknown };
      readonly row?: { readonly from?: unknown };
    };
  };
}

/**
 * PostgreSQL's `unknown` type. A parameter declared so is typed by the server from the
 * statement, as an unspecified one would be, but postgres.js then sends it as the text given
 * instead of passing it through the serializer of the type the server described. That matters:
 * postgres.js would JSON-encode the JSON text Leasehold sends for a jsonb parameter a second
 * time (the payload stored as a string), and it types a Date array as a single timestamptz.
 */
const UNKNOWN_OID = 705;

/**
 * A postgres.js `sql` (the instance, or the transaction's `sql` inside `sql.begin`) as an
 * executor. Statements go through `sql.unsafe` unnamed (its default), so the instance's
 * `prepare` setting and any pooler in front are unaffected; values are sent in node-postgres's
 * text form (pgText). Refused: an instance with a column, value or row transform (it renames or
 * changes the rows Leasehold reads). A transaction's `sql` carries no options to check: begin it
 * on an instance without such a transform.
 */
export function fromPostgresJs<P>(sql: PostgresJsSql<P>): StatementRunner {
  if (!isPostgresJsSql(sql)) {
    throw new LeaseholdInputError('fromPostgresJs', ['sql: expected a postgres.js sql instance or transaction']);
  }
  const transform = sql.options?.transform;
  const changed = (['column', 'value', 'row'] as const).filter((k) => typeof transform?.[k]?.from === 'function');
  if (changed.length > 0) {
    throw new LeaseholdInputError(
      'fromPostgresJs',
      changed.map(
        (k) =>
          `sql.options.transform.${k}: Leasehold reads its rows as PostgreSQL returns them; use an instance without a ${k} transform`,
      ),
    );
  }
  return {
    async runStatement(text, values) {
      const params = values.map((v) => (v === null || v === undefined ? null : sql.typed(pgText(v), UNKNOWN_OID)));
      try {
        return await sql.unsafe(text, params);
      } catch (error) {
        throw withPgConstraint(error);
      }
    },
  };
}

/**
 * A Drizzle database or transaction over postgres.js (`drizzle-orm/postgres-js`) as an executor:
 * fromPostgresJs on the postgres.js `sql` its session runs on, which inside
 * `db.transaction(async (tx) => …)` is that transaction's. (A Drizzle executor over pg needs no
 * adapter: pass it as it is.) Reads Drizzle's session, which Drizzle does not document: checked,
 * and refused with an error if it is not there.
 */
export function fromDrizzlePostgresJs(db: object): StatementRunner {
  const client = member(member(db, 'session'), 'client');
  if (!isPostgresJsSql(client)) {
    throw new LeaseholdInputError('fromDrizzlePostgresJs', [
      'db: expected a Drizzle database or transaction over postgres.js (for Drizzle over pg, pass it without an adapter)',
    ]);
  }
  return fromPostgresJs(client);
}

function isPostgresJsSql(value: unknown): value is PostgresJsSql {
  return typeof member(value, 'unsafe') === 'function' && typeof member(value, 'typed') === 'function';
}

/** A property of an object or function (postgres.js's `sql` is a function), read with checks. */
function member(value: unknown, key: string): unknown {
  const holds = typeof value === 'function' || (typeof value === 'object' && value !== null);
  return holds && key in value ? Reflect.get(value, key) : undefined;
}

/** postgres.js names the constraint `constraint_name`; pg and Leasehold's checks say `constraint`. */
function withPgConstraint(error: unknown): unknown {
  const name = field(error, 'constraint_name');
  if (typeof name === 'string' && field(error, 'constraint') === undefined && typeof error === 'object' && error) {
    Object.defineProperty(error, 'constraint', { value: name, configurable: true, enumerable: false, writable: true });
  }
  return error;
}

/**
 * A parameter value in PostgreSQL's text form, as node-postgres's prepareValue writes it (Dates
 * as ISO instants rather than pg's local-time form: the same instant). Arrays become array
 * literals with every element quoted, so the server parses them by the statement's cast.
 */
export function pgText(value: unknown): string {
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return arrayLiteral(value);
  if (value instanceof Uint8Array) return `\\x${Buffer.from(value).toString('hex')}`;
  if (typeof value === 'object' && value !== null) return JSON.stringify(value);
  return String(value);
}

function arrayLiteral(values: readonly unknown[]): string {
  const elements = values.map((v) => {
    if (v === null || v === undefined) return 'NULL';
    if (Array.isArray(v)) return arrayLiteral(v);
    return `"${pgText(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  });
  return `{${elements.join(',')}}`;
}
