/**
 * Type tests (vitest --typecheck): Executor is declared by shape (executor.ts), with nothing of
 * drizzle-orm's in it, and still takes what it took when it named Drizzle's types: a Drizzle
 * database over pg, with or without a schema, and its transactions; pg's pool, pool client and
 * client; a StatementRunner. Drizzle over postgres.js as it is stays a type error (its results
 * have no `rows`: docs/executors.md, fromDrizzlePostgresJs).
 */
import { drizzle as drizzlePg, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import type { PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import type pg from 'pg';
import { describe, expectTypeOf, it } from 'vitest';
import type * as schema from '../schema.ts';
import type { DrizzleDatabase, Executor, StatementRunner } from './executor.ts';

describe('Executor', () => {
  it('takes a Drizzle database over pg and its transactions', () => {
    expectTypeOf<NodePgDatabase>().toExtend<Executor>();
    expectTypeOf<NodePgDatabase<typeof schema>>().toExtend<Executor>();
    expectTypeOf<ReturnType<typeof drizzlePg>>().toExtend<Executor>();
    type Transaction = Parameters<Parameters<NodePgDatabase<typeof schema>['transaction']>[0]>[0];
    expectTypeOf<Transaction>().toExtend<Executor>();
  });

  it('takes, as DrizzleDatabase (the testing kit’s TestDatabase.db), a Drizzle database and the transactions it opens', () => {
    expectTypeOf<NodePgDatabase<typeof schema>>().toExtend<DrizzleDatabase>();
    type Transaction = Parameters<Parameters<DrizzleDatabase['transaction']>[0]>[0];
    expectTypeOf<Transaction>().toExtend<Executor>();
  });

  it('takes pg’s pool, pool client and client, and a StatementRunner', () => {
    expectTypeOf<pg.Pool>().toExtend<Executor>();
    expectTypeOf<pg.PoolClient>().toExtend<Executor>();
    expectTypeOf<pg.Client>().toExtend<Executor>();
    expectTypeOf<StatementRunner>().toExtend<Executor>();
  });

  it('refuses Drizzle over postgres.js passed as it is', () => {
    expectTypeOf<PostgresJsDatabase>().not.toExtend<Executor>();
  });
});
