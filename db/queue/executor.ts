/**
 * What the queue functions run their SQL on: a Drizzle database or transaction, or a plain
 * `pg` pool, pool client or client. Passing the caller's transaction is how a job commits or
 * rolls back together with the business write that asked for it.
 */
import type { SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import type pg from 'pg';

interface DrizzleExecutor {
  execute(query: SQL): Promise<{ rows: unknown[]; rowCount?: number | null }>;
}
type PgExecutor = Pick<pg.Pool | pg.PoolClient | pg.Client, 'query'>;

export type Executor = DrizzleExecutor | PgExecutor;

const dialect = new PgDialect();

/** Runs one statement and returns its rows. */
export async function run<Row = Record<string, unknown>>(executor: Executor, query: SQL): Promise<Row[]> {
  if ('execute' in executor && typeof executor.execute === 'function') {
    try {
      const result = await executor.execute(query);
      return result.rows as Row[];
    } catch (error) {
      // Drizzle wraps the driver's error ("Failed query: …"); hand out pg's own DatabaseError
      // (code, constraint, detail) so callers see the same error whichever executor they use.
      const cause = (error as { cause?: unknown }).cause;
      if (cause instanceof Error && 'code' in cause) throw cause;
      throw error;
    }
  }
  const { sql: text, params } = dialect.sqlToQuery(query);
  const result = await (executor as PgExecutor).query(text, params as unknown[]);
  return result.rows as Row[];
}

/**
 * Timestamps arrive as Date (plain pg) or as PostgreSQL text (Drizzle turns pg's parser off):
 * `2026-11-29 14:10:22.498759+00`. Both become a Date.
 */
export function toDate(value: unknown): Date {
  if (value instanceof Date) return value;
  if (typeof value === 'string') {
    const iso = value.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00');
    const date = new Date(iso);
    if (!Number.isNaN(date.getTime())) return date;
  }
  throw new Error(`Leasehold: expected a timestamp from PostgreSQL, got ${JSON.stringify(value)}`);
}

export function toDateOrNull(value: unknown): Date | null {
  return value === null || value === undefined ? null : toDate(value);
}

export function toInt(value: unknown): number {
  return typeof value === 'number' ? value : Number(value);
}
