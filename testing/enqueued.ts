/**
 * Assertions on what was enqueued. They read `leasehold.jobs` through the executor they are
 * given, so inside the application's own transaction (a Drizzle transaction, a pg client after
 * BEGIN) they see the jobs that transaction enqueued before it commits, and outside it only what
 * committed: `expectEnqueued(tx, …)` before the commit, `expectNotEnqueued(db, …)` after a
 * rollback.
 *
 * A payload filter is a partial match, PostgreSQL's jsonb containment (`payload @> filter`):
 * every key given must be present with that value, nested objects match the same way, and an
 * array matches an array that contains its elements (in any order).
 */
import { LeaseholdError } from '../db/errors.ts';
import { runText, type Executor } from '../db/queue/executor.ts';
import { LeaseholdInputError } from '../db/queue/errors.ts';
import { JOB_COLUMNS, mapJob, type Job, type JobColumnsRow } from '../db/queue/job.ts';
import { JOB_STATES, type JobState } from '../db/states.ts';

/** Which jobs to look for; every field given must match. */
export interface EnqueuedFilter {
  /** The kind, or a job contract (anything with `kind`, and `version` to match the kind version too). */
  kind?: string | { kind: string; version?: number } | undefined;
  queue?: string | undefined;
  /** A partial payload: jsonb containment (`payload @> this`). */
  payload?: unknown;
  /** One state or several (default: any). */
  state?: JobState | readonly JobState[] | undefined;
  idempotencyKey?: string | undefined;
}

/** Jobs matching `filter`, oldest first (by creation time, then id), as `executor` sees them. */
export async function enqueuedJobs(executor: Executor, filter: EnqueuedFilter = {}): Promise<Job[]> {
  const { where, params } = compile('enqueuedJobs', filter);
  const rows = await runText<JobColumnsRow>(
    executor,
    `SELECT ${JOB_COLUMNS} FROM leasehold.jobs WHERE ${where} ORDER BY created_at, id`,
    params,
  );
  return rows.map(mapJob);
}

/**
 * The one job matching `filter`; throws, listing what was enqueued instead, when there is none
 * or more than one (look at several with `enqueuedJobs`).
 */
export async function expectEnqueued(executor: Executor, filter: EnqueuedFilter): Promise<Job> {
  const jobs = await enqueuedJobs(executor, filter);
  if (jobs.length === 1) return jobs[0]!;
  if (jobs.length > 1) {
    throw new EnqueuedAssertionError(
      `expected one job matching ${describe(filter)}, found ${jobs.length}:\n${list(jobs)}\n` +
        'Narrow the filter, or read them all with enqueuedJobs().',
    );
  }
  const others = await enqueuedJobs(executor, {});
  throw new EnqueuedAssertionError(
    `expected a job matching ${describe(filter)}, found none. ` +
      (others.length === 0 ? 'No job is visible at all (not yet committed, or a different database?).' : '') +
      (others.length > 0 ? `Jobs visible:\n${list(others)}` : ''),
  );
}

/** Throws, listing them, when any job matches `filter`. */
export async function expectNotEnqueued(executor: Executor, filter: EnqueuedFilter): Promise<void> {
  const jobs = await enqueuedJobs(executor, filter);
  if (jobs.length > 0) {
    throw new EnqueuedAssertionError(
      `expected no job matching ${describe(filter)}, found ${jobs.length}:\n${list(jobs)}`,
    );
  }
}

/** A failed enqueue assertion (test runners show its message). */
export class EnqueuedAssertionError extends LeaseholdError {
  override readonly name = 'EnqueuedAssertionError';
  readonly code = 'enqueued_assertion_failed';
}

function compile(operation: string, filter: EnqueuedFilter): { where: string; params: unknown[] } {
  if (typeof filter !== 'object' || filter === null) {
    throw new LeaseholdInputError(operation, ['filter: expected an object ({ kind, queue, payload, state })']);
  }
  const known = new Set(['kind', 'queue', 'payload', 'state', 'idempotencyKey']);
  const problems = Object.keys(filter)
    .filter((key) => !known.has(key))
    .map((key) => `filter.${key}: unknown (known: ${[...known].join(', ')})`);
  const conditions: string[] = [];
  const params: unknown[] = [];
  const add = (condition: (param: string) => string, value: unknown) => {
    params.push(value);
    conditions.push(condition(`$${params.length}`));
  };
  const { kind, queue, payload, state, idempotencyKey } = filter;
  if (typeof kind === 'string') add((p) => `kind = ${p}::text`, kind);
  else if (typeof kind === 'object' && kind !== null && typeof kind.kind === 'string') {
    add((p) => `kind = ${p}::text`, kind.kind);
    if (kind.version !== undefined) {
      if (!Number.isInteger(kind.version)) problems.push(`filter.kind.version: a whole number, got ${kind.version}`);
      else add((p) => `kind_version = ${p}::int`, kind.version);
    }
  } else if (kind !== undefined) problems.push('filter.kind: a kind name or a job contract with `kind`');
  if (queue !== undefined) {
    if (typeof queue === 'string') add((p) => `queue = ${p}::text`, queue);
    else problems.push('filter.queue: a queue name');
  }
  if (idempotencyKey !== undefined) {
    if (typeof idempotencyKey === 'string') add((p) => `idempotency_key = ${p}::text`, idempotencyKey);
    else problems.push('filter.idempotencyKey: a string');
  }
  if (payload !== undefined) {
    let text: string | undefined;
    try {
      text = JSON.stringify(payload);
    } catch (error) {
      problems.push(`filter.payload: not JSON (${(error as Error).message})`);
    }
    if (text !== undefined) add((p) => `payload @> ${p}::jsonb`, text);
  }
  if (state !== undefined) {
    const states = typeof state === 'string' ? [state] : state;
    const bad = Array.isArray(states) ? states.filter((s) => !(JOB_STATES as readonly string[]).includes(s)) : [state];
    if (bad.length > 0 || states.length === 0) {
      problems.push(
        `filter.state: one of ${JOB_STATES.join(', ')} (or an array of them), got ${JSON.stringify(state)}`,
      );
    } else add((p) => `state = ANY(${p}::text[])`, [...states]);
  }
  if (problems.length > 0) throw new LeaseholdInputError(operation, problems);
  return { where: conditions.length > 0 ? conditions.join(' AND ') : 'true', params };
}

function describe(filter: EnqueuedFilter): string {
  const { kind } = filter;
  const shown =
    typeof kind === 'object' && kind !== null
      ? { ...filter, kind: kind.version === undefined ? kind.kind : `${kind.kind} v${kind.version}` }
      : filter;
  return JSON.stringify(shown);
}

function list(jobs: readonly Job[]): string {
  const shown = jobs
    .slice(0, 10)
    .map((j) => `  ${j.kind} v${j.kindVersion} on ${j.queue} (${j.state}) ${JSON.stringify(j.payload)}`);
  if (jobs.length > 10) shown.push(`  … and ${jobs.length - 10} more`);
  return shown.join('\n');
}
