/**
 * The dashboard behind single sign-on: a local OpenID Connect provider (test/oidc-provider.ts)
 * and two `next start`s of the same build, configured at run time: one with built-in users
 * beside single sign-on, one with single sign-on only. Sign-in through the provider's login
 * form, the role from its claim (an operator sees operator actions, a viewer does not), a user
 * without the role claim refused with a sentence, sign-out; and the credentials endpoint
 * refusing valid demo credentials once built-in users are off. Identities: an email the
 * provider does not say it verified is refused; an SSO user who calls themselves a built-in
 * user's address is audited apart and signs out only themselves; a session token of the kind
 * issued before SSO sessions were keyed by issuer and subject is no session.
 */
import type { Page } from '@playwright/test';
import { sql } from 'drizzle-orm';
import { encode } from 'next-auth/jwt';
import { run } from '../db/queue/executor.ts';
import { DEMO_PASSWORD } from '../db/users.ts';
import { startOidcProvider, type TestOidcProvider } from '../test/oidc-provider.ts';
import { signIn, signInWithOidc } from '../test/package/session.ts';
import {
  db,
  deadJob,
  expect,
  resetSignInAuditCaps,
  startDashboard,
  test,
  uniqueQueue,
  type DashboardServer,
} from './fixtures.ts';
import { e2ePorts } from './ports.ts';

const PORTS = e2ePorts();
const WITH_USERS = `http://127.0.0.1:${PORTS.app}`;
const SSO_ONLY = `http://127.0.0.1:${PORTS.proxy}`;
const OIDC_PORT = PORTS.oidc;
const SSO_NAME = 'Example SSO';
const REFUSED =
  'Your identity provider signed you in but gave you no Leasehold role: the leasehold_role claim is missing or names no role';
const UNVERIFIED =
  'Your identity provider signed you in but does not say your email address is verified (email_verified)';
/** How the audit log and the header name a single sign-on user of this provider. */
const SSO = `(sso: 127.0.0.1:${OIDC_PORT})`;
/** The server with built-in users signs sessions with a known secret: the test forges an old-style one. */
const SECRET = 'oidc-e2e-secret-8d2f6b1c9a7e4035b2d1f0c3a9e8';

let provider: TestOidcProvider;
const servers: DashboardServer[] = [];

async function startSsoDashboard(base: string, env: Record<string, string>) {
  servers.push(
    await startDashboard(base, {
      LEASEHOLD_OIDC_ISSUER: provider.issuer,
      LEASEHOLD_OIDC_CLIENT_ID: provider.clientId,
      LEASEHOLD_OIDC_CLIENT_SECRET: provider.clientSecret,
      LEASEHOLD_OIDC_NAME: SSO_NAME,
      ...env,
    }),
  );
}

test.beforeAll(async () => {
  test.setTimeout(120_000);
  provider = await startOidcProvider({
    port: OIDC_PORT,
    dashboardUrls: [WITH_USERS, SSO_ONLY],
    accounts: [
      { login: 'olive', email: 'olive@sso.example.com', name: 'Olive', role: 'operator' },
      { login: 'vera', email: 'vera@sso.example.com', name: 'Vera', role: 'viewer' },
      { login: 'nora', email: 'nora@sso.example.com', name: 'Nora' },
      // Unverified at the provider, and named like the built-in admin in another case.
      { login: 'red', email: 'RED-ADMIN@example.com', emailVerified: false, role: 'viewer' },
      { login: 'twin', email: 'admin@example.com', role: 'viewer' },
    ],
  });
  await Promise.all([
    startSsoDashboard(WITH_USERS, { NEXTAUTH_SECRET: SECRET }),
    startSsoDashboard(SSO_ONLY, { LEASEHOLD_BUILTIN_USERS: 'false' }),
  ]);
});

test.afterAll(async () => {
  for (const { child } of servers) child.kill('SIGTERM');
  await Promise.all(
    servers.map(({ child }) => new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)))),
  );
  await provider?.stop();
});

/** Through the provider's development login form (any password) and back to the dashboard. */
async function signInWithSso(page: Page, base: string, login: string) {
  await page.goto(`${base}/login`);
  await page.getByRole('button', { name: `Sign in with ${SSO_NAME}` }).click();
  await page.waitForURL(`${provider.issuer}/**`);
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('any-password');
  await page.getByRole('button', { name: 'Sign-in' }).click();
}

test.describe('single sign-on beside built-in users', () => {
  test('an operator signs in through the provider, lands on the overview with the claim’s role, and may retry', async ({
    page,
  }) => {
    const id = await deadJob(uniqueQueue('sso-op'));
    await signInWithSso(page, WITH_USERS, 'olive');
    await page.waitForURL(`${WITH_USERS}/`);
    await expect(page.getByTestId('who')).toHaveText(`olive@sso.example.com ${SSO} · operator`);
    await page.goto(`${WITH_USERS}/jobs/${id}`);
    await expect(page.getByRole('button', { name: 'Retry' })).toBeVisible();
  });

  test('a viewer signs in with the viewer role and sees no operator actions', async ({ page }) => {
    const id = await deadJob(uniqueQueue('sso-view'));
    await signInWithSso(page, WITH_USERS, 'vera');
    await page.waitForURL(`${WITH_USERS}/`);
    await expect(page.getByTestId('who')).toHaveText(`vera@sso.example.com ${SSO} · viewer`);
    await page.goto(`${WITH_USERS}/jobs/${id}`);
    await expect(page.getByTestId('who')).toBeVisible();
    await expect(page.getByText(id).first()).toBeVisible();
    await expect(page.getByRole('button', { name: 'Retry' })).toHaveCount(0);
  });

  test('a user whose token has no role claim is refused with a sentence and gets no session', async ({ page }) => {
    await signInWithSso(page, WITH_USERS, 'nora');
    await page.waitForURL(/\/login\?error=AccessDenied/);
    await expect(page.locator('p[role="alert"]')).toContainText(REFUSED);
    const session = await (await page.request.get(`${WITH_USERS}/api/auth/session`)).json();
    expect(session).toEqual({});
    await page.goto(`${WITH_USERS}/`);
    await expect(page).toHaveURL(`${WITH_USERS}/login`);
  });

  test('signing out ends the session', async ({ page }) => {
    await signInWithSso(page, WITH_USERS, 'olive');
    await expect(page.getByTestId('who')).toContainText('operator');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${WITH_USERS}/login`);
    expect(await (await page.request.get(`${WITH_USERS}/api/auth/session`)).json()).toEqual({});
    await page.goto(`${WITH_USERS}/jobs`);
    await expect(page).toHaveURL(`${WITH_USERS}/login`);
  });

  test('the login page offers both ways in, and a built-in user still signs in', async ({ page }) => {
    await page.goto(`${WITH_USERS}/login`);
    await expect(page.getByRole('button', { name: `Sign in with ${SSO_NAME}` })).toBeVisible();
    await page.getByLabel('Email').fill('admin@example.com');
    await page.getByLabel('Password').fill(DEMO_PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect(page.getByTestId('who')).toHaveText('admin@example.com · admin');
  });
});

test.describe('single sign-on over plain HTTP (the package consumer test’s flow)', () => {
  test('a script signs in through the provider and reads a job page; one without the role claim is refused', async () => {
    const id = await deadJob(uniqueQueue('sso-http'));
    const cookie = await signInWithOidc(WITH_USERS, 'olive');
    const page = await fetch(`${WITH_USERS}/jobs/${id}`, { headers: { cookie } });
    const html = await page.text();
    expect(page.status).toBe(200);
    expect(html).toContain(id);
    expect(html).toContain('olive@sso.example.com');
    await expect(signInWithOidc(WITH_USERS, 'nora')).rejects.toThrow(/error=AccessDenied/);
  });
});

/** A credentials sign-in over HTTP, as a script would try it: whether a session cookie came back. */
async function credentialsSignIn(page: Page, base: string): Promise<{ status: number; session: boolean }> {
  const { csrfToken } = (await (await page.request.get(`${base}/api/auth/csrf`)).json()) as { csrfToken: string };
  const answer = await page.request.post(`${base}/api/auth/callback/credentials`, {
    form: { csrfToken, email: 'admin@example.com', password: DEMO_PASSWORD, json: 'true' },
    maxRedirects: 0,
  });
  const cookies = await page.context().cookies(base);
  return { status: answer.status(), session: cookies.some((c) => c.name === 'next-auth.session-token') };
}

test.describe('single sign-on only (LEASEHOLD_BUILTIN_USERS=false)', () => {
  test('the login page shows only the single sign-on button', async ({ page }) => {
    await page.goto(`${SSO_ONLY}/login`);
    await expect(page.getByRole('button', { name: `Sign in with ${SSO_NAME}` })).toBeVisible();
    await expect(page.getByLabel('Email')).toHaveCount(0);
    await expect(page.getByLabel('Password')).toHaveCount(0);
  });

  test('the credentials endpoint refuses credentials the other mode accepts', async ({ page }) => {
    // The same request against the server with built-in users signs in: the refusal is the mode's.
    expect(await credentialsSignIn(page, WITH_USERS)).toMatchObject({ session: true });
    await page.context().clearCookies();
    const refused = await credentialsSignIn(page, SSO_ONLY);
    expect(refused.session).toBe(false);
    expect(await (await page.request.get(`${SSO_ONLY}/api/auth/session`)).json()).toEqual({});
  });

  test('an operator still signs in through the provider', async ({ page }) => {
    await signInWithSso(page, SSO_ONLY, 'olive');
    await page.waitForURL(`${SSO_ONLY}/`);
    await expect(page.getByTestId('who')).toHaveText(`olive@sso.example.com ${SSO} · operator`);
  });
});

/** Signs the session in `cookie` out through next-auth, as the Sign out button does. */
async function signOut(base: string, cookie: string) {
  const csrf = await fetch(`${base}/api/auth/csrf`, { headers: { cookie } });
  const { csrfToken } = (await csrf.json()) as { csrfToken: string };
  const withCsrf = [cookie, ...csrf.headers.getSetCookie().map((c) => c.split(';')[0])].join('; ');
  const out = await fetch(`${base}/api/auth/signout`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: withCsrf, origin: base },
    body: new URLSearchParams({ csrfToken, callbackUrl: `${base}/login`, json: 'true' }),
  });
  expect(out.status).toBeLessThan(400);
}

const sessionOf = async (base: string, cookie: string) =>
  (await (await fetch(`${base}/api/auth/session`, { headers: { cookie } })).json()) as { user?: { email?: string } };

const signInAudit = async (actor: string) =>
  (
    await run<{ outcome: string }>(
      db(),
      sql`SELECT outcome FROM leasehold.audit_log WHERE action = 'sign_in' AND actor = ${actor} ORDER BY id`,
    )
  ).map((r) => r.outcome);

test.describe('single sign-on identities', () => {
  // These tests read sign-in audit rows: start below the audit caps (e2e/fixtures.ts).
  test.beforeEach(resetSignInAuditCaps);

  test('an email the provider does not say it verified is refused with a sentence, audited, and gets no session', async ({
    page,
  }) => {
    await signInWithSso(page, WITH_USERS, 'red');
    await page.waitForURL(/\/login\?error=EmailUnverified/);
    await expect(page.locator('p[role="alert"]')).toContainText(UNVERIFIED);
    expect(await (await page.request.get(`${WITH_USERS}/api/auth/session`)).json()).toEqual({});
    expect(await signInAudit(`red-admin@example.com ${SSO}`)).toEqual(['refused']);
    // Never under the bare address, which a built-in user could have.
    expect(await signInAudit('red-admin@example.com')).toEqual([]);
  });

  test('one named like a built-in user is audited apart, and signing it out leaves the built-in user signed in', async () => {
    const admin = await signIn(WITH_USERS, 'admin@example.com', DEMO_PASSWORD);
    const twin = await signInWithOidc(WITH_USERS, 'twin');
    expect((await sessionOf(WITH_USERS, twin)).user).toBeDefined();
    expect(await signInAudit(`admin@example.com ${SSO}`)).toContain('succeeded');
    const html = await (await fetch(`${WITH_USERS}/`, { headers: { cookie: twin } })).text();
    expect(html).toContain(`admin@example.com ${SSO}`);
    await signOut(WITH_USERS, twin);
    expect(await sessionOf(WITH_USERS, twin)).toEqual({});
    expect((await fetch(`${WITH_USERS}/api/overview`, { headers: { cookie: twin } })).status).toBe(401);
    // The built-in admin's session is another identity's: still signed in.
    expect((await fetch(`${WITH_USERS}/api/overview`, { headers: { cookie: admin } })).status).toBe(200);
    expect((await sessionOf(WITH_USERS, admin)).user?.email).toBe('admin@example.com');
  });

  test('a session token as they were issued before the upgrade (keyed by email) is no session', async () => {
    // What lib/auth.ts signed for olive before: the e-mail as actor and key, no sign-in time.
    const token = await encode({
      token: { email: 'olive@sso.example.com', via: 'oidc', actor: 'olive@sso.example.com', role: 'operator', sv: 0 },
      secret: SECRET,
      maxAge: 3600,
    });
    const cookie = `next-auth.session-token=${token}`;
    expect(await sessionOf(WITH_USERS, cookie)).toEqual({});
    expect((await fetch(`${WITH_USERS}/api/overview`, { headers: { cookie } })).status).toBe(401);
    // A session signed in now works with the same secret: the refusal is the token's kind.
    const fresh = await signInWithOidc(WITH_USERS, 'olive');
    expect((await fetch(`${WITH_USERS}/api/overview`, { headers: { cookie: fresh } })).status).toBe(200);
  });
});
