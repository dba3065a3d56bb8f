/**
 * The Limits page's data: every limit with its declared, run-time and enforced values (rates as
 * `100/1s`), what runs and waits under it; an admin's run-time change, audited under their
 * email; and bad input refused in a sentence before anything is written. The role gating of
 * both functions is policy.test.ts's. Real PostgreSQL; only next-auth's session read is stubbed.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { claim, declareLimits, enqueueMany, pauseLimit } from '../../db/queue/index.ts';
import { useTestDatabase } from '../../test/db.ts';
import { dalSession } from '../../test/dal-session.ts';
import { uniqueQueue } from '../../test/factories.ts';
import { AuthError, InputError, toUserMessage } from '../errors.ts';
import { getAudit, getJobs, getLimits, setLimitValues } from './index.ts';
import { absoluteTime } from '../time-format.ts';

vi.mock('next-auth', () => ({ getServerSession: vi.fn<() => Promise<unknown>>() }));

const t = useTestDatabase();
const session = dalSession(t, 'limits.example.com');
const { email, signIn } = session;

beforeAll(() => session.start());
afterAll(() => session.close());

/** A kind limit declared at `max` (and `rate`), under a kind of its own, as its workers declare it. */
async function declaredKind(max: number, rate?: { max: number; perMs: number }) {
  const kind = uniqueQueue('dal.limited');
  await declareLimits(t.db, [{ scope: 'kind', name: kind, max, kinds: [kind], ...(rate ? { rate } : {}) }]);
  return kind;
}

async function limitOf(key: string) {
  signIn('viewer');
  return (await getLimits()).limits.find((l) => l.key === key);
}

/** What a write could change: the limit's run-time values and the audit log. */
async function written(key: string) {
  const { rows } = await t.pool.query(
    `SELECT (SELECT row(set_max, set_rate, set_per_ms, set_by)::text FROM leasehold.limits WHERE key = $1) AS limit,
            (SELECT count(*) FROM leasehold.audit_log) AS audit`,
    [key],
  );
  return rows[0];
}

async function refusal(input: unknown): Promise<{ status: number; message: string }> {
  signIn('admin');
  const error = await setLimitValues(input).then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(InputError);
  return toUserMessage(error)!;
}

describe('the limits in the dashboard', () => {
  it('lists each limit with its values, what runs under it and what waits, and why a job waits', async () => {
    const kind = await declaredKind(1, { max: 100, perMs: 1000 });
    const queue = uniqueQueue('dal-limits');
    const jobs = await enqueueMany(t.db, [
      { queue, kind },
      { queue, kind },
      { queue, kind },
    ]);
    const claimed = await claim(t.db, { queues: [queue], workerId: 'w', limit: 5, limits: [`kind:${kind}`] });
    expect(claimed).toHaveLength(1);

    signIn('viewer');
    const seen = await getLimits();
    expect(seen.can.set).toBe(false);
    expect(seen.limits.find((l) => l.key === `kind:${kind}`)).toEqual({
      key: `kind:${kind}`,
      scope: 'kind',
      name: kind,
      declared: { max: 1, rate: '100/1s' },
      set: { max: null, rate: null },
      enforced: { max: 1, rate: '100/1s' },
      setBy: null,
      setAt: null,
      running: 1,
      started: 1,
      nextStartAt: null,
      waiting: 2,
      waitingCapped: false,
      pausedUntil: null,
      pausedReason: null,
      kinds: [kind],
    });
    const waitingIds = jobs.map((j) => j.id).filter((id) => id !== claimed[0]!.id);
    const listed = await getJobs({ queue, state: 'ready' });
    expect(Object.fromEntries(listed.jobs.map((j) => [j.id, j.waiting]))).toEqual(
      Object.fromEntries(waitingIds.map((id) => [id, [`waiting: kind ${kind} at its limit of 1`]])),
    );
    signIn('admin');
    expect((await getLimits()).can.set).toBe(true);
  });

  it('lets an admin set the maximum and the rate: enforced at once, audited under their email with the reason', async () => {
    const kind = await declaredKind(1);
    const key = `kind:${kind}`;
    signIn('admin');
    const result = await setLimitValues({ scope: 'kind', name: kind, max: '3', rate: ' 5/500ms ', reason: 'burst' });
    expect(result).toEqual({
      ok: true,
      message: `Saved ${key}: the run-time maximum is 3 (was none); the run-time rate is 5/500ms (was none). The next claim of the limit uses it (recorded in the audit log).`,
    });
    expect(await limitOf(key)).toMatchObject({
      declared: { max: 1, rate: null },
      set: { max: 3, rate: '5/500ms' },
      enforced: { max: 3, rate: '5/500ms' },
      setBy: email('admin'),
      setAt: expect.any(String),
    });
    signIn('viewer');
    const audit = await getAudit({ action: 'set_limit', actor: email('admin') });
    expect(audit.entries[0]).toMatchObject({ action: 'set_limit', actor: email('admin'), reason: 'burst' });

    // Only what is sent changes; empty clears it, and the declaration applies again.
    signIn('admin');
    const cleared = await setLimitValues({ scope: 'kind', name: kind, max: '' });
    expect(cleared.message).toBe(
      `Saved ${key}: the run-time maximum is cleared (was 3): the declaration applies again. The next claim of the limit uses it (recorded in the audit log).`,
    );
    expect(await limitOf(key)).toMatchObject({ set: { max: null, rate: '5/500ms' }, enforced: { max: 1 } });
    signIn('admin');
    await setLimitValues({ scope: 'kind', name: kind, max: 7, rate: null });
    expect(await limitOf(key)).toMatchObject({ set: { max: 7, rate: null }, enforced: { max: 7, rate: null } });
  });

  it("lets an admin lift a RateLimitedError's pause, audited, and says so when there was none", async () => {
    const kind = await declaredKind(2);
    const key = `kind:${kind}`;
    const until = await pauseLimit(t.db, key, 60_000, 'RateLimitedError: 429');
    signIn('viewer');
    expect((await limitOf(key))?.pausedUntil).toBe(until!.toISOString());
    signIn('admin');
    const lifted = await setLimitValues({ scope: 'kind', name: kind, resume: true, reason: 'upstream back' });
    expect(lifted.message).toBe(
      `Saved ${key}: the pause is lifted (it ran until ${absoluteTime(until!, 'UTC')}). The next claim of the limit uses it (recorded in the audit log).`,
    );
    expect((await limitOf(key))?.pausedUntil).toBeNull();
    signIn('admin');
    expect((await setLimitValues({ scope: 'kind', name: kind, resume: true })).message).toMatch(
      /: it was not paused\./,
    );
  });

  it('refuses bad input with a sentence naming each problem, and writes nothing', async () => {
    const kind = await declaredKind(2);
    const key = `kind:${kind}`;
    const before = await written(key);
    const name = { scope: 'kind', name: kind };
    expect(await refusal({ ...name, max: '0' })).toEqual({
      status: 400,
      message: `${key} was not changed: the maximum must be a whole number from 1 to 1,000,000 (empty clears it), not "0".`,
    });
    expect((await refusal({ ...name, max: '2.5' })).message).toContain('not "2.5"');
    expect((await refusal({ ...name, max: 1_000_001 })).message).toContain('not "1000001"');
    expect((await refusal({ ...name, max: 'ten', rate: 'fast' })).message).toBe(
      `${key} was not changed: the maximum must be a whole number from 1 to 1,000,000 (empty clears it), not "ten"; the rate must be N/INTERVAL (100/1s, 5/500ms): N a whole number from 1 to 1000000, INTERVAL from 1ms to 24h, not "fast" (empty clears it).`,
    );
    expect((await refusal({ ...name, rate: '100/0s' })).message).toContain('not "100/0s"');
    expect((await refusal({ ...name, rate: '5/25h' })).message).toContain('not "5/25h"');
    expect((await refusal({ ...name, rate: '0/1s' })).message).toContain('not "0/1s"');
    expect((await refusal(name)).message).toBe(
      `${key} was not changed: nothing to change: give a maximum, a rate or both (empty clears one), or lift the pause.`,
    );
    expect((await refusal({ ...name, scope: 'tenant', max: 2 })).message).toMatch(
      /^That limit change is not valid \(scope:/,
    );
    expect((await refusal({ ...name, max: 2, extra: true })).message).toMatch(/^That limit change is not valid/);
    expect(await written(key)).toEqual(before);
  });

  it('says so, writing nothing, when no handler declares the limit', async () => {
    const name = uniqueQueue('dal.undeclared');
    const before = await written(`resource:${name}`);
    expect((await refusal({ scope: 'resource', name, max: 4 })).message).toMatch(
      new RegExp(`^resource:${name.replaceAll('.', '\\.')} was not changed: no handler declares the limit resource:`),
    );
    expect(await written(`resource:${name}`)).toEqual(before);
  });

  it('refuses an operator (403) before writing', async () => {
    const kind = await declaredKind(2);
    const before = await written(`kind:${kind}`);
    signIn('operator');
    const error = await setLimitValues({ scope: 'kind', name: kind, max: 5 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthError);
    expect((error as AuthError).status).toBe(403);
    expect(await written(`kind:${kind}`)).toEqual(before);
  });
});
