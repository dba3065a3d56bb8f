/**
 * The dashboard masks payloads from the kinds registry, not from handler code: a registered
 * kind version's paths are masked, an unregistered one's payload is hidden whole (with the
 * reason), the configured defaults apply to every kind, and an admin's added path shows on the
 * next page view and in the audit log; what workers declared an admin cannot remove.
 * Real PostgreSQL; only next-auth's session read is stubbed.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { failIfLeaseHeld, registerKinds } from '../../db/queue/index.ts';
import { useTestDatabase } from '../../test/db.ts';
import { dalSession } from '../../test/dal-session.ts';
import { addJob, claimOne, uniqueQueue } from '../../test/factories.ts';
import { AuthError } from '../errors.ts';
import { MASK } from '../redaction.ts';
import { addKindRedaction, getAudit, getJobDetail, getKinds, removeKindRedaction } from './index.ts';

vi.mock('next-auth', () => ({ getServerSession: vi.fn<() => Promise<unknown>>() }));

const t = useTestDatabase();
const session = dalSession(t, 'kinds.example.com');
const { email, signIn } = session;

beforeAll(async () => {
  // The configured defaults: masked in every registered kind's payload.
  await session.start({ LEASEHOLD_REDACT_PATHS: 'giftNote, lines[].sku' });
});
afterAll(() => session.close());

const payload = {
  orderId: 'o1',
  email: 'ada@example.com',
  phone: '555-0100',
  apiKey: 'k-secret',
  giftNote: 'happy birthday',
  lines: [{ sku: 'sku-1', qty: 2 }],
};

/** A kind registered at version 1 with `paths`, and a job of it at `version`. */
async function jobOfKind(paths: string[] | null, version = 1, error?: string) {
  const kind = uniqueQueue('dal.kind');
  if (paths) {
    await registerKinds(t.db, [
      { kind, version: 1, defaultQueue: 'default', displayName: kind, redactedPaths: paths, rerunSafe: false },
    ]);
  }
  const queue = uniqueQueue('dal-kinds');
  const job = await addJob(t.db, { queue, kind, kindVersion: version, payload });
  if (error) await failIfLeaseHeld(t.db, await claimOne(t.db, queue), { error, failureClass: 'permanent' });
  return { kind, id: job.id };
}

describe('the job page’s payload', () => {
  it('masks the paths workers registered for its kind version, and the well-known secret keys', async () => {
    const { id } = await jobOfKind(['email']);
    signIn('viewer');
    expect(await getJobDetail(id)).toMatchObject({
      payload: {
        orderId: 'o1',
        email: MASK,
        phone: '555-0100',
        apiKey: MASK,
        giftNote: MASK,
        lines: [{ sku: MASK, qty: 2 }],
      },
      // In jsonb's key order (shorter keys first).
      redactedPaths: ['email', 'lines[0].sku', 'apiKey', 'giftNote'],
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
    expect(seen.defaultPaths).toEqual(['giftNote', 'lines[].sku']);
    signIn('admin');
    expect((await getKinds()).can.editRedaction).toBe(true);
  });

  it('lets an admin add a path: a viewer’s job page masks it in the payload and the error, and the audit log says so', async () => {
    const { kind, id } = await jobOfKind(['email'], 1, 'provider refused 555-0100: 422');
    signIn('viewer');
    expect((await getJobDetail(id))?.payload).toMatchObject({ phone: '555-0100' });
    signIn('admin');
    const result = await addKindRedaction({ kind, path: 'phone', reason: 'a phone is personal' });
    expect(result).toEqual({
      ok: true,
      message: `Saved: phone is now masked in every version of ${kind} for viewers and operators (recorded in the audit log).`,
    });
    signIn('viewer');
    const detail = await getJobDetail(id);
    expect(detail?.payload).toMatchObject({ email: MASK, phone: MASK, orderId: 'o1' });
    expect(detail?.job.lastError).toBe(`provider refused ${MASK}: 422`);
    expect(detail?.attempts[0]?.error).toBe(`provider refused ${MASK}: 422`);
    expect((await getKinds()).kinds.find((k) => k.kind === kind)).toMatchObject({
      redactedPaths: ['email'],
      addedPaths: ['phone'],
    });
    const { entries } = await getAudit({ action: 'add_redacted_path', actor: email('admin') });
    expect(entries[0]).toMatchObject({ outcome: 'applied', affected: 1, reason: 'a phone is personal' });
  });

  it('refuses an operator’s new path (403) and stores nothing', async () => {
    const { kind, id } = await jobOfKind(['email']);
    signIn('operator');
    const error = await addKindRedaction({ kind, path: 'phone' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthError);
    expect((error as AuthError).status).toBe(403);
    const { rows } = await t.pool.query('SELECT path FROM leasehold.kind_redactions WHERE kind = $1', [kind]);
    expect(rows).toEqual([]);
    signIn('viewer');
    expect((await getJobDetail(id))?.payload).toMatchObject({ phone: '555-0100' });
  });

  it('never removes a path the workers declared: refused with a sentence, audited, still masked', async () => {
    const { kind, id } = await jobOfKind(['email']);
    signIn('admin');
    expect(await removeKindRedaction({ kind, path: 'email', reason: 'try to unmask' })).toEqual({
      ok: false,
      message: `email is declared secret by ${kind}’s workers: the dashboard cannot unmask it. Only paths an admin added can be removed.`,
    });
    const { entries } = await getAudit({ action: 'remove_redacted_path', actor: email('admin') });
    expect(entries[0]).toMatchObject({ outcome: 'refused', affected: 0, reason: 'try to unmask' });
    signIn('viewer');
    expect((await getJobDetail(id))?.payload).toMatchObject({ email: MASK });
  });

  it('removes a path an admin added: the field shows again', async () => {
    const { kind, id } = await jobOfKind(['email']);
    signIn('admin');
    expect(await addKindRedaction({ kind, path: 'phone' })).toMatchObject({ ok: true });
    expect(await removeKindRedaction({ kind, path: 'phone' })).toEqual({
      ok: true,
      message: `Removed: phone is no longer masked in ${kind} (recorded in the audit log).`,
    });
    signIn('viewer');
    expect((await getJobDetail(id))?.payload).toMatchObject({ email: MASK, phone: '555-0100' });
  });

  it('refuses, with a sentence, a path for a kind no worker registered', async () => {
    signIn('admin');
    const kind = uniqueQueue('dal.kind');
    expect(await addKindRedaction({ kind, path: 'email' })).toEqual({
      ok: false,
      message: `No worker has registered ${kind}: its payloads are hidden whole, there is nothing to add a path to.`,
    });
  });

  it('refuses a path it could not match as bad input', async () => {
    const { kind } = await jobOfKind(['email']);
    signIn('admin');
    await expect(addKindRedaction({ kind, path: 'not a path' })).rejects.toThrow(/path: expected keys joined by dots/);
  });
});
