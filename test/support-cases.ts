/**
 * The support actions' cases for lib/dal's role tests (policy.test.ts: every role; roles.test.ts:
 * the dashboard's login): per DAL function, seed what one call needs and return the call and
 * what its work must have been. Fixtures are written through `database()` (the test's own rights).
 */
import { expect } from 'vitest';
import { failIfLeaseHeld, completeIfLeaseHeld, registerKinds, type Executor, type Job } from '../db/queue/index.ts';
import { run } from '../db/queue/executor.ts';
import { sql } from 'drizzle-orm';
import type * as Dal from '../lib/dal/index.ts';
import { addJob, claimOne, getJob, uniqueQueue } from './factories.ts';

export type SupportFunction =
  | 'runJobNow'
  | 'rescheduleJob'
  | 'setJobPriority'
  | 'rerunJob'
  | 'previewPurgeDead'
  | 'purgeDead';

export interface SupportCase {
  call: () => Promise<unknown>;
  allowed: (result: unknown) => Promise<void>;
}

/** What a job page sends back as seen. */
export const seenOf = (job: Job) => ({
  state: job.state,
  attempts: job.attempts,
  updatedAt: job.updatedAt.toISOString(),
});

/** A dead job of a queue of its own that finished a day ago. */
async function oldDeadJob(db: Executor): Promise<Job> {
  const queue = uniqueQueue('support-purge');
  const job = await addJob(db, { queue });
  await failIfLeaseHeld(db, await claimOne(db, queue), { error: 'bad', failureClass: 'permanent' });
  await run(db, sql`UPDATE leasehold.jobs SET finished_at = finished_at - interval '1 day' WHERE id = ${job.id}::uuid`);
  return getJob(db, job.id);
}

async function row(db: Executor, id: string) {
  const [found] = await run<{ state: string; priority: number; run_at: string }>(
    db,
    sql`SELECT state, priority, run_at FROM leasehold.jobs WHERE id = ${id}::uuid`,
  );
  return found && { ...found, run_at: new Date(found.run_at) };
}

export function supportCases(
  database: () => Executor,
  dal: typeof Dal,
): Record<SupportFunction, () => Promise<SupportCase>> {
  const applied = (result: unknown) => expect(result).toMatchObject({ ok: true });
  return {
    runJobNow: async () => {
      const db = database();
      const job = await addJob(db, { queue: uniqueQueue('support-now'), delayMs: 3_600_000 });
      return {
        call: () => dal.runJobNow({ id: job.id, seen: seenOf(job), reason: 'customer asked' }),
        allowed: async (result) => {
          applied(result);
          expect((await row(db, job.id))?.run_at.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
        },
      };
    },
    rescheduleJob: async () => {
      const db = database();
      const job = await addJob(db, { queue: uniqueQueue('support-resched'), delayMs: 3_600_000 });
      const runAt = new Date(Date.now() + 7_200_000);
      return {
        call: () => dal.rescheduleJob({ id: job.id, seen: seenOf(job), runAt: runAt.toISOString() }),
        allowed: async (result) => {
          applied(result);
          expect((await row(db, job.id))?.run_at).toEqual(runAt);
        },
      };
    },
    setJobPriority: async () => {
      const db = database();
      const job = await addJob(db, { queue: uniqueQueue('support-prio') });
      return {
        call: () => dal.setJobPriority({ id: job.id, seen: seenOf(job), priority: 9 }),
        allowed: async (result) => {
          applied(result);
          expect((await row(db, job.id))?.priority).toBe(9);
        },
      };
    },
    rerunJob: async () => {
      const db = database();
      const queue = uniqueQueue('support-rerun');
      await registerKinds(db, [
        {
          kind: 'support.rerun',
          version: 1,
          defaultQueue: queue,
          displayName: 'r',
          redactedPaths: [],
          rerunSafe: true,
        },
      ]);
      const job = await addJob(db, { queue, kind: 'support.rerun' });
      await completeIfLeaseHeld(db, await claimOne(db, queue));
      const done = await getJob(db, job.id);
      return {
        call: () => dal.rerunJob({ id: job.id, seen: seenOf(done) }),
        allowed: async (result) => {
          applied(result);
          const { copyId } = result as { copyId: string };
          expect((await row(db, copyId))?.state).toBe('ready');
        },
      };
    },
    previewPurgeDead: async () => {
      const db = database();
      const job = await oldDeadJob(db);
      return {
        call: () => dal.previewPurgeDead({ queue: job.queue, before: new Date().toISOString() }),
        allowed: async (result) => {
          expect(result).toMatchObject({ queue: job.queue, matched: 1, overCap: false, ids: [job.id] });
          expect((await row(db, job.id))?.state).toBe('dead');
        },
      };
    },
    purgeDead: async () => {
      const db = database();
      const job = await oldDeadJob(db);
      return {
        call: () => dal.purgeDead({ queue: job.queue, before: new Date().toISOString(), ids: [job.id], confirm: true }),
        allowed: async (result) => {
          expect(result).toEqual({ ok: true, message: `Purged 1 of 1 dead job of ${job.queue}.` });
          expect(await row(db, job.id)).toBeUndefined();
        },
      };
    },
  };
}
