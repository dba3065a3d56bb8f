/**
 * The live pages' shared cache (lib/live-cache.ts): through the real data-access functions on
 * real PostgreSQL (only next-auth's session is stubbed, and the read models are wrapped to count
 * their calls), sessions within the freshness share one database read, concurrent callers one
 * in-flight read, and no viewer is ever given what was read for an admin. Then the cache itself:
 * an error is not kept, the size is bounded.
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { failIfLeaseHeld } from '../db/queue/index.ts';
import { readHealth } from '../db/queries/health.ts';
import { jobWithOutcome } from '../db/queries/jobs.ts';
import { overview } from '../db/queries/overview.ts';
import { addJob, claimOne, uniqueQueue } from '../test/factories.ts';
import { useTestDatabase } from '../test/db.ts';
import { dalSession } from '../test/dal-session.ts';
import * as dal from './dal/index.ts';
import { FRESHNESS, invalidateLive, liveQuery } from './live-cache.ts';

vi.mock('next-auth', () => ({ getServerSession: vi.fn<() => Promise<unknown>>() }));
// The read models the cached DAL functions call, each wrapped in a spy that calls the real one.
vi.mock('../db/queries/overview.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../db/queries/overview.ts')>();
  return { ...real, overview: vi.fn<typeof real.overview>(real.overview) };
});
vi.mock('../db/queries/health.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../db/queries/health.ts')>();
  return { ...real, readHealth: vi.fn<typeof real.readHealth>(real.readHealth) };
});
vi.mock('../db/queries/jobs.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../db/queries/jobs.ts')>();
  return { ...real, jobWithOutcome: vi.fn<typeof real.jobWithOutcome>(real.jobWithOutcome) };
});

const t = useTestDatabase();
const session = dalSession(t, 'live-cache.example.com');
const { signIn } = session;

beforeAll(() => session.start());
afterAll(() => session.close());
afterEach(() => {
  vi.useRealTimers();
  vi.mocked(overview).mockClear();
  vi.mocked(readHealth).mockClear();
  vi.mocked(jobWithOutcome).mockClear();
});

describe('sessions share one read within the freshness', () => {
  it('serves an admin and then a viewer within the freshness from one overview read', async () => {
    signIn('admin');
    const forAdmin = await dal.getOverview();
    signIn('viewer');
    const forViewer = await dal.getOverview();
    expect(vi.mocked(overview)).toHaveBeenCalledTimes(1);
    expect(forViewer.generatedAt).toBe(forAdmin.generatedAt);
    // The one field that is the viewer's own is computed per call, not cached.
    expect(forAdmin.can.pause).toBe(true);
    expect(forViewer.can.pause).toBe(false);
  });

  it('shares one in-flight read among concurrent callers', async () => {
    signIn('operator');
    const answers = await Promise.all(Array.from({ length: 8 }, () => dal.getOverview()));
    expect(vi.mocked(overview)).toHaveBeenCalledTimes(1);
    expect(new Set(answers.map((a) => a.generatedAt)).size).toBe(1);
  });

  it('reads again once the freshness has passed', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    signIn('viewer');
    await dal.getOverview();
    vi.setSystemTime(Date.now() + FRESHNESS.overview - 100);
    await dal.getOverview();
    expect(vi.mocked(overview)).toHaveBeenCalledTimes(1);
    vi.setSystemTime(Date.now() + 200);
    await dal.getOverview();
    expect(vi.mocked(overview)).toHaveBeenCalledTimes(2);
  });

  it('reads afresh for a page’s first paint and keeps that read for the polls', async () => {
    signIn('viewer');
    await dal.getHealth();
    await dal.getHealth({ fresh: true });
    await dal.getHealth();
    expect(vi.mocked(readHealth)).toHaveBeenCalledTimes(2);
  });
});

describe('no viewer is given what was read for an admin', () => {
  it('gives a viewer no holding session’s address or query after an admin read the health', async () => {
    // A transaction left open: it holds the horizon, and the health read names its session.
    const holder = new pg.Client({ connectionString: t.url, application_name: 'live-cache-holder' });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query("SELECT txid_current() AS xid, 'live-cache-secret' AS marker");
      signIn('admin');
      const forAdmin = await dal.getHealth();
      const adminHolder = forAdmin.holders.find((h) => h.holder === 'session' && h.application === 'live-cache-holder');
      expect(forAdmin.sessionDetail).toBe(true);
      expect(adminHolder).toMatchObject({ query: expect.stringContaining('live-cache-secret') });

      signIn('viewer');
      const forViewer = await dal.getHealth();
      const viewerHolder = forViewer.holders.find(
        (h) => h.holder === 'session' && h.application === 'live-cache-holder',
      );
      expect(forViewer.sessionDetail).toBe(false);
      expect(viewerHolder).toMatchObject({ query: null, clientAddress: null });
      expect(JSON.stringify(forViewer)).not.toContain('live-cache-secret');
      // Two entries, one per kind of viewer; a second viewer (an operator) shares the viewer's.
      signIn('operator');
      expect(JSON.stringify(await dal.getHealth())).not.toContain('live-cache-secret');
      expect(vi.mocked(readHealth)).toHaveBeenCalledTimes(2);
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
  });

  it('gives a viewer no lease token and no actions on a job an admin polled first, from one read', async () => {
    const queue = uniqueQueue('live-cache-job');
    const job = await addJob(t.db, { queue });
    const lease = await claimOne(t.db, queue);
    signIn('admin');
    const forAdmin = await dal.getJobProgress(job.id);
    expect(forAdmin).toMatchObject({ state: 'running', leaseToken: lease.leaseToken, can: { cancel: true } });

    signIn('viewer');
    const forViewer = await dal.getJobProgress(job.id);
    expect(forViewer).toMatchObject({ state: 'running', leaseToken: null, can: { retry: false, cancel: false } });
    expect(JSON.stringify(forViewer)).not.toContain(lease.leaseToken);
    expect(vi.mocked(jobWithOutcome)).toHaveBeenCalledTimes(1);
  });

  it('shows an operator’s own change at once: its write drops the cached job', async () => {
    const queue = uniqueQueue('live-cache-retry');
    const job = await addJob(t.db, { queue });
    await failIfLeaseHeld(t.db, await claimOne(t.db, queue), { error: 'no', failureClass: 'permanent' });
    signIn('operator');
    expect(await dal.getJobProgress(job.id)).toMatchObject({ state: 'dead', finished: true, can: { retry: true } });
    expect(await dal.retryJob({ id: job.id })).toMatchObject({ ok: true });
    expect(await dal.getJobProgress(job.id)).toMatchObject({ state: 'ready', finished: false });
    expect(vi.mocked(jobWithOutcome)).toHaveBeenCalledTimes(2);
  });
});

describe('the cache itself', () => {
  it('keeps no failed read: the next caller reads again', async () => {
    let calls = 0;
    const q = liveQuery('kinds', async (n: number) => {
      calls++;
      if (calls === 1) throw new Error('database away');
      return n * 2;
    });
    await expect(q.read(1)).rejects.toThrow('database away');
    expect(await q.read(1)).toBe(2);
    expect(await q.read(1)).toBe(2);
    expect(calls).toBe(2);
    invalidateLive('kinds');
    expect(q.size()).toBe(0);
  });

  it('holds at most its bound, dropping the least recently read', async () => {
    const read: number[] = [];
    const q = liveQuery(
      'jobLive',
      async (n: number) => {
        read.push(n);
        return n;
      },
      { maxEntries: 3 },
    );
    for (const n of [1, 2, 3]) await q.read(n);
    await q.read(1); // 1 is now the most recently read; 2 the least
    await q.read(4);
    expect(q.size()).toBe(3);
    await q.read(1);
    await q.read(2); // dropped: read again
    expect(read).toEqual([1, 2, 3, 4, 2]);
  });
});
