/**
 * The executor conformance suite: one set of behaviours (docs/executors.md) run against each
 * client an app may enqueue through, in that client's own transactions. Add a client to
 * `clients` and it gets every test.
 */
import { sql as drizzleSql } from 'drizzle-orm';
import { drizzle as drizzlePostgresJs } from 'drizzle-orm/postgres-js';
import { CamelCasePlugin, Kysely, PostgresDialect, sql as kyselySql, type Generated } from 'kysely';
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../../test/db.ts';
import type { Db } from '../client.ts';
import { uniqueQueue } from '../../test/factories.ts';
import { fromDrizzlePostgresJs, fromKysely, fromPostgresJs, pgText } from './adapters.ts';
import { claim } from './claim.ts';
import { enqueue, enqueueMany } from './enqueue.ts';
import { LeaseholdInputError } from './errors.ts';
import type { Executor } from './executor.ts';
import { completeIfLeaseHeld } from './settle.ts';

/** A transaction of the app's, as its client opened it. */
interface AppTransaction {
  /** The transaction as an executor for Leasehold. */
  executor: Executor;
  /** The app's own statement in the transaction, written with the client's own API. */
  insertNote(body: string): Promise<void>;
}

interface ClientUnderTest {
  /** The client's handle outside a transaction, as an executor. */
  plain: Executor;
  /** Runs `work` in a transaction of the client's own: commits if it resolves, rolls back if it throws. */
  transaction<T>(work: (tx: AppTransaction) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

interface AppDatabase {
  app_notes: { id: Generated<number>; body: string };
}

const INSERT_NOTE = 'INSERT INTO public.app_notes (body) VALUES ($1)';

/** BEGIN … COMMIT on a pg client, ROLLBACK when `work` throws. */
async function pgTransaction<T>(client: pg.ClientBase, work: (tx: AppTransaction) => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  try {
    const result = await work({
      executor: client,
      insertNote: async (body) => void (await client.query(INSERT_NOTE, [body])),
    });
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
}

const clients: Record<string, (url: string, db: Db) => Promise<ClientUnderTest>> = {
  'Drizzle (node-postgres)': async (_url, db) => ({
    plain: db,
    transaction: (work) =>
      db.transaction((tx) =>
        work({
          executor: tx,
          insertNote: async (body) =>
            void (await tx.execute(drizzleSql`INSERT INTO public.app_notes (body) VALUES (${body})`)),
        }),
      ),
    close: async () => {},
  }),
  'pg Client': async (url) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    return { plain: client, transaction: (work) => pgTransaction(client, work), close: () => client.end() };
  },
  'pg PoolClient': async (url) => {
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    const held = await pool.connect();
    return {
      plain: held,
      transaction: async (work) => {
        const client = await pool.connect();
        try {
          return await pgTransaction(client, work);
        } finally {
          client.release();
        }
      },
      close: async () => {
        held.release();
        await pool.end();
      },
    };
  },
  'Drizzle (postgres.js)': async (url) => {
    const client = postgres(url, { max: 2, onnotice: () => {} });
    const db = drizzlePostgresJs(client);
    return {
      plain: fromDrizzlePostgresJs(db),
      transaction: (work) =>
        db.transaction((tx) =>
          work({
            executor: fromDrizzlePostgresJs(tx),
            insertNote: async (body) =>
              void (await tx.execute(drizzleSql`INSERT INTO public.app_notes (body) VALUES (${body})`)),
          }),
        ),
      close: () => client.end(),
    };
  },
  Kysely: async (url) => {
    const db = new Kysely<AppDatabase>({
      dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 2 }) }),
    });
    return {
      plain: fromKysely(db),
      transaction: (work) =>
        db.transaction().execute((trx) =>
          work({
            executor: fromKysely(trx),
            insertNote: async (body) => void (await trx.insertInto('app_notes').values({ body }).execute()),
          }),
        ),
      close: () => db.destroy(),
    };
  },
  'postgres.js': async (url) => {
    const sql = postgres(url, { max: 2, onnotice: () => {} });
    return {
      plain: fromPostgresJs(sql),
      async transaction<T>(work: (tx: AppTransaction) => Promise<T>): Promise<T> {
        const result = await sql.begin((tx) =>
          work({
            executor: fromPostgresJs(tx),
            insertNote: async (body) => void (await tx`INSERT INTO public.app_notes ${tx({ body })}`),
          }),
        );
        // postgres.js types begin's result as T with its arrays' promises unwrapped: T here.
        return result as T;
      },
      close: () => sql.end(),
    };
  },
};

const t = useTestDatabase();

beforeAll(async () => {
  await t.pool.query('CREATE TABLE public.app_notes (id serial PRIMARY KEY, body text NOT NULL UNIQUE)');
});

class AppFailure extends Error {}

let counter = 0;
const unique = (label: string) => `${label}-${process.pid}-${++counter}`;

async function noteExists(body: string): Promise<boolean> {
  const { rows } = await t.pool.query('SELECT 1 FROM public.app_notes WHERE body = $1', [body]);
  return rows.length === 1;
}

async function jobsWithKey(key: string): Promise<{ id: string; payload: unknown }[]> {
  const { rows } = await t.pool.query<{ id: string; payload: unknown }>(
    'SELECT id, payload FROM leasehold.jobs WHERE idempotency_key = $1 ORDER BY id',
    [key],
  );
  return rows;
}

for (const [name, open] of Object.entries(clients)) {
  describe(`enqueue through ${name}`, () => {
    let client: ClientUnderTest;
    beforeAll(async () => {
      client = await open(t.url, t.db);
    });
    afterAll(async () => {
      await client?.close();
    });

    it("commits the job with the app's row when the app's transaction commits", async () => {
      const note = unique('commit');
      const runAt = new Date('2031-05-06T07:08:09.123Z');
      const payload = { orderId: 42, lines: ['a', 'b"c'], nested: { ok: true } };
      const result = await client.transaction(async (tx) => {
        await tx.insertNote(note);
        return enqueue(tx.executor, { queue: uniqueQueue('adapters'), kind: 'receipt', payload, runAt });
      });
      expect(result.created).toBe(true);
      expect(result.job).toMatchObject({ state: 'ready', payload, runAt });
      expect(result.job?.createdAt).toBeInstanceOf(Date);
      const { rows } = await t.pool.query(
        'SELECT jsonb_typeof(payload) AS type, payload, run_at FROM leasehold.jobs WHERE id = $1',
        [result.id],
      );
      // An object, not a JSON string holding one: the payload's text went in as jsonb once.
      expect(rows).toEqual([{ type: 'object', payload, run_at: runAt }]);
      expect(await noteExists(note)).toBe(true);
    });

    it("leaves neither the job nor the app's row, nor the key taken, when the app's transaction rolls back", async () => {
      const note = unique('rollback');
      const key = unique('rollback-key');
      let enqueuedId: string | undefined;
      await expect(
        client.transaction(async (tx) => {
          await tx.insertNote(note);
          enqueuedId = (await enqueue(tx.executor, { kind: 'receipt', payload: { n: 1 }, idempotencyKey: key })).id;
          throw new AppFailure('the app changed its mind');
        }),
      ).rejects.toBeInstanceOf(AppFailure);
      expect(enqueuedId).toBeDefined();
      const { rows } = await t.pool.query('SELECT 1 FROM leasehold.jobs WHERE id = $1', [enqueuedId]);
      expect(rows).toEqual([]);
      expect(await noteExists(note)).toBe(false);
      // The key went with the rollback: the next enqueue of it creates a job.
      const again = await enqueue(client.plain, { kind: 'receipt', payload: { n: 2 }, idempotencyKey: key });
      expect(again.created).toBe(true);
      expect(await jobsWithKey(key)).toEqual([{ id: again.id, payload: { n: 2 } }]);
    });

    it("reports a duplicate idempotency key without aborting the app's transaction, and the commit keeps both rows", async () => {
      const note = unique('duplicate');
      const committedKey = unique('committed-key');
      const localKey = unique('local-key');
      const first = await enqueue(client.plain, {
        kind: 'receipt',
        payload: { first: true },
        idempotencyKey: committedKey,
      });
      const outcome = await client.transaction(async (tx) => {
        const againCommitted = await enqueue(tx.executor, {
          kind: 'receipt',
          payload: { first: false },
          idempotencyKey: committedKey,
        });
        const local = await enqueue(tx.executor, { kind: 'receipt', payload: { local: 1 }, idempotencyKey: localKey });
        const againLocal = await enqueue(tx.executor, {
          kind: 'receipt',
          payload: { local: 2 },
          idempotencyKey: localKey,
        });
        // The app's next statement: it fails if either duplicate had aborted the transaction.
        await tx.insertNote(note);
        return { againCommitted, local, againLocal };
      });
      expect(outcome.againCommitted).toMatchObject({ id: first.id, created: false, job: { payload: { first: true } } });
      expect(outcome.local.created).toBe(true);
      expect(outcome.againLocal).toMatchObject({
        id: outcome.local.id,
        created: false,
        job: { payload: { local: 1 } },
      });
      expect(await noteExists(note)).toBe(true);
      expect(await jobsWithKey(committedKey)).toEqual([{ id: first.id, payload: { first: true } }]);
      expect(await jobsWithKey(localKey)).toEqual([{ id: outcome.local.id, payload: { local: 1 } }]);
    });

    it("binds enqueueMany's arrays (run times, priorities, keys with a repeat) and commits the jobs with the app's row", async () => {
      const note = unique('many');
      const queue = uniqueQueue('adapters-many');
      const [k1, k2] = [unique('many-key'), unique('many-key')];
      const runAts = [
        new Date('2030-01-01T00:00:00.001Z'),
        new Date('2030-01-02T00:00:00.002Z'),
        new Date('2030-01-03T00:00:00.003Z'),
      ];
      const results = await client.transaction(async (tx) => {
        const done = await enqueueMany(tx.executor, [
          { queue, kind: 'a', payload: { i: 0 }, idempotencyKey: k1, runAt: runAts[0], priority: 0 },
          {
            queue,
            kind: 'b',
            payload: { i: 1, text: 'quote " and \\ backslash' },
            idempotencyKey: k2,
            runAt: runAts[1],
            priority: 3,
          },
          { queue, kind: 'a', payload: { i: 2 }, idempotencyKey: k1, runAt: runAts[2], priority: 5 },
          { queue, kind: 'c', payload: [1, 2], runAt: runAts[2], priority: 1, traceId: 'trace-1' },
        ]);
        await tx.insertNote(note);
        return done;
      });
      expect(results.map((r) => r.created)).toEqual([true, true, false, true]);
      expect(results[2]!.id).toBe(results[0]!.id);
      const { rows } = await t.pool.query(
        'SELECT id, kind, payload, run_at, priority, trace_id FROM leasehold.jobs WHERE queue = $1 ORDER BY run_at, id',
        [queue],
      );
      expect(rows).toEqual([
        { id: results[0]!.id, kind: 'a', payload: { i: 0 }, run_at: runAts[0], priority: 0, trace_id: null },
        {
          id: results[1]!.id,
          kind: 'b',
          payload: { i: 1, text: 'quote " and \\ backslash' },
          run_at: runAts[1],
          priority: 3,
          trace_id: null,
        },
        { id: results[3]!.id, kind: 'c', payload: [1, 2], run_at: runAts[2], priority: 1, trace_id: 'trace-1' },
      ]);
      expect(await noteExists(note)).toBe(true);
    });

    it('claims and completes a job through the client, its instants as Dates', async () => {
      const queue = uniqueQueue('adapters-claim');
      const { id } = await enqueue(client.plain, { queue, kind: 'receipt', payload: { n: 7 } });
      const [job] = await claim(client.plain, { queues: [queue], workerId: 'adapter-worker' });
      expect(job).toMatchObject({ id, state: 'running', attempt: 1, payload: { n: 7 }, workerId: 'adapter-worker' });
      expect(job!.leaseUntil.getTime()).toBeGreaterThan(job!.startedAt!.getTime());
      expect(job!.runAt).toBeInstanceOf(Date);
      expect(await completeIfLeaseHeld(client.plain, job!)).toEqual({ applied: true });
      expect(await claim(client.plain, { queues: [queue], workerId: 'adapter-worker' })).toEqual([]);
      const { rows } = await t.pool.query('SELECT state FROM leasehold.jobs WHERE id = $1', [id]);
      expect(rows).toEqual([{ state: 'done' }]);
    });

    it('refuses a reused job id with a LeaseholdInputError naming the id (PostgreSQL aborts that transaction)', async () => {
      const { id } = await enqueue(client.plain, { kind: 'receipt', payload: {} });
      const note = unique('reused-id');
      const attempt = client.transaction(async (tx) => {
        await tx.insertNote(note);
        await enqueue(tx.executor, { id, kind: 'receipt', payload: { again: true } });
      });
      await expect(attempt).rejects.toBeInstanceOf(LeaseholdInputError);
      await expect(attempt).rejects.toThrow(/id: a job with this id already exists/);
      expect(await noteExists(note)).toBe(false);
      const { rows } = await t.pool.query('SELECT payload FROM leasehold.jobs WHERE id = $1', [id]);
      expect(rows).toEqual([{ payload: {} }]);
    });
  });
}

describe('fromKysely', () => {
  it("runs Leasehold's statements without the instance's plugins (a CamelCasePlugin would rename job_id)", async () => {
    const db = new Kysely<AppDatabase>({
      dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: t.url, max: 1 }) }),
      plugins: [new CamelCasePlugin()],
    });
    try {
      const key = unique('camel-key');
      const first = await enqueue(fromKysely(db), { kind: 'receipt', payload: { a: 1 }, idempotencyKey: key });
      const again = await enqueue(fromKysely(db), { kind: 'receipt', payload: { a: 2 }, idempotencyKey: key });
      expect(again).toMatchObject({ id: first.id, created: false, job: { idempotencyKey: key } });
      // The instance's own queries keep their plugin.
      expect((await kyselySql<{ oneTwo: number }>`SELECT 1 AS one_two`.execute(db)).rows).toEqual([{ oneTwo: 1 }]);
    } finally {
      await db.destroy();
    }
  });

  it('enqueues in a controlled transaction (startTransaction): commit keeps the job, rollback leaves none', async () => {
    const db = new Kysely<AppDatabase>({
      dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: t.url, max: 1 }) }),
    });
    try {
      const kept = await db.startTransaction().execute();
      const { id: keptId } = await enqueue(fromKysely(kept), { kind: 'receipt', payload: {} });
      await kept.commit().execute();
      const dropped = await db.startTransaction().execute();
      const { id: droppedId } = await enqueue(fromKysely(dropped), { kind: 'receipt', payload: {} });
      await dropped.rollback().execute();
      const { rows } = await t.pool.query('SELECT id FROM leasehold.jobs WHERE id = ANY($1::uuid[])', [
        [keptId, droppedId],
      ]);
      expect(rows).toEqual([{ id: keptId }]);
    } finally {
      await db.destroy();
    }
  });

  it('refuses a value that is not a Kysely instance, naming the argument', () => {
    expect(() => fromKysely({} as never)).toThrow(LeaseholdInputError);
    expect(() => fromKysely({} as never)).toThrow(/fromKysely: invalid input: db: expected a Kysely instance/);
  });
});

describe('fromPostgresJs', () => {
  it('refuses an instance whose column transform would rename the columns Leasehold reads, naming the setting', async () => {
    const sql = postgres(t.url, { max: 1, transform: postgres.camel });
    try {
      expect(() => fromPostgresJs(sql)).toThrow(LeaseholdInputError);
      expect(() => fromPostgresJs(sql)).toThrow(/sql\.options\.transform\.column/);
    } finally {
      await sql.end();
    }
  });

  it('refuses a value that is not a postgres.js sql, naming the argument', () => {
    expect(() => fromPostgresJs({} as never)).toThrow(/fromPostgresJs: invalid input: sql: expected a postgres.js sql/);
  });

  it("leaves the instance's own prepared statements alone: Leasehold's run unnamed", async () => {
    const sql = postgres(t.url, { max: 1, onnotice: () => {} });
    try {
      const queue = uniqueQueue('adapters-unnamed');
      await enqueue(fromPostgresJs(sql), { queue, kind: 'receipt', payload: {} });
      await claim(fromPostgresJs(sql), { queues: [queue], workerId: 'w' });
      // The app's tagged query is prepared as postgres.js does by default; none of Leasehold's is.
      await sql`SELECT ${1}::int AS one`;
      const statements = await sql<{ statement: string }[]>`SELECT statement FROM pg_prepared_statements`;
      const texts = statements.map((s) => s.statement);
      expect(texts).toContain('SELECT $1::int AS one');
      expect(texts.filter((text) => text.includes('leasehold.'))).toEqual([]);
    } finally {
      await sql.end();
    }
  });
});

describe('fromDrizzlePostgresJs', () => {
  it('is named in the error when a Drizzle database over postgres.js comes without it, and nothing is written', async () => {
    const client = postgres(t.url, { max: 1, onnotice: () => {} });
    try {
      const db = drizzlePostgresJs(client) as unknown as Executor; // as plain JavaScript would pass it
      const queue = uniqueQueue('adapters-unadapted');
      await expect(enqueue(db, { queue, kind: 'receipt', payload: {} })).rejects.toThrow(
        /executor: a Drizzle database or transaction over postgres.js; pass fromDrizzlePostgresJs\(db\)/,
      );
      await expect(enqueue(db, { queue, kind: 'receipt', payload: {}, idempotencyKey: unique('k') })).rejects.toThrow(
        LeaseholdInputError,
      );
      const { rows } = await t.pool.query('SELECT count(*)::int AS n FROM leasehold.jobs WHERE queue = $1', [queue]);
      expect(rows).toEqual([{ n: 0 }]);
    } finally {
      await client.end();
    }
  });

  it('refuses a Drizzle database over pg (which needs no adapter), naming the argument', () => {
    expect(() => fromDrizzlePostgresJs(t.db)).toThrow(
      /fromDrizzlePostgresJs: invalid input: db: expected a Drizzle database or transaction over postgres.js/,
    );
  });
});

describe('pgText', () => {
  it("writes values in PostgreSQL's text form, quoting every array element and escaping quotes and backslashes", () => {
    expect(pgText(new Date('2030-01-01T00:00:00.5Z'))).toBe('2030-01-01T00:00:00.500Z');
    expect(pgText(['a', null, 'b"c\\d', 'NULL'])).toBe('{"a",NULL,"b\\"c\\\\d","NULL"}');
    expect(pgText([new Date(0), 1, true])).toBe('{"1970-01-01T00:00:00.000Z","1","true"}');
    expect(
      pgText([
        [1, 2],
        [3, null],
      ]),
    ).toBe('{{"1","2"},{"3",NULL}}');
    expect(pgText({ a: 1 })).toBe('{"a":1}');
    expect(pgText(false)).toBe('false');
  });
});
