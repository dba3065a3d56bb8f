/**
 * Sessions of both ways in, as the policy layer sees them: a single sign-on user has no users
 * row and acts with the role its identity provider's claim gave it (the audit log names it);
 * a built-in user's session ends at once when built-in users are switched off. Real PostgreSQL;
 * only next-auth's session read is stubbed. lib/env.ts reads the environment once per module
 * instance, so each configuration imports the DAL afresh.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { failIfLeaseHeld } from '../../db/queue/index.ts';
import { upsertUser } from '../../db/users.ts';
import { useTestDatabase } from '../../test/db.ts';
import { addJob, claimOne, uniqueQueue } from '../../test/factories.ts';

vi.mock('next-auth', () => ({ getServerSession: vi.fn<() => Promise<unknown>>() }));

const t = useTestDatabase();
const BUILTIN = 'operator@session.example.com';
const expires = () => new Date(Date.now() + 3_600_000).toISOString();

beforeAll(async () => {
  await upsertUser(t.db, { email: BUILTIN, password: 'session-test-password', role: 'operator' });
});

let close: (() => Promise<void>) | null = null;
afterEach(async () => {
  await close?.();
  close = null;
});

/** The DAL and next-auth's stub, imported afresh under `env`. */
async function dalWith(env: Record<string, string>) {
  vi.resetModules();
  for (const key of Object.keys(process.env)) if (key.startsWith('LEASEHOLD_')) delete process.env[key];
  Object.assign(process.env, {
    DATABASE_URL: t.url,
    NEXTAUTH_SECRET: randomBytes(24).toString('hex'),
    LEASEHOLD_DEMO: 'false',
    NEXTAUTH_URL: 'http://127.0.0.1:3000',
    ...env,
  });
  const { getServerSession } = await import('next-auth');
  const dal = await import('./index.ts');
  const db = await import('../db.ts');
  close = db.closeDatabase;
  return {
    dal,
    session: (user: Record<string, unknown>) =>
      vi.mocked(getServerSession).mockResolvedValue({ user, expires: expires() }),
  };
}

const OIDC = {
  LEASEHOLD_OIDC_ISSUER: 'https://login.example.com',
  LEASEHOLD_OIDC_CLIENT_ID: 'leasehold',
  LEASEHOLD_OIDC_CLIENT_SECRET: 'secret',
};

/** What lib/auth.ts puts in a single sign-on session: the audit name, the issuer, the session key. */
const ssoUser = (email: string, role: string) => ({
  email,
  via: 'oidc',
  actor: `${email} (sso: login.example.com)`,
  iss: 'https://login.example.com',
  sk: `sso https://login.example.com ${email}-subject`,
  role,
});

async function deadJob() {
  const queue = uniqueQueue('session-dead');
  const job = await addJob(t.db, { queue });
  await failIfLeaseHeld(t.db, await claimOne(t.db, queue), { error: 'refused: 422', failureClass: 'permanent' });
  return job;
}

describe('a single sign-on session', () => {
  it('acts with the role from its claim, without a users row, and the audit log names it', async () => {
    const { dal, session } = await dalWith(OIDC);
    session(ssoUser('grace@sso.example.com', 'operator'));
    expect(await dal.getViewer()).toEqual({
      email: 'grace@sso.example.com (sso: login.example.com)',
      role: 'operator',
    });
    const job = await deadJob();
    expect(await dal.retryJob({ id: job.id })).toMatchObject({ ok: true });
    const { rows } = await t.pool.query('SELECT actor FROM leasehold.audit_log WHERE $1::uuid = ANY(job_ids)', [
      job.id,
    ]);
    expect(rows).toEqual([{ actor: 'grace@sso.example.com (sso: login.example.com)' }]);
    await expect(dal.previewBulk({ action: 'retry', filter: {} })).rejects.toThrow(/needs the admin role/);
  });

  it('is refused with a role no claim could give, and once single sign-on is switched off', async () => {
    const sso = ssoUser('grace@sso.example.com', 'root');
    const on = await dalWith(OIDC);
    on.session(sso);
    expect(await on.dal.getViewer()).toBeNull();
    await close?.();
    const off = await dalWith({});
    off.session({ ...sso, role: 'admin' });
    expect(await off.dal.getViewer()).toBeNull();
  });
});

describe('a single sign-on session from before sessions were keyed by issuer and subject', () => {
  it('is refused: no session key, or another issuer than the configured one', async () => {
    const { dal, session } = await dalWith(OIDC);
    // As lib/auth.ts wrote them before: the e-mail as actor and session-version key.
    session({ email: 'hal@sso.example.com', via: 'oidc', actor: 'hal@sso.example.com', role: 'operator' });
    expect(await dal.getViewer()).toBeNull();
    session({ ...ssoUser('hal@sso.example.com', 'operator'), iss: 'https://old-login.example.com' });
    expect(await dal.getViewer()).toBeNull();
    session(ssoUser('hal@sso.example.com', 'operator'));
    expect(await dal.getViewer()).toMatchObject({ role: 'operator' });
  });
});

describe('built-in users switched off', () => {
  it('ends a built-in user’s session at once; single sign-on still works', async () => {
    const { dal, session } = await dalWith({ ...OIDC, LEASEHOLD_BUILTIN_USERS: 'false' });
    session({ email: BUILTIN, role: 'operator', via: 'credentials' });
    expect(await dal.getViewer()).toBeNull();
    session({ email: BUILTIN, role: 'operator' }); // a session from before `via` was recorded
    expect(await dal.getViewer()).toBeNull();
    session(ssoUser('ada@sso.example.com', 'viewer'));
    expect(await dal.getViewer()).toEqual({ email: 'ada@sso.example.com (sso: login.example.com)', role: 'viewer' });
  });

  it('leaves a built-in user’s session working while they are on', async () => {
    const { dal, session } = await dalWith(OIDC);
    session({ email: BUILTIN, role: 'operator', via: 'credentials' });
    expect(await dal.getViewer()).toEqual({ email: BUILTIN, role: 'operator' });
  });
});
