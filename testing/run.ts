/**
 * Running jobs in the test's own process: `runJob` runs one named job, `drainQueue` claims and
 * runs jobs one at a time until nothing is due. Both go through the worker's own path: the
 * handler registry, `execute` (kind, version and payload checks, the handler's signal, its
 * heartbeat and receipts), the lease keeper (heartbeats, the handler's timeout) and the
 * completer, the worker's only caller of the lease-guarded settle functions. So a test sees
 * what a worker would do: a failure that may be retried leaves the job `ready` with its backoff
 * ahead (drain does not wait for it unless told to; `advance` makes it due), a permanent one
 * makes it `dead`, an unknown kind or a payload that fails the schema is `dead` as `permanent`.
 *
 * Jobs run one after another, never two at once, so a test reads the same order every time;
 * jobs a handler enqueues on a drained queue run in the same drain.
 */
import pino, { type Logger } from 'pino';
import { LeaseholdError } from '../db/errors.ts';
import { claim, type ClaimedJob, type Executor, type Job, type RetryPolicy } from '../db/queue/index.ts';
import { runText } from '../db/queue/executor.ts';
import { LeaseholdInputError } from '../db/queue/errors.ts';
import { JOB_COLUMNS, mapJob, type JobColumnsRow } from '../db/queue/job.ts';
import { NAME_PATTERN, UUID_PATTERN } from '../db/queue/validate.ts';
import type { FailureClass, JobState } from '../db/states.ts';
import { Attempt, execute, leaseDeadlineFrom, type AttemptResult } from '../workers/attempt.ts';
import { Completer } from '../workers/completer.ts';
import { HandlerRegistry, type Handler } from '../workers/handler.ts';
import { LeaseKeeper } from '../workers/lease-keeper.ts';
import { claimJobIfDue } from './claim-job.ts';

/** What came of one attempt, and the job as it stands after its settlement. */
export interface JobRun {
  id: string;
  kind: string;
  queue: string;
  /** This attempt's number (the fence). */
  attempt: number;
  /**
   * What the attempt came to: `completed`; `failed` (then `failureClass` and `error` say how;
   * the job is `ready` again when a retry is due, else `dead`); `released` (stopped, handed
   * back); `snoozed` (the handler returned snooze(ms): `ready` again after ms, the attempt not
   * spent; a snooze past the cap comes back `failed`); `lost` (the lease was gone while it ran:
   * nothing was settled).
   */
  outcome: AttemptResult['kind'];
  /** The class the attempt failed with, when it failed. */
  failureClass: FailureClass | null;
  /** The attempt's error message, when it failed. */
  error: string | null;
  /** The job's state after the settlement: `done`, `ready` (a retry is scheduled), `dead`, … */
  state: JobState;
  /** Attempts the job has had so far. */
  attempts: number;
  /** When the job is due next (a retry's backoff puts it in the future). */
  runAt: Date;
  /** The whole job as stored after the settlement. */
  job: Job;
}

export interface RunOptions {
  /** The lease each attempt takes, in seconds (default 60). The lease keeper renews it. */
  leaseSeconds?: number | undefined;
  /** The worker id the attempts are leased under (default `leasehold-testing`). */
  workerId?: string | undefined;
  /** The worker's retry policy; a handler's own `retry` wins over it (as in a worker). */
  retry?: Partial<RetryPolicy> | undefined;
  /** Where handlers' and the runtime's log lines go (default: nowhere). */
  logger?: Logger | undefined;
}

export interface DrainOptions extends RunOptions {
  /** The handlers to run jobs with (or a HandlerRegistry). */
  handlers: readonly Handler[] | HandlerRegistry;
  /** The queues to drain (default: the handlers' default queues, `default` for a handler without one). */
  queues?: readonly string[] | undefined;
  /** Stop after this many attempts (default 1000). */
  maxJobs?: number | undefined;
  /**
   * Stop claiming after this long, in ms (default 4000, under the test runners' 5 s test
   * timeout, so a drain that never ends returns `timeout` rather than the runner failing the
   * test). An attempt in flight still finishes.
   */
  timeoutMs?: number | undefined;
  /**
   * When nothing is due, wait (real time, within `timeoutMs`) for the next retry of a job
   * on these queues instead of returning (default false). For long backoffs, `advance` instead.
   */
  waitForRetries?: boolean | undefined;
}

export interface DrainResult {
  /** Every attempt the drain ran, in order. */
  runs: JobRun[];
  /** `drained`: nothing left due; `max_jobs`: stopped at maxJobs; `timeout`: stopped at timeoutMs. */
  stoppedBecause: 'drained' | 'max_jobs' | 'timeout';
}

/** Why runJob could not start the job. */
export class JobNotRunnable extends LeaseholdError {
  override readonly name = 'JobNotRunnable';
  readonly code = 'job_not_runnable';
  constructor(
    readonly reason: 'not_found' | 'not_ready' | 'not_due' | 'queue_paused' | 'locked',
    message: string,
  ) {
    super(message);
  }
}

const silent = pino({ level: 'silent' });
const DEFAULT_WORKER_ID = 'leasehold-testing';

/**
 * Runs the job `jobId` (an id, or anything with one: a Job, an enqueue result) once, now, with
 * `handlers`, and settles it as a worker would. Throws JobNotRunnable, saying why, when the job
 * is not ready and due (a scheduled job: `advance` first) or its queue is paused.
 */
export async function runJob(
  executor: Executor,
  handlers: readonly Handler[] | HandlerRegistry,
  jobId: string | { id: string },
  options: RunOptions = {},
): Promise<JobRun> {
  const id = typeof jobId === 'object' && jobId !== null ? jobId.id : jobId;
  const problems = runOptionProblems(options);
  if (typeof id !== 'string' || !UUID_PATTERN.test(id)) {
    problems.unshift(`jobId: a job id (UUID) or an object with one, got ${JSON.stringify(id)}`);
  }
  if (problems.length > 0) throw new LeaseholdInputError('runJob', problems);
  const runner = new Runner(executor, registryOf('runJob', handlers), options);
  const job = await claimJobIfDue(executor, id, { workerId: runner.workerId, leaseSeconds: runner.leaseSeconds });
  if (!job) throw await notRunnable(executor, id);
  runner.start();
  try {
    return await runner.run(job);
  } finally {
    await runner.stop();
  }
}

/**
 * Claims and runs due jobs of `queues`, one at a time, until none is due (or `maxJobs`, or
 * `timeoutMs`), settling each as a worker would; says what happened to each.
 */
export async function drainQueue(executor: Executor, options: DrainOptions): Promise<DrainResult> {
  if (typeof options !== 'object' || options === null) {
    throw new LeaseholdInputError('drainQueue', ['options: expected an object with handlers']);
  }
  const problems = runOptionProblems(options);
  const { maxJobs = 1000, timeoutMs = 4000, waitForRetries = false } = options;
  if (!Number.isInteger(maxJobs) || maxJobs < 1) problems.push(`maxJobs: a whole number >= 1, got ${maxJobs}`);
  if (typeof timeoutMs !== 'number' || !(timeoutMs >= 0) || !Number.isFinite(timeoutMs)) {
    problems.push(`timeoutMs: a number of milliseconds >= 0, got ${timeoutMs}`);
  }
  if (typeof waitForRetries !== 'boolean')
    problems.push(`waitForRetries: true or false, got ${String(waitForRetries)}`);
  if (options.queues !== undefined) {
    if (!Array.isArray(options.queues) || options.queues.length === 0) {
      problems.push('queues: a non-empty array of queue names');
    } else {
      for (const [i, q] of options.queues.entries()) {
        if (typeof q !== 'string' || !NAME_PATTERN.test(q)) problems.push(`queues[${i}]: not a queue name: ${q}`);
      }
    }
  }
  if (problems.length > 0) throw new LeaseholdInputError('drainQueue', problems);
  const registry = registryOf('drainQueue', options.handlers);
  const queues = [
    ...new Set(options.queues ?? registry.kinds().map((kind) => registry.get(kind)?.defaultQueue ?? 'default')),
  ];

  const runner = new Runner(executor, registry, options);
  const deadline = performance.now() + timeoutMs;
  const runs: JobRun[] = [];
  runner.start();
  try {
    for (;;) {
      if (runs.length >= maxJobs) return { runs, stoppedBecause: 'max_jobs' };
      if (performance.now() >= deadline) return { runs, stoppedBecause: 'timeout' };
      // Ungrouped jobs, then grouped ones in their groups' turns (docs/flow-control.md).
      const options = { queues, workerId: runner.workerId, limit: 1, leaseSeconds: runner.leaseSeconds };
      const [job] = await claim(executor, options).then(async (ungrouped) =>
        ungrouped.length > 0 ? ungrouped : claim(executor, { ...options, grouped: true }),
      );
      if (job) {
        runs.push(await runner.run(job));
        continue;
      }
      if (!waitForRetries) return { runs, stoppedBecause: 'drained' };
      const waitMs = await nextRetryInMs(executor, queues);
      if (waitMs === null) return { runs, stoppedBecause: 'drained' };
      if (performance.now() + waitMs >= deadline) return { runs, stoppedBecause: 'timeout' };
      await new Promise((resolve) => setTimeout(resolve, Math.max(1, Math.ceil(waitMs))));
    }
  } finally {
    await runner.stop();
  }
}

/**
 * One in-process worker's parts without its loops: the attempts in flight, their lease keeper
 * and the completer (completions acknowledged at once, not batched).
 */
class Runner {
  readonly workerId: string;
  readonly leaseSeconds: number;
  private readonly logger: Logger;
  private readonly inFlight = new Set<Attempt>();
  private readonly keeper: LeaseKeeper;
  private readonly completer: Completer;

  constructor(
    private readonly db: Executor,
    private readonly registry: HandlerRegistry,
    options: RunOptions,
  ) {
    this.workerId = options.workerId ?? DEFAULT_WORKER_ID;
    this.leaseSeconds = options.leaseSeconds ?? 60;
    this.logger = options.logger ?? silent;
    this.keeper = new LeaseKeeper(this.leaseSeconds, this.inFlight, {
      db,
      workerId: this.workerId,
      registry,
      logger: this.logger,
    });
    this.completer = new Completer(
      { workerId: this.workerId, ackFlushMs: 0, retry: options.retry, leaseSeconds: this.leaseSeconds },
      { db, logger: this.logger, gaveUp: (token) => this.keeper.gaveUp(token) },
    );
  }

  start(): void {
    this.keeper.start();
  }

  async stop(): Promise<void> {
    await this.completer.flush();
    await this.keeper.stop();
  }

  async run(job: ClaimedJob): Promise<JobRun> {
    const entry = new Attempt(
      job,
      this.registry.get(job.kind),
      leaseDeadlineFrom(performance.now(), this.leaseSeconds),
      this.logger,
    );
    this.inFlight.add(entry);
    let result: AttemptResult;
    try {
      result = await execute(entry, { db: this.db, registry: this.registry, leaseSeconds: this.leaseSeconds });
      await this.completer.settle(entry, result);
    } finally {
      this.inFlight.delete(entry);
    }
    const stored = await readJob(this.db, job.id);
    if (!stored) throw new Error(`Leasehold testing: job ${job.id} is gone after its attempt (deleted meanwhile?)`);
    return {
      id: job.id,
      kind: job.kind,
      queue: job.queue,
      attempt: job.attempt,
      outcome: result.kind,
      failureClass: result.kind === 'failed' ? result.failureClass : null,
      error: result.kind === 'failed' ? result.message : null,
      state: stored.state,
      attempts: stored.attempts,
      runAt: stored.runAt,
      job: stored,
    };
  }
}

function registryOf(operation: string, handlers: readonly Handler[] | HandlerRegistry): HandlerRegistry {
  if (handlers instanceof HandlerRegistry) {
    if (handlers.kinds().length === 0) throw new LeaseholdInputError(operation, ['handlers: the registry is empty']);
    return handlers;
  }
  if (!Array.isArray(handlers) || handlers.length === 0) {
    throw new LeaseholdInputError(operation, ['handlers: a non-empty array of handlers (defineHandler) is required']);
  }
  try {
    return new HandlerRegistry(handlers);
  } catch (error) {
    throw new LeaseholdInputError(operation, [`handlers: ${(error as Error).message}`]);
  }
}

function runOptionProblems(options: RunOptions): string[] {
  const problems: string[] = [];
  if (typeof options !== 'object' || options === null) return ['options: expected an object'];
  const { leaseSeconds, workerId } = options;
  if (leaseSeconds !== undefined && !(typeof leaseSeconds === 'number' && leaseSeconds >= 1 && leaseSeconds <= 86400)) {
    problems.push(`leaseSeconds: a number of seconds from 1 to 86400, got ${leaseSeconds}`);
  }
  if (workerId !== undefined && !(typeof workerId === 'string' && workerId.length >= 1 && workerId.length <= 200)) {
    problems.push('workerId: 1 to 200 characters');
  }
  return problems;
}

async function readJob(executor: Executor, id: string): Promise<Job | null> {
  const [row] = await runText<JobColumnsRow>(
    executor,
    `SELECT ${JOB_COLUMNS} FROM leasehold.jobs WHERE id = $1::uuid`,
    [id],
  );
  return row ? mapJob(row) : null;
}

/** Milliseconds until the next retry on `queues` (not paused) is due, or null when none waits. */
async function nextRetryInMs(executor: Executor, queues: string[]): Promise<number | null> {
  const [row] = await runText<{ ms: number | null }>(
    executor,
    `SELECT (extract(epoch FROM min(r.run_at) - statement_timestamp()) * 1000)::float8 AS ms
     FROM leasehold.ready_rows r
     WHERE r.queue = ANY($1::text[]) AND r.attempts > 0
       AND NOT EXISTS (SELECT 1 FROM leasehold.queues q WHERE q.name = r.queue AND q.paused)`,
    [queues],
  );
  return row?.ms === null || row?.ms === undefined ? null : Math.max(0, row.ms);
}

/** Why job `id` could not be claimed, as an error naming what to do. */
async function notRunnable(executor: Executor, id: string): Promise<JobNotRunnable> {
  const [row] = await runText<{
    state: string;
    queue: string;
    due_in_ms: number;
    paused: boolean;
    worker_id: string | null;
  }>(
    executor,
    `SELECT j.state, j.queue, j.worker_id,
            (extract(epoch FROM j.run_at - statement_timestamp()) * 1000)::float8 AS due_in_ms,
            coalesce((SELECT q.paused FROM leasehold.queues q WHERE q.name = j.queue), false) AS paused
     FROM leasehold.jobs j WHERE j.id = $1::uuid`,
    [id],
  );
  if (!row) return new JobNotRunnable('not_found', `Leasehold runJob: no job with id ${id}`);
  if (row.state !== 'ready') {
    const by = row.state === 'running' ? ` (leased by ${row.worker_id ?? 'a worker'})` : '';
    return new JobNotRunnable('not_ready', `Leasehold runJob: job ${id} is ${row.state}${by}, not ready`);
  }
  if (row.due_in_ms > 0) {
    const ms = Math.ceil(row.due_in_ms);
    return new JobNotRunnable(
      'not_due',
      `Leasehold runJob: job ${id} is not due for another ${ms} ms; advance(db, ${ms}) first to run it now`,
    );
  }
  if (row.paused) {
    return new JobNotRunnable('queue_paused', `Leasehold runJob: job ${id} is on queue ${row.queue}, which is paused`);
  }
  return new JobNotRunnable('locked', `Leasehold runJob: job ${id} is being claimed by another session right now`);
}
