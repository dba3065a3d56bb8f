/**
 * Handlers for the failure harness (`--handlers chaos/handlers.ts`):
 * - `chaos.work`: records its execution in the ledger, works 20–200 ms, writes the fenced sink;
 * - `chaos.limited`: the same, under a concurrency limit of LIMITED_MAX (the limits scenario);
 * - `chaos.rated`: the same, under a rate of RATED_MAX starts per RATED_PER_MS ms (rates);
 * - `chaos.poison`: kills its own worker process every time (a poison job);
 * - `chaos.deaf`: records its execution, and when its signal fired, and sleeps `ms` without
 *   looking at the signal (past its 250 ms timeout);
 * - `chaos.receipt`: records its execution, and runs one side effect under `receipt(…, key)`,
 *   the key shared by several jobs;
 * - `chaos.spin`: isolated in a thread, records its execution and then never yields: only its
 *   thread's termination at the timeout ends it (blocked-loop);
 * - `chaos.busy`: on the main thread, records its execution and computes for BUSY_MS without
 *   yielding, blocking its worker's heartbeats (blocked-loop).
 *
 * - `chaos.tick`: does nothing; the every-second schedule CRON_SCHEDULE enqueues it, declared
 *   (exported as `schedules`) only with CHAOS_CRON set, so other scenarios' workers tick nothing.
 *
 * With CHAOS_STOP_LOG set, a `chaos.work` handler whose signal fires appends a line (job,
 * attempt, pid, stop reason, Date.now()) to that file: a worker cut off from the database
 * cannot record it in the ledger (heartbeat-cut).
 */
import { appendFileSync } from 'node:fs';
import pg from 'pg';
import { z } from 'zod';
import { defineJob } from '../db/queue/job-contract.ts';
import { defineSchedule } from '../db/queue/schedules.ts';
import { defineHandler, type HandlerContext } from '../workers/handler.ts';
import { CRON_EACH, CRON_MISSED_AFTER_MS, CRON_SCHEDULE, LIMITED_MAX, RATED_MAX, RATED_PER_MS } from './checker.ts';

const tickJob = defineJob({ kind: 'chaos.tick', version: 1, queue: 'chaos', schema: z.strictObject({}) });

/** The cron scenario's schedule: a tick every second, each missed run's newest CRON_EACH run late. */
export const schedules =
  process.env.CHAOS_CRON === '1'
    ? [
        defineSchedule({
          name: CRON_SCHEDULE,
          job: tickJob,
          cron: '* * * * * *',
          payload: {},
          missed: { each: CRON_EACH },
          missedAfterMs: CRON_MISSED_AFTER_MS,
        }),
      ]
    : [];

let pool: pg.Pool | null = null;
function db(): pg.Pool {
  if (!pool) {
    pool = new pg.Pool({
      // CHAOS_LEDGER_URL: the ledger straight to the database while the worker's own
      // connections go through the harness's proxy (clock-skew cuts only the queue's).
      connectionString: process.env.CHAOS_LEDGER_URL ?? process.env.DATABASE_URL,
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

/** An execution's row in the ledger; its end is written by `ended()`. */
async function started(job: { id: string; leaseToken: string }, attempt: number): Promise<void> {
  await db().query('INSERT INTO chaos.effects (job_id, attempt, lease_token, pid) VALUES ($1, $2, $3, $4)', [
    job.id,
    attempt,
    job.leaseToken,
    process.pid,
  ]);
}
async function ended(job: { id: string; leaseToken: string }): Promise<void> {
  await db().query('UPDATE chaos.effects SET ended_at = clock_timestamp() WHERE lease_token = $1 AND job_id = $2', [
    job.leaseToken,
    job.id,
  ]);
}

/**
 * `chaos.work`'s execution: records it in the ledger, works `ms` (20–200 ms by default), writes
 * the fenced sink. `chaos.limited` runs it too, under a concurrency limit, and `chaos.rated`
 * under a rate.
 */
async function work({ job, attempt, payload, signal }: HandlerContext<{ ms?: number | undefined }>) {
  const stopLog = process.env.CHAOS_STOP_LOG;
  if (stopLog) {
    signal.addEventListener(
      'abort',
      () => {
        const reason = (signal.reason as { reason?: string } | undefined)?.reason ?? 'unknown';
        const line = { jobId: job.id, attempt, pid: process.pid, reason, at: Date.now() };
        appendFileSync(stopLog, `${JSON.stringify(line)}\n`);
      },
      { once: true },
    );
  }
  await db().query(
    'INSERT INTO chaos.effects (job_id, attempt, lease_token, pid, worker_clock) VALUES ($1, $2, $3, $4, $5)',
    [job.id, attempt, job.leaseToken, process.pid, new Date(Date.now())],
  );
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
}

const workSchema = z.object({ ms: z.int().min(0).max(60_000).optional() });

export const handlers = [
  defineHandler(tickJob, async () => {}),
  defineHandler({
    kind: 'chaos.work',
    versions: [1],
    schema: workSchema,
    timeoutMs: 120_000,
    handle: work,
  }),
  defineHandler({
    kind: 'chaos.limited',
    versions: [1],
    schema: workSchema,
    timeoutMs: 120_000,
    limit: { max: LIMITED_MAX },
    handle: work,
  }),
  defineHandler({
    kind: 'chaos.rated',
    versions: [1],
    schema: workSchema,
    timeoutMs: 120_000,
    limit: { rate: { max: RATED_MAX, perMs: RATED_PER_MS } },
    handle: work,
  }),
  defineHandler({
    kind: 'chaos.deaf',
    versions: [1],
    schema: z.object({ ms: z.int().min(0).max(60_000) }),
    timeoutMs: 250,
    async handle({ job, attempt, payload, signal }) {
      // Noted, never obeyed: the time is taken as the signal fires (the checker's abandon
      // clock), and written once the execution's row is there.
      let abortedAt: number | null = null;
      let rowWritten = false;
      const recordAbort = () =>
        db()
          .query(
            'UPDATE chaos.effects SET aborted_at = to_timestamp($1::float8 / 1000) WHERE lease_token = $2 AND job_id = $3',
            [abortedAt, job.leaseToken, job.id],
          )
          .catch(() => {});
      signal.addEventListener(
        'abort',
        () => {
          abortedAt = Date.now();
          if (rowWritten) void recordAbort();
        },
        { once: true },
      );
      await started(job, attempt);
      rowWritten = true;
      if (abortedAt !== null) await recordAbort();
      await new Promise((resolve) => setTimeout(resolve, payload.ms));
      await ended(job);
    },
  }),
  defineHandler({
    kind: 'chaos.receipt',
    versions: [1],
    schema: z.object({ key: z.string() }),
    timeoutMs: 30_000,
    async handle({ job, attempt, payload, receipt }) {
      await started(job, attempt);
      const result = await receipt(async () => {
        await db().query('INSERT INTO chaos.receipt_effects (key, job_id, attempt, pid) VALUES ($1, $2, $3, $4)', [
          payload.key,
          job.id,
          attempt,
          process.pid,
        ]);
        await new Promise((resolve) => setTimeout(resolve, 150)); // long enough for others to come
        return { by: job.id };
      }, payload.key);
      await ended(job);
      return result;
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
      await started(job, attempt);
      for (;;) {}
    },
  }),
  defineHandler({
    kind: 'chaos.busy',
    versions: [1],
    schema: z.unknown(),
    timeoutMs: 60_000,
    async handle({ job, attempt }) {
      await started(job, attempt);
      const end = performance.now() + BUSY_MS;
      while (performance.now() < end) {}
      await db().query('UPDATE chaos.effects SET ended_at = clock_timestamp() WHERE lease_token = $1 AND job_id = $2', [
        job.leaseToken,
        job.id,
      ]);
    },
  }),
];
