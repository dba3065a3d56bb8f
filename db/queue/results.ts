/**
 * Results, progress and waiting (docs/jobs.md, "Results, progress and waiting"). A handler's
 * return value is stored with the acknowledgement that completes its attempt
 * (transitions/settle.ts, completeManyText), in `job_results`; its progress reports go to
 * `job_progress`, coalesced by the worker to one write a second; `waitForJob` LISTENs for the end
 * of a job enqueued `awaitable` instead of polling. None of it writes a job's state.
 */
import type pg from 'pg';
import { z } from 'zod';
import { LeaseholdInputError } from './errors.ts';
import { ownPool, runText, toDate, type Executor, type PgTimestamp } from './executor.ts';
import { mapJob, producerJobColumns, type Job, type JobColumnsRow, type LeaseRef } from './job.ts';
import { JOB_ENDED_CHANNEL, leaseHeld } from './transitions.ts';
import { encodePayload, parseInput, uuidSchema } from './validate.ts';

/** A result's cap when its handler gives none (`resultMaxBytes`): 64 KiB of JSON. */
export const DEFAULT_RESULT_MAX_BYTES = 64 * 1024;
/** The most a handler may allow: 256 KiB, a payload's own cap. */
export const MAX_RESULT_BYTES = 256 * 1024;
/** Longest progress message kept; a longer one is cut to this many characters, ending in `…`. */
export const MAX_PROGRESS_MESSAGE = 200;
/** At most one progress write a second per job: reports in between are coalesced into the next. */
export const PROGRESS_EVERY_MS = 1000;

/** A result as the acknowledgement stores it: its JSON text, or null with the marker saying why. */
export interface StorableResult {
  json: string | null;
  marker: string | null;
  bytes: number;
}

/**
 * What a handler returned, made storable: plain JSON within `maxBytes` is kept; anything else
 * (a function, a Date, a cycle, NaN, U+0000, too large) becomes a marker saying why, and the
 * attempt still completes. `undefined` (returned nothing) stores nothing.
 */
export function storableResult(value: unknown, maxBytes = DEFAULT_RESULT_MAX_BYTES): StorableResult | null {
  if (value === undefined) return null;
  const encoded = encodePayload(value);
  if ('problems' in encoded) {
    const why = encoded.problems.map((p) => p.replace(/^payload/, 'result')).join('; ');
    return { json: null, marker: `not stored: not plain JSON (${why.slice(0, 400)})`, bytes: 0 };
  }
  const bytes = Buffer.byteLength(encoded.text, 'utf8');
  if (bytes > maxBytes) {
    return { json: null, marker: `not stored: ${bytes} bytes of JSON, more than the kind's cap of ${maxBytes}`, bytes };
  }
  return { json: encoded.text, marker: null, bytes };
}

/** A job's stored result, as read. */
export interface JobResult {
  /** The attempt that completed the job. */
  attempt: number;
  /** The value (null when it was not kept: `marker` says why). */
  value: unknown;
  marker: string | null;
  bytes: number;
  storedAt: Date;
}

/** A job's latest progress report. */
export interface JobProgress {
  attempt: number;
  /** From 0 to 1. */
  fraction: number;
  message: string | null;
  updatedAt: Date;
}

interface ResultColumns {
  r_attempt: number | null;
  r_result: unknown;
  r_marker: string | null;
  r_bytes: number | null;
  r_stored_at: PgTimestamp | null;
  p_attempt: number | null;
  p_fraction: number | null;
  p_message: string | null;
  p_updated_at: PgTimestamp | null;
}

const readResult = (r: ResultColumns): JobResult | null =>
  r.r_attempt === null
    ? null
    : {
        attempt: r.r_attempt,
        value: r.r_result,
        marker: r.r_marker,
        bytes: r.r_bytes ?? 0,
        storedAt: toDate(r.r_stored_at),
      };

const readProgress = (r: ResultColumns): JobProgress | null =>
  r.p_attempt === null || r.p_fraction === null
    ? null
    : { attempt: r.p_attempt, fraction: r.p_fraction, message: r.p_message, updatedAt: toDate(r.p_updated_at) };

/** A job with what its handler returned and how far it got. */
export interface JobWithResult extends Job {
  result: JobResult | null;
  progress: JobProgress | null;
}

const JOIN_RESULTS = `r.attempt AS r_attempt, r.result AS r_result, r.marker AS r_marker, r.bytes AS r_bytes, r.stored_at AS r_stored_at,
       p.attempt AS p_attempt, p.fraction AS p_fraction, p.message AS p_message, p.updated_at AS p_updated_at
  FROM leasehold.jobs j
  LEFT JOIN leasehold.job_results r ON r.job_id = j.id
  LEFT JOIN leasehold.job_progress p ON p.job_id = j.id`;

const GET_JOB = `SELECT ${producerJobColumns('j')}, ${JOIN_RESULTS} WHERE j.id = $1::uuid`;

/** The job `id` with its result and progress, or null when there is none. */
export async function getJob(executor: Executor, id: string): Promise<JobWithResult | null> {
  parseInput('getJob', z.strictObject({ id: uuidSchema }), { id });
  const rows = await runText<JobColumnsRow & ResultColumns>(executor, GET_JOB, [id], 'leasehold_get_job');
  const row = rows[0];
  return row ? { ...mapJob(row), result: readResult(row), progress: readProgress(row) } : null;
}

/**
 * Records a progress report of the attempt holding `lease` (nothing when it no longer does).
 * The worker calls it at most once a second per job (workers/progress.ts).
 *
 * @internal
 */
export async function writeProgress(
  executor: Executor,
  lease: LeaseRef,
  fraction: number,
  message: string | null,
): Promise<boolean> {
  const rows = await runText<{ job_id: string }>(
    executor,
    `INSERT INTO leasehold.job_progress AS p (job_id, attempt, fraction, message, updated_at)
     SELECT j.id, j.attempts, $3::real, $4::text, statement_timestamp() FROM leasehold.jobs j
     WHERE j.id = $1::uuid AND ${leaseHeld('j', '$2::uuid')}
     ON CONFLICT (job_id) DO UPDATE SET attempt = excluded.attempt, fraction = excluded.fraction,
                                        message = excluded.message, updated_at = excluded.updated_at
     RETURNING p.job_id`,
    [lease.id, lease.leaseToken, fraction, message],
    'leasehold_progress',
  );
  return rows.length === 1;
}

/** A progress report checked: a fraction from 0 to 1 (else refused), a message cut to 200 characters. */
export function progressInput(fraction: unknown, message?: unknown): { fraction: number; message: string | null } {
  if (typeof fraction !== 'number' || !(fraction >= 0 && fraction <= 1)) {
    throw new LeaseholdInputError('progress', [`fraction: expected a number from 0 to 1, not ${String(fraction)}`]);
  }
  if (message !== undefined && message !== null && typeof message !== 'string') {
    throw new LeaseholdInputError('progress', ['message: expected a string']);
  }
  const text = typeof message === 'string' ? message.replaceAll('\u0000', '') : null;
  return {
    fraction,
    message: text !== null && text.length > MAX_PROGRESS_MESSAGE ? `${text.slice(0, MAX_PROGRESS_MESSAGE - 1)}…` : text,
  };
}

/** How a wait ended: the job's end (with its result), or still going at the timeout. */
export type WaitOutcome =
  | { ended: true; job: JobWithResult }
  | { ended: false; state: Job['state']; job: JobWithResult };

const waitSchema = z.strictObject({
  id: uuidSchema,
  timeoutMs: z
    .int()
    .min(1)
    .max(24 * 3600 * 1000),
  safetyCheckMs: z
    .int()
    .min(100)
    .max(3600 * 1000),
});

const TERMINAL: ReadonlySet<string> = new Set(['done', 'dead', 'cancelled']);

/**
 * Waits for the job `id`, enqueued `awaitable: true`, to end (`done`, `dead` or `cancelled`) and
 * returns it with its result; woken by the NOTIFY its ending statement sends, not by polling.
 * One connection of the pool is held while waiting (LISTEN needs it). At `timeoutMs` (default
 * 60 s) it returns `{ ended: false }` with the job as it stands; `signal` aborts the wait.
 * Ends that send no NOTIFY (the reaper's or an operator's) are seen by a check every
 * `safetyCheckMs` (default 10 s). A 5-second wait that times out runs three statements: LISTEN,
 * the read, UNLISTEN. An id with no job, or a job not enqueued awaitable, is refused at once.
 */
export async function waitForJob(
  executor: Executor,
  id: string,
  options: { timeoutMs?: number; signal?: AbortSignal; safetyCheckMs?: number } = {},
): Promise<WaitOutcome> {
  const { timeoutMs, safetyCheckMs } = parseInput('waitForJob', waitSchema, {
    id,
    timeoutMs: options.timeoutMs ?? 60_000,
    safetyCheckMs: options.safetyCheckMs ?? 10_000,
  });
  const pool = ownPool(executor);
  if (!pool) {
    throw new LeaseholdInputError('waitForJob', [
      'executor: a pool is needed (a pg.Pool, or a Drizzle database over one): the wait holds a connection to LISTEN',
    ]);
  }
  options.signal?.throwIfAborted();
  const client = await pool.connect();
  let ended: (() => void) | null = null;
  const onNotification = (message: pg.Notification) => {
    if (message.channel === JOB_ENDED_CHANNEL && message.payload?.split(',').includes(id)) ended?.();
  };
  client.on('notification', onNotification);
  let broken: Error | undefined;
  try {
    await client.query(`LISTEN ${JOB_ENDED_CHANNEL}`);
    let job = await getJob(client, id);
    if (!job) throw new LeaseholdInputError('waitForJob', [`id: there is no job ${id}`]);
    if (TERMINAL.has(job.state)) return { ended: true, job };
    if (!job.awaitable) {
      throw new LeaseholdInputError('waitForJob', [
        `id: job ${id} was not enqueued awaitable, so its end sends no wake-up (enqueue it with { awaitable: true })`,
      ]);
    }
    const deadline = performance.now() + timeoutMs;
    while (performance.now() < deadline) {
      const wait = Math.min(safetyCheckMs, deadline - performance.now());
      const woken = await new Promise<boolean>((resolve, reject) => {
        const timer = setTimeout(() => done(false), wait);
        const abort = () => {
          clearTimeout(timer);
          reject(options.signal?.reason);
        };
        const done = (value: boolean) => {
          clearTimeout(timer);
          options.signal?.removeEventListener('abort', abort);
          ended = null;
          resolve(value);
        };
        ended = () => done(true);
        options.signal?.addEventListener('abort', abort, { once: true });
      });
      // Not woken in the last slice before the deadline: timed out, without another read.
      if (!woken && (wait < safetyCheckMs || performance.now() >= deadline)) break;
      job = await getJob(client, id);
      if (!job) throw new LeaseholdInputError('waitForJob', [`id: job ${id} was removed while waited for`]);
      if (TERMINAL.has(job.state)) return { ended: true, job };
    }
    return { ended: false, state: job.state, job };
  } catch (error) {
    if (error instanceof Error && !(error instanceof LeaseholdInputError) && error.name !== 'AbortError')
      broken = error;
    throw error;
  } finally {
    client.off('notification', onNotification);
    await client.query(`UNLISTEN ${JOB_ENDED_CHANNEL}`).catch((error: unknown) => {
      broken ??= error instanceof Error ? error : new Error(String(error));
    });
    client.release(broken);
  }
}
