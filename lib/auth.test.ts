/**
 * Sign-in through next-auth's credentials callback (authorize) and the session it makes, short
 * of HTTP: the throttle refuses a guess before any hash runs, every sign-in is an audit row
 * with the client's address, the hash keeps its parameters and at most HASH_CONCURRENCY run
 * at once; and a session ends at sign-out, a password change and disabling (the token's
 * session version against leasehold.session_versions). Real PostgreSQL; next-auth's session
 * read is stubbed with what its session callback makes of the token.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { NextAuthOptions, User } from 'next-auth';
import { decode, type JWT } from 'next-auth/jwt';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { run } from '../db/queue/executor.ts';
import { useTestDatabase } from '../test/db.ts';

vi.mock('next-auth', () => ({ getServerSession: vi.fn<() => Promise<unknown>>() }));

const t = useTestDatabase();
const PASSWORD = 'right-password-1';
const OIDC = {
  LEASEHOLD_OIDC_ISSUER: 'https://login.example.com',
  LEASEHOLD_OIDC_CLIENT_ID: 'leasehold',
  LEASEHOLD_OIDC_CLIENT_SECRET: 'secret',
};

type Modules = Awaited<ReturnType<typeof load>>;
let m: Modules;

async function load() {
  vi.resetModules();
  Object.assign(process.env, {
    DATABASE_URL: t.url,
    NEXTAUTH_SECRET: randomBytes(24).toString('hex'),
    LEASEHOLD_DEMO: 'false',
    NEXTAUTH_URL: 'http://127.0.0.1:3000',
    ...OIDC,
  });
  const { getServerSession } = await import('next-auth');
  return {
    getServerSession: vi.mocked(getServerSession),
    auth: await import('./auth.ts'),
    context: await import('./sign-in-context.ts'),
    users: await import('../db/users.ts'),
    session: await import('./dal/session.ts'),
    db: await import('./db.ts'),
    sso: await import('./sso.ts'),
    env: await import('./env.ts'),
  };
}

beforeAll(async () => {
  m = await load();
});
afterAll(async () => {
  await m.db.closeDatabase();
});

let n = 0;
async function newUser(role: 'viewer' | 'operator' = 'viewer') {
  const email = `user-${n++}@sign-in.example.com`;
  await m.users.addUser(t.db, { email, password: PASSWORD, role });
  return email;
}

function options(): NextAuthOptions {
  return m.auth.authOptions();
}

/** authorize, as next-auth's credentials callback calls it, from `client`. */
async function guess(email: string, password: string, client: string) {
  const provider = options().providers.find((p) => p.id === 'credentials') as unknown as {
    options: { authorize: (c: Record<string, string>) => Promise<User | null> };
  };
  const request = { client, throttled: null as { seconds: number } | null };
  try {
    const user = await m.context.withSignInRequest(request, () => provider.options.authorize({ email, password }));
    return { user, throttled: request.throttled, error: null };
  } catch (error) {
    return { user: null, throttled: request.throttled, error: (error as Error).message };
  }
}

/** The session next-auth would make for `user` (jwt then session callbacks), as getServerSession returns it. */
async function sessionOf(user: User, provider = 'credentials') {
  const o = options();
  const token = (await o.callbacks!.jwt!({
    token: { email: user.email, name: user.name },
    user,
    account: { provider, type: provider === 'credentials' ? 'credentials' : 'oauth', providerAccountId: user.id },
  } as never)) as JWT;
  const session = await o.callbacks!.session!({
    session: { user: { email: user.email, name: user.name }, expires: new Date(Date.now() + 3_600_000).toISOString() },
    token,
  } as never);
  return { token, session };
}

/** A later read of the token, as next-auth's session route makes it: the token, or the refusal. */
async function refresh(token: JWT): Promise<JWT | Error> {
  try {
    return (await options().callbacks!.jwt!({ token } as never)) as JWT;
  } catch (error) {
    return error as Error;
  }
}

/** A single sign-on user as the provider's profile step makes them from the ID token's claims. */
function ssoUser(claims: Record<string, unknown>): User {
  return m.sso.oidcUser(claims, m.env.webEnv().oidc!) as unknown as User;
}

async function viewerWith(session: unknown) {
  m.getServerSession.mockResolvedValue(session as never);
  return m.session.getViewer();
}

const auditRows = (actor: string) =>
  run<{ outcome: string; affected: number; detail: { client: string; via: string; retry_after?: number } }>(
    t.db,
    sql`SELECT outcome, affected, detail FROM leasehold.audit_log WHERE action = 'sign_in' AND actor = ${actor} ORDER BY id`,
  );

describe('guessing a password', () => {
  it('is refused from the sixth failure on, with the wait, before any hash runs; another address still gets in', async () => {
    const email = await newUser();
    for (let i = 0; i < 5; i++) expect(await guess(email, `wrong-${i}`, '192.0.2.10')).toMatchObject({ user: null });
    const hashes = m.users.hashSlots.started;
    const refused = await guess(email, 'wrong-again', '192.0.2.10');
    expect(refused.error).toMatch(/^SignInThrottled:\d+$/);
    expect(refused.throttled?.seconds).toBeGreaterThanOrEqual(1);
    // The right password is refused too while the pair waits, and no hash ran for either.
    expect((await guess(email, PASSWORD, '192.0.2.10')).error).toMatch(/^SignInThrottled:/);
    expect(m.users.hashSlots.started).toBe(hashes);
    expect((await guess(email, PASSWORD, '192.0.2.11')).user).toMatchObject({ email });
  });

  it('writes an audit row for each failure, refusal and success, naming the client address', async () => {
    const email = await newUser();
    await guess(email, 'wrong', '198.51.100.7');
    await guess(email, PASSWORD, '198.51.100.8');
    for (let i = 0; i < 6; i++) await guess(email, 'wrong', '198.51.100.9');
    const rows = await auditRows(email);
    expect(rows.map((r) => [r.outcome, r.detail.client])).toEqual([
      ['failed', '198.51.100.7'],
      ['succeeded', '198.51.100.8'],
      ...Array.from({ length: 5 }, () => ['failed', '198.51.100.9']),
      ['throttled', '198.51.100.9'],
    ]);
    expect(rows[1]).toMatchObject({ affected: 1, detail: { via: 'credentials' } });
    expect(rows[6]!.detail.retry_after).toBe(2);
    expect(rows[7]!.detail.retry_after).toBeGreaterThanOrEqual(1);
  });

  it('audits a single sign-on refused for want of a role, and one let in, under its SSO name', async () => {
    const signIn = options().callbacks!.signIn!;
    const account = { provider: 'oidc', type: 'oauth', providerAccountId: 'x' };
    const refused = ssoUser({ sub: 'nobody-1', email: 'nobody@sso.example.com', email_verified: true });
    const admitted = ssoUser({
      sub: 'ada-1',
      email: 'ada@sso.example.com',
      email_verified: true,
      leasehold_role: 'viewer',
    });
    await m.context.withSignInRequest({ client: '203.0.113.4', throttled: null }, async () => {
      expect(await signIn({ user: refused, account } as never)).toBe(false);
      expect(await signIn({ user: admitted, account } as never)).toBe(true);
    });
    expect(
      (await auditRows('nobody@sso.example.com (sso: login.example.com)')).map((r) => [r.outcome, r.detail]),
    ).toEqual([['refused', { via: 'oidc', client: '203.0.113.4' }]]);
    expect((await auditRows('ada@sso.example.com (sso: login.example.com)')).map((r) => r.outcome)).toEqual([
      'succeeded',
    ]);
  });

  it('refuses a single sign-on whose email the provider does not say it verified, to a page that says so', async () => {
    const signIn = options().callbacks!.signIn!;
    const account = { provider: 'oidc', type: 'oauth', providerAccountId: 'x' };
    const claims = { sub: 'red-1', email: 'RED-ADMIN@example.com', leasehold_role: 'viewer' };
    for (const unverified of [claims, { ...claims, email_verified: false }, { ...claims, email_verified: 'false' }]) {
      expect(await signIn({ user: ssoUser(unverified), account } as never)).toBe('/login?error=EmailUnverified');
    }
    expect((await auditRows('red-admin@example.com (sso: login.example.com)')).map((r) => r.outcome)).toEqual([
      'refused',
      'refused',
      'refused',
    ]);
    // A verified one, and one without an email claim (nothing to vouch for), sign in.
    expect(await signIn({ user: ssoUser({ ...claims, email_verified: true }), account } as never)).toBe(true);
    expect(
      await signIn({
        user: ssoUser({ sub: 'red-2', preferred_username: 'red', leasehold_role: 'viewer' }),
        account,
      } as never),
    ).toBe(true);
  });
});

describe('the password hash', () => {
  it('keeps its parameters: scrypt N=16384 r=8 p=1, 32 bytes', async () => {
    expect(m.users.SCRYPT_PARAMS).toEqual({ N: 16384, r: 8, p: 1, keylen: 32 });
    const stored = await m.users.hashPassword(PASSWORD);
    const [scheme, N, r, p, salt, hash] = stored.split('$');
    expect([scheme, N, r, p]).toEqual(['scrypt', '16384', '8', '1']);
    expect(Buffer.from(salt!, 'base64')).toHaveLength(16);
    expect(Buffer.from(hash!, 'base64')).toHaveLength(32);
  });

  it('runs at most two at once; the others wait their turn', async () => {
    const stored = await m.users.hashPassword(PASSWORD);
    let most = 0;
    const watch = setInterval(() => {
      most = Math.max(most, m.users.hashSlots.active);
    }, 1);
    const checks = Array.from({ length: 12 }, (_, i) => m.users.verifyPassword(i === 0 ? PASSWORD : 'wrong', stored));
    expect(m.users.hashSlots.pending).toBe(12 - m.users.HASH_CONCURRENCY);
    expect(await Promise.all(checks)).toEqual([true, ...Array.from({ length: 11 }, () => false)]);
    clearInterval(watch);
    expect(m.users.HASH_CONCURRENCY).toBe(2);
    expect(most).toBe(2);
  });

  it('runs for an unknown email too, so timing does not tell which emails exist', async () => {
    const before = m.users.hashSlots.started;
    expect(await m.users.authenticate(t.db, 'nobody-at-all@sign-in.example.com', PASSWORD)).toBeNull();
    expect(m.users.hashSlots.started).toBe(before + 1);
  });
});

describe('a session', () => {
  async function signedIn(role: 'viewer' | 'operator' = 'operator') {
    const email = await newUser(role);
    const { user } = await guess(email, PASSWORD, '192.0.2.50');
    expect(user).not.toBeNull();
    const { token, session } = await sessionOf(user!);
    expect(await viewerWith(session)).toEqual({ email, role });
    return { email, token, session };
  }

  it('issued before sign-out is refused after it; signing in again works', async () => {
    const { email, token, session } = await signedIn();
    await options().events!.signOut!({ token, session } as never);
    expect(await viewerWith(session)).toBeNull();
    const { user } = await guess(email, PASSWORD, '192.0.2.50');
    expect(await viewerWith((await sessionOf(user!)).session)).toMatchObject({ email });
  });

  it('issued before a password change is refused after it', async () => {
    const { email, session } = await signedIn();
    expect(await m.users.addUser(t.db, { email, password: 'changed-password', role: 'operator' })).toMatchObject({
      outcome: 'updated',
    });
    expect(await viewerWith(session)).toBeNull();
  });

  it('issued before disabling is refused after it, and stays refused when the user is enabled again', async () => {
    const { email, session } = await signedIn();
    expect(await m.users.disableUser(t.db, email)).toEqual({ outcome: 'disabled' });
    expect(await viewerWith(session)).toBeNull();
    // A plain add does not enable them again (nothing is written); --enable does, and the old
    // session still does not come back.
    expect(await m.users.addUser(t.db, { email, password: PASSWORD, role: 'operator' })).toMatchObject({
      outcome: 'disabled',
    });
    expect(
      await m.users.addUser(t.db, { email, password: PASSWORD, role: 'operator' }, { enable: true }),
    ).toMatchObject({ outcome: 'enabled' });
    expect(await viewerWith(session)).toBeNull();
  });

  it('of single sign-on ends at sign-out too', async () => {
    const user = ssoUser({
      sub: 'grace-1',
      email: 'grace@sso.example.com',
      email_verified: true,
      leasehold_role: 'operator',
    });
    const { token, session } = await sessionOf(user, 'oidc');
    expect(await viewerWith(session)).toEqual({
      email: 'grace@sso.example.com (sso: login.example.com)',
      role: 'operator',
    });
    await options().events!.signOut!({ token, session } as never);
    expect(await viewerWith(session)).toBeNull();
  });

  it('is answered as none by /api/auth/session after sign-out, its cookie cleared, for a copied cookie', async () => {
    const { token, session } = await signedIn();
    // next-auth's answer for a cookie it could decode: the user and a renewed cookie.
    const answer = () =>
      new Response(JSON.stringify(session), {
        headers: [
          ['content-type', 'application/json'],
          ['set-cookie', 'next-auth.session-token=renewed; Path=/; HttpOnly; SameSite=Lax'],
          ['set-cookie', 'next-auth.csrf-token=kept; Path=/'],
        ],
      });
    const before = await m.auth.checkedSessionAnswer(answer());
    expect(await before.json()).toEqual(session);
    await options().events!.signOut!({ token, session } as never);
    const after = await m.auth.checkedSessionAnswer(answer());
    expect(await after.json()).toEqual({});
    expect(after.headers.getSetCookie()).toEqual([
      'next-auth.session-token=; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; HttpOnly; SameSite=Lax',
      'next-auth.csrf-token=kept; Path=/',
    ]);
  });

  it('of a single sign-on identity named like a built-in user is audited apart and signs out only itself', async () => {
    const builtin = await signedIn('operator');
    // At the provider, someone gave themselves the built-in user's address (verified there).
    const twin = ssoUser({
      sub: 'twin-1',
      email: builtin.email.toUpperCase(),
      email_verified: true,
      leasehold_role: 'viewer',
    });
    const sso = await sessionOf(twin, 'oidc');
    expect(await viewerWith(sso.session)).toEqual({
      email: `${builtin.email} (sso: login.example.com)`,
      role: 'viewer',
    });
    expect(sso.token.sk).toBe('sso https://login.example.com twin-1');
    await options().events!.signOut!({ token: sso.token, session: sso.session } as never);
    expect(await viewerWith(sso.session)).toBeNull();
    // The built-in user's session is untouched: another key, another version.
    expect(await viewerWith(builtin.session)).toEqual({ email: builtin.email, role: 'operator' });
  });
});

describe('a session’s lifetime', () => {
  const HOUR = 3600;
  const at = (token: JWT, seconds: number) => ({ ...token, signedInAt: Math.floor(Date.now() / 1000) - seconds });
  async function freshToken() {
    const email = await newUser();
    const { user } = await guess(email, PASSWORD, '192.0.2.60');
    return (await sessionOf(user!)).token;
  }

  it('is 8 hours in the token next-auth signs, not next-auth’s 30 days', async () => {
    const o = options();
    expect(o.session?.maxAge).toBe(8 * HOUR);
    expect(o.jwt?.maxAge).toBe(8 * HOUR);
    const token = await freshToken();
    expect(token.signedInAt).toBeCloseTo(Date.now() / 1000, -1);
    // As next-auth's callback route calls it at sign-in: `jwt.maxAge` (30 days when unset).
    const signed = await o.jwt!.encode!({ token, secret: o.secret!, maxAge: 30 * 24 * HOUR });
    const decoded = (await decode({ token: signed, secret: o.secret! }))!;
    expect(Number(decoded.exp) - Number(token.signedInAt)).toBeLessThanOrEqual(8 * HOUR);
    expect(Number(decoded.exp) - Number(token.signedInAt)).toBeGreaterThan(8 * HOUR - 60);
  });

  it('ends 8 hours after sign-in however often it was refreshed: the re-signed token expires then', async () => {
    const o = options();
    const token = at(await freshToken(), 7.5 * HOUR);
    const refreshed = await refresh(token);
    expect(refreshed).not.toBeInstanceOf(Error);
    // A refresh re-signs with `session.maxAge`: capped at what is left of the 8 hours.
    const signed = await o.jwt!.encode!({ token: refreshed as JWT, secret: o.secret!, maxAge: 8 * HOUR });
    const left = Number((await decode({ token: signed, secret: o.secret! }))!.exp) - Date.now() / 1000;
    expect(left).toBeGreaterThan(0.5 * HOUR - 60);
    expect(left).toBeLessThanOrEqual(0.5 * HOUR + 1);
    // Past the 8 hours the token itself is refused, whatever its own expiry says.
    const late = await refresh(at(token, 8 * HOUR + 1));
    expect(late).toBeInstanceOf(Error);
    expect((late as Error).message).toBe('signed in more than 8 hours ago');
    // The session the client is told about ends then too.
    const session = await o.callbacks!.session!({
      session: { user: { email: token.email }, expires: new Date(Date.now() + 8 * HOUR * 1000).toISOString() },
      token,
    } as never);
    expect(Date.parse(session.expires) / 1000).toBeCloseTo(Number(token.signedInAt) + 8 * HOUR, -1);
  });

  it('is refused without a sign-in time (a token from before the limit): everyone signs in once', async () => {
    const { signedInAt: _, ...old } = await freshToken();
    const refused = await refresh(old as JWT);
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toBe('the token has no sign-in time');
  });
});
