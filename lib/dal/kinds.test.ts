/**
 * The dashboard masks payloads from the kinds registry, not from handler code: a registered
 * kind version's paths are masked, an unregistered one's payload is hidden whole (with the
 * reason), and an admin's change to the paths shows on the next page view and in the audit log.
 * Real PostgreSQL; only next-auth's session read is stubbed.
 */
import { randomBytes } from 'node:crypto';
import { getServerSession } from 'next-auth';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { registerKinds } from '../../db/queue/index.ts';
import type { Role } from '../../db/schema.ts';
import { upsertUser } from '../../db/users.ts';
import { useTestDatabase } from '../../test/db.ts';
import { addJob, uniqueQueue } from '../../test/factories.ts';
import { closeDatabase } from '../db.ts';
import { MASK } from '../redaction.ts';
import { getAudit, getJobDetail, getKinds, setKindRedaction } from './index.ts';

vi.mock('next-auth', () => ({ getServerSession: vi.fn<() => Promise<unknown>>() }));

const t = useTestDatabase();
const email = (role: Role) => `${role}@kinds.example.com`;

function signIn(role: Role) {
  vi.mocked(getServerSession).mockResolvedValue({
    user: { email: email(role) },
    expires: new Date(Date.now() + 3_600_000).toISOString(),
  });
}

beforeAll(async () => {
  process.env.DATABASE_URL = t.url;
  process.env.NEXTAUTH_SECRET = randomBytes(24).toString('hex');
  process.env.LEASEHOLD_DEMO = 'false';
  for (const role of ['viewer', 'admin'] as const) {
    await upsertUser(t.db, { email: email(role), password: 'kinds-test-password', role });
  }
});
afterAll(async () => {
  await closeDatabase();
});

const payload = { orderId: 'o1', email: 'ada@example.com', phone: '555-0100', apiKey: 'k-secret' };

/** A kind registered at version 1 with `paths`, and a job of it at `version`. */
async function jobOfKind(paths: string[] | null, version = 1) {
  const kind = uniqueQueue('dal.kind');
  if (paths) {
    await registerKinds(t.db, [
      { kind, version: 1, defaultQueue: 'default', displayName: kind, redactedPaths: paths, rerunSafe: false },
    ]);
  }
  const job = await addJob(t.db, { queue: uniqueQueue('dal-kinds'), kind, kindVersion: version, payload });
  return { kind, id: job.id };
}

describe('the job page’s payload', () => {
  it('masks the paths workers registered for its kind version, and the well-known secret keys', async () => {
    const { id } = await jobOfKind(['email']);
    signIn('viewer');
    expect(await getJobDetail(id)).toMatchObject({
      payload: { orderId: 'o1', email: MASK, phone: '555-0100', apiKey: MASK },
      redactedPaths: ['email', 'apiKey'],
      payloadHidden: null,
      can: { reveal: false },
    });
  });

  it('hides the payload whole, and says why, when no worker has registered its kind', async () => {
    const { kind, id } = await jobOfKind(null);
    signIn('viewer');
    const detail = await getJobDetail(id);
    expect(detail).toMatchObject({ payload: MASK, redactedPaths: [], can: { reveal: false } });
    expect(detail?.payloadHidden).toContain(`no worker has registered ${kind} v1`);
    signIn('admin');
    expect(await getJobDetail(id)).toMatchObject({ payload: MASK, can: { reveal: true } });
  });

  it('hides the payload whole when its kind is registered at other versions only', async () => {
    const { kind, id } = await jobOfKind(['email'], 2);
    signIn('viewer');
    const detail = await getJobDetail(id);
    expect(detail?.payload).toBe(MASK);
    expect(detail?.payloadHidden).toContain(`${kind} v2`);
  });
});

describe('the kinds registry in the dashboard', () => {
  it('lists the registered kind versions, with the edit form for admins only', async () => {
    const { kind } = await jobOfKind(['email', 'phone']);
    signIn('viewer');
    const seen = await getKinds();
    expect(seen.kinds.find((k) => k.kind === kind)).toMatchObject({
      version: 1,
      redactedPaths: ['email', 'phone'],
      lastSeenAt: expect.any(String),
    });
    expect(seen.can.editRedaction).toBe(false);
    signIn('admin');
    expect((await getKinds()).can.editRedaction).toBe(true);
  });

  it('lets an admin unmask a path: the job page shows the field, and the audit log the change', async () => {
    const { kind, id } = await jobOfKind(['email', 'phone']);
    signIn('admin');
    const result = await setKindRedaction({ kind, version: 1, paths: ['email'], reason: 'phone is the shop’s' });
    expect(result).toEqual({
      ok: true,
      message: `Saved: ${kind} v1 now masks email (besides the usual secret keys). Unmasked phone; a worker whose handler still declares a path adds it back when it starts.`,
    });
    signIn('viewer');
    expect((await getJobDetail(id))?.payload).toMatchObject({ email: MASK, phone: '555-0100' });
    const { entries } = await getAudit({ action: 'set_redacted_paths', actor: email('admin') });
    expect(entries[0]).toMatchObject({ outcome: 'applied', affected: 1, reason: 'phone is the shop’s' });
  });

  it('refuses, with a sentence, paths for a kind version no worker registered', async () => {
    signIn('admin');
    const kind = uniqueQueue('dal.kind');
    expect(await setKindRedaction({ kind, version: 1, paths: [] })).toEqual({
      ok: false,
      message: `No worker has registered ${kind} v1: there are no redacted paths to change.`,
    });
  });

  it('refuses a path it could not match as bad input', async () => {
    const { kind } = await jobOfKind(['email']);
    signIn('admin');
    await expect(setKindRedaction({ kind, version: 1, paths: ['email', 'not a path'] })).rejects.toThrow(
      /paths\.1: expected keys joined by dots/,
    );
  });
});
