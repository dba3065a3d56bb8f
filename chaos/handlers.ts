/**
 * Handlers for the failure harness (`--handlers chaos/handlers.ts`):
 * - `chaos.work`: records its execution in the ledger, works 20–200 ms, writes the fenced sink;
 * - `chaos.poison`: kills its own worker process every time (a poison job);
 * - `chaos.spin`: isolated in a thread, records its execution and then never yields: only its
 *   thread's termination at the timeout ends it (blocked-loop);
 * - `chaos.busy`: on the main thread, records its execution and computes for BUSY_MS without
 *   yielding, blocking its worker's heartbeats (blocked-loop).
 */
import pg from 'pg';
import { z } from 'zod';
import { defineHandler } from '../workers/handler.ts';

let pool: pg.Pool | null = null;
function db(): pg.Pool {
  if (!pool) {
    pool = new pg.Pool({
      connectionString: process.env.DATABASE_URL,
      max: 4,
      application_name: 'leasehold-chaos-ledger',
    });
    pool.on('error', () => {}); // idle connections cut by a database restart; the next query reconnects
    pool.on('connect', (client) => client.on('error', () => {}));
  }
  return pool;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });

/** How long `chaos.busy` holds its worker's event loop. */
export const BUSY_MS = 5_100;
/** `chaos.spin`'s timeout: its thread is terminated then (above a thread's start, 1–2 s here with tsx). */
export const SPIN_TIMEOUT_MS = 5_000;

const recordExecution = (job: { id: string; leaseToken: string }, attempt: number) =>
  db().query('INSERT INTO chaos.effects (job_id, attempt, lease_token, pid) VALUES ($1, $2, $3, $4)', [
    job.id,
    attempt,
    job.leaseToken,
    process.pid,
  ]);

export const handlers = [
  defineHandler({
    kind: 'chaos.work',
    versions: [1],
    schema: z.object({ ms: z.int().min(0).max(60_000).optional() }),
    timeoutMs: 120_000,
    async handle({ job, attempt, payload, signal }) {
      await db().query('INSERT INTO chaos.effects (job_id, attempt, lease_token, pid) VALUES ($1, $2, $3, $4)', [
        job.id,
        attempt,
        job.leaseToken,
        process.pid,
      ]);
      await sleep(payload.ms ?? 20 + Math.floor(Math.random() * 180), signal);
      // The side effect: first write wins (keyed by the delivery key), stale attempts fenced.
      const written = await db().query(
        `INSERT INTO chaos.sink (job_id, highest_attempt) VALUES ($1, $2)
         ON CONFLICT (job_id) DO UPDATE SET
           replays = chaos.sink.replays + (excluded.highest_attempt >= chaos.sink.highest_attempt)::int,
           fenced = chaos.sink.fenced + (excluded.highest_attempt < chaos.sink.highest_attempt)::int,
           highest_attempt = greatest(chaos.sink.highest_attempt, excluded.highest_attempt)
         RETURNING (xmax = 0) AS applied`,
        [job.id, attempt],
      );
      await db().query('UPDATE chaos.effects SET ended_at = clock_timestamp() WHERE lease_token = $1 AND job_id = $2', [
        job.leaseToken,
        job.id,
      ]);
      return { applied: written.rows[0]?.applied === true };
    },
  }),
  defineHandler({
    kind: 'chaos.poison',
    versions: [1],
    schema: z.unknown(),
    timeoutMs: 60_000,
    async handle() {
      process.kill(process.pid, 'SIGKILL');
      await new Promise(() => {});
    },
  }),
  defineHandler({
    kind: 'chaos.spin',
    versions: [1],
    schema: z.unknown(),
    timeoutMs: SPIN_TIMEOUT_MS,
    isolated: 'thread',
    async handle({ job, attempt }) {
      await recordExecution(job, attempt);
      for (;;) {}
    },
  }),
  defineHandler({
    kind: 'chaos.busy',
    versions: [1],
    schema: z.unknown(),
    timeoutMs: 60_000,
    async handle({ job, attempt }) {
      await recordExecution(job, attempt);
      const end = performance.now() + BUSY_MS;
      while (performance.now() < end) {}
      await db().query('UPDATE chaos.effects SET ended_at = clock_timestamp() WHERE lease_token = $1 AND job_id = $2', [
        job.leaseToken,
        job.id,
      ]);
    },
  }),
];
