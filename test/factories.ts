/**
 * Test fixtures built through the queue API itself, plus the one thing tests may do that the
 * API does not: let time pass for a lease or a backoff (by moving the deadline, not the clock).
 */
import { sql } from 'drizzle-orm';
import {
  cancelIfUnchanged,
  claim,
  completeIfLeaseHeld,
  enqueue,
  failIfLeaseHeld,
  type ClaimedJob,
  type EnqueueSpec,
  type Executor,
  type Job,
} from '../db/queue/index.ts';
import { run } from '../db/queue/executor.ts';
import { attemptHistory } from '../db/queue/history.ts';
import { mapJob, JOB_COLUMNS, type JobColumnsRow } from '../db/queue/job.ts';

let counter = 0;
export function uniqueQueue(prefix = 'q'): string {
  counter += 1;
  return `${prefix}-${process.pid}-${counter}`;
}

export async function addJob(db: Executor, overrides: Partial<EnqueueSpec> = {}): Promise<Job> {
  const result = await enqueue(db, { kind: 'test.noop', queue: 'default', payload: { n: counter++ }, ...overrides });
  return result.job!;
}

export async function claimOne(
  db: Executor,
  queue: string,
  workerId = 'worker-a',
  leaseSeconds = 30,
): Promise<ClaimedJob> {
  const [job] = await claim(db, { queues: [queue], workerId, limit: 1, leaseSeconds });
  if (!job) throw new Error(`nothing to claim in ${queue}`);
  return job;
}

/** A probe for test/wait's until(): the job once it is in one of `states`, else undefined. */
export function jobInState(db: Executor, id: string, ...states: string[]): () => Promise<Job | undefined> {
  return async () => {
    const job = await getJob(db, id);
    return states.includes(job.state) ? job : undefined;
  };
}

export async function getJob(db: Executor, id: string): Promise<Job> {
  const rows = await run<JobColumnsRow>(
    db,
    sql`SELECT ${sql.raw(JOB_COLUMNS)} FROM leasehold.jobs WHERE id = ${id}::uuid`,
  );
  if (!rows[0]) throw new Error(`no job ${id}`);
  return mapJob(rows[0]);
}

export async function allJobs(db: Executor): Promise<Job[]> {
  const rows = await run<JobColumnsRow>(db, sql`SELECT ${sql.raw(JOB_COLUMNS)} FROM leasehold.jobs ORDER BY id`);
  return rows.map(mapJob);
}

/** As if the lease's deadline had passed: moves lease_until into the past. */
export async function expireLease(db: Executor, id: string): Promise<void> {
  // The job's own deadline passes, and its claim is detached from any worker lease that covers
  // it (as a worker does when it gives an attempt up), so the effective deadline has passed too.
  await run(
    db,
    sql`WITH j AS (
          UPDATE leasehold.jobs SET lease_until = now() - interval '1 second' WHERE id = ${id}::uuid AND state = 'running'
          RETURNING lease_token, queue
        )
        UPDATE leasehold.leases l SET detached = true FROM j WHERE l.token = j.lease_token AND l.queue = j.queue`,
  );
}

/** As if a retry's backoff had elapsed: makes a waiting job due now, keeping its aging offset. */
export async function makeDue(db: Executor, id: string): Promise<void> {
  await run(
    db,
    sql`UPDATE leasehold.jobs SET claim_at = now() - (run_at - claim_at), run_at = now() WHERE id = ${id}::uuid AND state = 'ready'`,
  );
}

/** Every ended attempt of a job, as the dashboard shows them (attempt rows plus the completion). */
export const attemptsOf = attemptHistory;

/** What backlog() counts for mixedFixture's queue: one job in each live sub-state and end state. */
export const MIXED_FIXTURE_COUNTS = {
  ready: 1,
  scheduled: 1,
  retrying: 1,
  running: 1,
  leaseExpired: 1,
  dead: 1,
  cancelled: 1,
} as const;

/**
 * One job in every state and sub-state, on its own queue: ready, scheduled, running, lease
 * expired, retry-waiting, done, dead, cancelled. Made through the API.
 */
export async function mixedFixture(db: Executor, queue: string): Promise<Record<string, Job>> {
  const scheduled = await addJob(db, { queue, delayMs: 3_600_000 });
  const running = await addJob(db, { queue });
  const expired = await addJob(db, { queue });
  const retrying = await addJob(db, { queue });
  const done = await addJob(db, { queue });
  const dead = await addJob(db, { queue });
  const cancelled = await addJob(db, { queue });
  // Claim everything due, settle each as its state needs, then add the plain ready job.
  const claimed = await claim(db, { queues: [queue], workerId: 'fixture', limit: 100, leaseSeconds: 600 });
  const byId = new Map(claimed.map((j) => [j.id, j]));
  const lease = (job: Job) => byId.get(job.id)!;
  await completeIfLeaseHeld(db, lease(done));
  await failIfLeaseHeld(db, lease(dead), { error: 'bad payload', failureClass: 'permanent' });
  await failIfLeaseHeld(db, lease(retrying), { error: 'provider 503', failureClass: 'transient' });
  await cancelIfUnchanged(db, { id: cancelled.id, leaseToken: lease(cancelled).leaseToken, actor: 'fixture' });
  await expireLease(db, expired.id);
  const ready = await addJob(db, { queue });
  const jobs = { ready, scheduled, running, expired, retrying, done, dead, cancelled };
  const fresh: Record<string, Job> = {};
  for (const [name, job] of Object.entries(jobs)) fresh[name] = await getJob(db, job.id);
  return fresh;
}

/**
 * Gives job `id` a payload `{"deep": [[…]]}` nested `depth` arrays deep, as a row written past
 * the enqueues' checks would be (by the migrator, or by leasehold.enqueue before drizzle/0011):
 * the table has no depth check (drizzle/0013 says why).
 */
export async function writeDeepPayload(db: Executor, id: string, depth: number): Promise<void> {
  await run(
    db,
    sql`UPDATE leasehold.jobs SET payload = ('{"deep":' || repeat('[', ${depth}::int) || repeat(']', ${depth}::int) || '}')::jsonb
        WHERE id = ${id}::uuid`,
  );
}
