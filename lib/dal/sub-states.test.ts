/**
 * The three places that split `ready` and `running` into what the dashboard shows: the badge
 * (jobDto's subState), the jobs list's filter (listJobs) and the overview's counts (backlog).
 * They must agree job by job.
 */
import { describe, expect, it } from 'vitest';
import { jobListSchema, listJobs } from '../../db/queries/jobs.ts';
import { backlog, type QueueBacklog } from '../../db/queries/overview.ts';
import { LIST_STATES, type ListState } from '../../db/states.ts';
import { useTestDatabase } from '../../test/db.ts';
import { mixedFixture, uniqueQueue } from '../../test/factories.ts';
import { attemptBudget } from '../../db/queue/attempt-cap.ts';
import type { Job } from '../../db/queue/index.ts';
import { jobDto } from './mappers.ts';

/** A fixture job as the read models hand it out (no handler cap registered). */
const view = (job: Job) => ({ ...job, budget: attemptBudget(job, null) });

const t = useTestDatabase();

/** The overview's bucket for each list state (done: those finished in the last hour). */
const BUCKET: Record<ListState, keyof QueueBacklog> = {
  ready: 'ready',
  scheduled: 'scheduled',
  retrying: 'retrying',
  running: 'running',
  lease_expired: 'leaseExpired',
  done: 'doneLastHour',
  dead: 'dead',
  cancelled: 'cancelled',
};

describe('sub-states', () => {
  it('lists a job of each sub-state under exactly the filter its badge shows, counted in that bucket', async () => {
    const queue = uniqueQueue('sub');
    const fixture = await mixedFixture(t.db, queue);
    const filtersListing = new Map<string, ListState[]>();
    const listedUnder = new Map<ListState, number>();
    for (const state of LIST_STATES) {
      const { jobs } = await listJobs(t.db, jobListSchema.parse({ queue, state }));
      expect(
        jobs.map((job) => jobDto(job, false).subState),
        `badges under ?state=${state}`,
      ).toEqual(jobs.map(() => state));
      listedUnder.set(state, jobs.length);
      for (const job of jobs) filtersListing.set(job.id, [...(filtersListing.get(job.id) ?? []), state]);
    }
    const badges = Object.values(fixture).map((job) => jobDto(view(job), false).subState);
    expect([...badges].sort()).toEqual([...LIST_STATES].sort()); // the fixture has one job of each
    for (const job of Object.values(fixture)) {
      expect(filtersListing.get(job.id), job.id).toEqual([jobDto(view(job), false).subState]);
    }
    const counts = (await backlog(t.db)).find((q) => q.queue === queue)!;
    for (const state of LIST_STATES) {
      expect(listedUnder.get(state), `${state} listed`).toBe(1);
      expect(counts[BUCKET[state]], `${state} count`).toBe(1);
    }
  });
});
