/**
 * The ceiling of this design on this machine: a bare SQL queue with no library around it. One
 * CTE claims 500 rows `FOR UPDATE SKIP LOCKED` under one lease token, handlers are no-ops, and
 * one token-checked UPDATE acknowledges the batch; done rows are kept. No history, no retries,
 * no reaper, no validation.
 */
import { randomUUID } from 'node:crypto';
import { benchPool, withClient } from './db.ts';
import { QUEUE, type BenchSystem } from './types.ts';

const LOOPS_PER_PROCESS = 2;
const BATCH = 500;

export const bareSql: BenchSystem = {
  name: 'bare-sql',
  settings: {
    enqueue: 'INSERT one row (plus pg_notify when wake-ups are on)',
    drain: `${LOOPS_PER_PROCESS} claim loops per process, CTE claim of ${BATCH}, one token per claim, batch ack by id + token, done rows kept`,
    listen: 'n/a',
    poll: 'n/a',
  },
  unsupported: {
    listen: 'not measured: the ceiling is for throughput',
    poll: 'not measured: the ceiling is for throughput',
    hold: 'not measured: the ceiling is for throughput',
  },

  async install(url) {
    await withClient(url, (client) =>
      client.query(`
      CREATE TABLE bare_jobs (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        queue text NOT NULL,
        payload jsonb NOT NULL,
        state text NOT NULL DEFAULT 'ready',
        run_at timestamptz NOT NULL DEFAULT now(),
        attempts int NOT NULL DEFAULT 0,
        lease_token uuid,
        finished_at timestamptz
      );
      CREATE INDEX bare_jobs_ready ON bare_jobs (queue, run_at, id) WHERE state = 'ready';`),
    );
  },

  async enqueuer(url, connections, wake) {
    const pool = benchPool(url, connections);
    const text = wake
      ? `WITH i AS (INSERT INTO bare_jobs (queue, payload) VALUES ($1, $2) RETURNING queue) SELECT pg_notify('bare', queue) FROM i`
      : 'INSERT INTO bare_jobs (queue, payload) VALUES ($1, $2)';
    return {
      send: async (seq) => {
        await pool.query(text, [QUEUE, { seq }]);
      },
      sendMany: async (seqs) => {
        await pool.query(
          wake
            ? `WITH i AS (INSERT INTO bare_jobs (queue, payload) SELECT $1, p FROM unnest($2::jsonb[]) p RETURNING queue) SELECT pg_notify('bare', queue) FROM (SELECT DISTINCT queue FROM i) q`
            : 'INSERT INTO bare_jobs (queue, payload) SELECT $1, p FROM unnest($2::jsonb[]) p',
          [QUEUE, seqs.map((seq) => JSON.stringify({ seq }))],
        );
      },
      close: () => pool.end(),
    };
  },

  async enqueueBulk(url, seqs) {
    const payloads = seqs.map((seq) => JSON.stringify({ seq }));
    await withClient(url, (client) =>
      client.query('INSERT INTO bare_jobs (queue, payload) SELECT $1, p FROM unnest($2::jsonb[]) p', [QUEUE, payloads]),
    );
  },

  async retain(url) {
    await withClient(url, (client) => client.query(`DELETE FROM bare_jobs WHERE state = 'done'`));
  },

  storedSql: `SELECT count(*)::int AS n FROM bare_jobs`,

  unsettledSql: `SELECT count(*)::int AS n FROM bare_jobs WHERE state IN ('ready', 'running')`,

  async startWorker(url, _mode, hooks) {
    const pool = benchPool(url, LOOPS_PER_PROCESS);
    let stopping = false;
    async function loop() {
      while (!stopping) {
        const token = randomUUID();
        const { rows } = await pool.query<{ id: string; payload: { seq: number } }>(
          `WITH c AS (SELECT id FROM bare_jobs WHERE state = 'ready' AND queue = $1 AND run_at <= now()
                      ORDER BY run_at, id LIMIT ${BATCH} FOR UPDATE SKIP LOCKED)
           UPDATE bare_jobs j SET state = 'running', attempts = j.attempts + 1, lease_token = $2
           FROM c WHERE j.id = c.id RETURNING j.id, j.payload`,
          [QUEUE, token],
        );
        if (rows.length === 0) {
          await new Promise((r) => setTimeout(r, 50));
          continue;
        }
        for (const row of rows) hooks.onStart(row.payload.seq);
        hooks.onHandled(rows.length);
        await pool.query(
          `UPDATE bare_jobs SET state = 'done', lease_token = NULL, finished_at = now()
           WHERE id = ANY($1::bigint[]) AND lease_token = $2 AND state = 'running'`,
          [rows.map((r) => r.id), token],
        );
      }
    }
    const loops = Array.from({ length: LOOPS_PER_PROCESS }, () => loop());
    return {
      stop: async () => {
        stopping = true;
        await Promise.all(loops);
        await pool.end();
      },
    };
  },
};
