/**
 * Sign-in against real `next start` servers on one database: guessing is throttled with 429,
 * Retry-After and a sentence the login form shows; the limit holds across two dashboard
 * processes; X-Forwarded-For counts only from a trusted proxy (the second server trusts
 * 127.0.0.1, the first trusts nobody); 50 wrong passwords in flight do not stall a viewer's
 * overview (hashing is bounded); a session cookie copied before sign-out is refused after, by
 * /api/auth/session too; a session ends 8 hours after sign-in however often it is refreshed (a
 * third server whose clock runs ahead under faketime); and a bad callbackUrl or an undecodable
 * path is answered 400 with a sentence, not a 500.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { run } from '../db/queue/executor.ts';
import { addUser, DEMO_PASSWORD, disableUser } from '../db/users.ts';
import { freePort } from '../cli/database-select.ts';
import { signIn } from '../test/package/session.ts';
import { db, expect, resetSignInAuditCaps, startDashboard, test, type DashboardServer } from './fixtures.ts';
import { e2ePorts } from './ports.ts';

const FIRST = `http://127.0.0.1:${e2ePorts().web}`;
const SECOND = `http://127.0.0.1:${e2ePorts().second}`;
const PASSWORD = 'sign-in-e2e-password';

let second: DashboardServer | null = null;

test.beforeAll(async () => {
  test.setTimeout(90_000);
  second = await startDashboard(SECOND, { LEASEHOLD_TRUSTED_PROXIES: '127.0.0.1' });
});

async function stop(server: DashboardServer | null) {
  if (!server) return;
  const { child } = server;
  child.kill('SIGTERM');
  await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
}

test.afterAll(async () => {
  await stop(second);
});

let n = 0;
async function newUser(prefix: string): Promise<string> {
  const email = `${prefix}-${Date.now().toString(36)}-${n++}@sign-in.example.com`;
  await addUser(db(), { email, password: PASSWORD, role: 'viewer' });
  return email;
}

/** A CSRF token and its cookie, as next-auth's signIn() fetches them before posting. */
async function csrfOf(base: string) {
  const csrf = await fetch(`${base}/api/auth/csrf`);
  const { csrfToken } = (await csrf.json()) as { csrfToken: string };
  const cookie = csrf.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  return { csrfToken, cookie };
}

/** One guess through next-auth's credentials callback, as its signIn() posts it. */
async function guess(
  base: string,
  email: string,
  password: string,
  headers: Record<string, string> = {},
  csrf?: { csrfToken: string; cookie: string },
) {
  const { csrfToken, cookie } = csrf ?? (await csrfOf(base));
  const answer = await fetch(`${base}/api/auth/callback/credentials`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, origin: base, ...headers },
    body: new URLSearchParams({ csrfToken, email, password, callbackUrl: `${base}/`, json: 'true' }),
  });
  const body = (await answer.json().catch(() => ({}))) as { url?: string; message?: string; error?: string };
  return { status: answer.status, retryAfter: answer.headers.get('retry-after'), body };
}

const auditClients = async (email: string) =>
  (
    await run<{ outcome: string; client: string }>(
      db(),
      sql`SELECT outcome, detail->>'client' AS client FROM leasehold.audit_log
          WHERE action = 'sign_in' AND actor = ${email} ORDER BY id`,
    )
  ).map((r) => `${r.outcome} ${r.client}`);

test.describe('guessing passwords', () => {
  // These tests read sign-in audit rows: start below the audit caps (e2e/fixtures.ts).
  test.beforeEach(resetSignInAuditCaps);

  test('alternating between two dashboard processes meets one limit: 429 with Retry-After and a sentence', async () => {
    const email = await newUser('two');
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await guess(i % 2 === 0 ? FIRST : SECOND, email, `wrong-${i}`)).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
    const refused = await guess(FIRST, email, PASSWORD);
    expect(refused.status).toBe(429);
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(refused.body.message).toMatch(
      /^Too many failed sign-ins for this account\. Wait \d+ seconds? before trying again\.$/,
    );
    expect(refused.body.error).toBe(`SignInThrottled:${refused.retryAfter}`);
    expect(await auditClients(email)).toEqual([
      ...Array.from({ length: 5 }, () => 'failed 127.0.0.1'),
      'throttled 127.0.0.1',
      'throttled 127.0.0.1',
    ]);
  });

  test('the 429’s url is the login page on NEXTAUTH_URL, not the address the server listens on', async () => {
    const email = await newUser('url');
    for (let i = 0; i < 5; i++) expect((await guess(FIRST, email, `wrong-${i}`)).status).toBe(401);
    const refused = await guess(FIRST, email, 'wrong-5');
    expect(refused.status).toBe(429);
    // next start listens as localhost; NEXTAUTH_URL is FIRST.
    expect(refused.body.url).toBe(`${FIRST}/login?error=SignInThrottled%3A${refused.retryAfter}`);
  });

  test('X-Forwarded-For from a peer that is not a trusted proxy is ignored: rotating it does not help', async () => {
    const email = await newUser('rotate');
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++)
      statuses.push((await guess(FIRST, email, `wrong-${i}`, { 'x-forwarded-for': `203.0.113.${i + 1}` })).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
    expect(new Set((await auditClients(email)).map((r) => r.split(' ')[1]))).toEqual(new Set(['127.0.0.1']));
  });

  test('X-Forwarded-For from a trusted proxy names the client', async () => {
    const email = await newUser('proxied');
    // Seven failures from seven addresses, each below its pair's limit (and the account's ceiling).
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++)
      statuses.push((await guess(SECOND, email, `wrong-${i}`, { 'x-forwarded-for': `198.51.100.${i + 1}` })).status);
    expect(statuses).toEqual(Array.from({ length: 7 }, () => 401));
    expect(await auditClients(email)).toEqual(Array.from({ length: 7 }, (_, i) => `failed 198.51.100.${i + 1}`));
  });

  test('the login form shows the sentence and the wait', async ({ page }) => {
    const email = await newUser('form');
    await page.goto('/login');
    await page.getByLabel('Email').fill(email);
    // The form's own alert (Next.js has a route announcer with that role too).
    const alert = page.locator('.login [role="alert"]');
    await page.getByLabel('Password').fill('wrong-0');
    await page.getByRole('button', { name: /^Sign in/ }).click();
    await expect(alert).toHaveText('Those credentials did not work. Check the email and password.');
    // The account as if it had met its ceiling a moment ago (the counting is the tests above):
    // a wait long enough that a slow browser still sees it.
    await run(
      db(),
      sql`UPDATE leasehold.sign_in_throttle SET failures = 30, blocked_until = now() + interval '90 seconds'
          WHERE account = ${email} AND client = ''`,
    );
    // React resets the form after each submission: both fields again.
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: /^Sign in/ }).click();
    await expect(alert).toHaveText(
      /^Too many failed sign-ins for this account\. Wait 1 minute (2\d|30) seconds before trying again\.$/,
    );
    await expect(page.getByRole('button', { name: /^Sign in \(wait \d+ s\)$/ })).toBeDisabled();
    await expect(page).toHaveURL(/\/login/);
  });

  test('50 wrong passwords in flight leave a viewer’s overview answering within a second', async () => {
    const cookie = await signIn(FIRST, 'viewer@example.com', DEMO_PASSWORD);
    const accounts = await Promise.all(Array.from({ length: 50 }, (_, i) => newUser(`flood-${i}`)));
    // The CSRF round trips first, so that what is in flight is the 50 guesses themselves.
    const tokens = await Promise.all(accounts.map(() => csrfOf(FIRST)));
    let settled = 0;
    const flood = accounts.map((email, i) =>
      guess(FIRST, email, 'wrong-password', {}, tokens[i]).finally(() => settled++),
    );
    // The overview, asked again and again while guesses are in flight: the slowest answer counts.
    const probes: { ms: number; status: number }[] = [];
    while (settled < 50) {
      const started = performance.now();
      const overview = await fetch(`${FIRST}/api/overview`, { headers: { cookie } });
      await overview.arrayBuffer();
      if (settled < 50) probes.push({ ms: performance.now() - started, status: overview.status });
      await new Promise((r) => setTimeout(r, 100));
    }
    const results = await Promise.all(flood);
    const slowest = Math.max(...probes.map((p) => p.ms));
    console.log(
      `overview with 50 guesses in flight: slowest ${slowest.toFixed(0)} ms of ${probes.length} (${probes.map((p) => p.ms.toFixed(0)).join(', ')})`,
    );
    expect(probes.length).toBeGreaterThanOrEqual(3);
    expect(probes.map((p) => p.status)).toEqual(probes.map(() => 200));
    expect(results.map((r) => r.status)).toEqual(Array.from({ length: 50 }, () => 401));
    expect(slowest).toBeLessThan(1000);
  });
});

test.describe('a session', () => {
  test('cookie copied before sign-out is refused after it', async () => {
    const email = await newUser('signout');
    const cookie = await signIn(FIRST, email, PASSWORD);
    expect((await fetch(`${FIRST}/api/overview`, { headers: { cookie } })).status).toBe(200);
    const csrf = await fetch(`${FIRST}/api/auth/csrf`, { headers: { cookie } });
    const { csrfToken } = (await csrf.json()) as { csrfToken: string };
    const withCsrf = [cookie, ...csrf.headers.getSetCookie().map((c) => c.split(';')[0])].join('; ');
    const out = await fetch(`${FIRST}/api/auth/signout`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: withCsrf, origin: FIRST },
      body: new URLSearchParams({ csrfToken, callbackUrl: `${FIRST}/login`, json: 'true' }),
    });
    expect(out.status).toBeLessThan(400);
    // The copy still carries a valid, unexpired JWT: only the session version refuses it.
    expect((await fetch(`${FIRST}/api/overview`, { headers: { cookie } })).status).toBe(401);
    expect((await fetch(`${SECOND}/api/overview`, { headers: { cookie } })).status).toBe(401);
    // And next-auth's own endpoint says so: no user, no fresh cookie, the old one cleared.
    const session = await fetch(`${FIRST}/api/auth/session`, { headers: { cookie } });
    expect(await session.json()).toEqual({});
    const cleared = session.headers.getSetCookie().filter((c) => c.startsWith('next-auth.session-token='));
    expect(cleared.length).toBeGreaterThan(0);
    for (const c of cleared) expect(c).toMatch(/^next-auth\.session-token=;/);
  });

  test('cookie from before a password change or disabling is refused after it', async () => {
    const changed = await newUser('changed');
    const disabled = await newUser('disabled');
    const a = await signIn(FIRST, changed, PASSWORD);
    const b = await signIn(FIRST, disabled, PASSWORD);
    await addUser(db(), { email: changed, password: 'another-password-1', role: 'viewer' });
    await disableUser(db(), disabled);
    expect((await fetch(`${FIRST}/api/overview`, { headers: { cookie: a } })).status).toBe(401);
    expect((await fetch(`${FIRST}/api/overview`, { headers: { cookie: b } })).status).toBe(401);
  });
});

/**
 * The LD_PRELOAD that faketime(1) puts in front of a command (Debian: /usr/$LIB/faketime/
 * libfaketime.so.1), asked of faketime itself. The server is started with it and without
 * FAKETIME, so libfaketime reads the offset from FAKETIME_TIMESTAMP_FILE on every call
 * (FAKETIME_NO_CACHE): the test moves the server's clock without restarting it.
 * FAKETIME_DONT_FAKE_MONOTONIC keeps Node's timers on the real clock.
 */
function faketimePreload(): string {
  const faketime = '/usr/bin/faketime';
  if (!existsSync(faketime))
    throw new Error('this test needs faketime (Debian: apt-get install faketime), which moves a server’s clock');
  return execFileSync(faketime, ['-f', '+0', 'printenv', 'LD_PRELOAD'], { encoding: 'utf8' }).trim();
}

test.describe('a session’s lifetime', () => {
  let ahead: DashboardServer | null = null;
  let base = '';
  let dir = '';
  let offsetFile = '';
  /** Sets the faketime server's clock `hours` ahead of the real one. */
  const clockAhead = (hours: number) => writeFileSync(offsetFile, `+${Math.round(hours * 3600)}\n`);

  test.beforeAll(async () => {
    test.setTimeout(90_000);
    dir = mkdtempSync(path.join(os.tmpdir(), 'leasehold-faketime-'));
    offsetFile = path.join(dir, 'offset');
    clockAhead(0);
    base = `http://127.0.0.1:${await freePort()}`;
    ahead = await startDashboard(base, {
      LD_PRELOAD: faketimePreload(),
      FAKETIME_TIMESTAMP_FILE: offsetFile,
      FAKETIME_NO_CACHE: '1',
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    });
  });

  test.afterAll(async () => {
    await stop(ahead);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** /api/auth/session with `cookie`: the user it names and the session cookie it sets. */
  async function refresh(cookie: string) {
    const answer = await fetch(`${base}/api/auth/session`, { headers: { cookie } });
    const body = (await answer.json()) as { user?: { email?: string }; expires?: string };
    const set = answer.headers
      .getSetCookie()
      .find((c) => c.startsWith('next-auth.session-token='))
      ?.split(';')[0];
    return { body, cookie: set ?? null };
  }

  test('ends 8 hours after sign-in however often it is refreshed: +4 h and +7.5 h refresh, +8.2 h is refused', async () => {
    const email = await newUser('lifetime');
    const signedIn = await signIn(base, email, PASSWORD);
    const signedInAt = Date.now();
    const token = (c: string) => c.split('; ').find((p) => p.startsWith('next-auth.session-token='))!;
    let cookie = token(signedIn);

    clockAhead(4);
    const at4 = await refresh(cookie);
    expect(at4.body.user?.email).toBe(email);
    expect(at4.cookie).toMatch(/^next-auth\.session-token=.+/);
    // What the client is told: the end of the 8 hours from sign-in, not 8 hours from now.
    expect(Math.abs(Date.parse(at4.body.expires!) - (signedInAt + 8 * 3600_000))).toBeLessThan(120_000);
    cookie = at4.cookie!;

    clockAhead(7.5);
    const at75 = await refresh(cookie);
    expect(at75.body.user?.email).toBe(email);
    expect(at75.cookie).toMatch(/^next-auth\.session-token=.+/);
    cookie = at75.cookie!;
    expect((await fetch(`${base}/api/overview`, { headers: { cookie } })).status).toBe(200);

    clockAhead(8.2);
    const at82 = await refresh(cookie);
    expect(at82.body).toEqual({});
    // The cookie is cleared, not renewed.
    expect(at82.cookie).toBe('next-auth.session-token=');
    expect((await fetch(`${base}/api/overview`, { headers: { cookie } })).status).toBe(401);
  });
});

test.describe('answers instead of 500s', () => {
  test('a callbackUrl that is not a URL on credentials sign-in is answered 400 with a sentence', async () => {
    const email = await newUser('callback');
    const { csrfToken, cookie } = await csrfOf(FIRST);
    const answer = await fetch(`${FIRST}/api/auth/callback/credentials`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, origin: FIRST },
      body: new URLSearchParams({
        csrfToken,
        email,
        password: PASSWORD,
        callbackUrl: `${FIRST}.evil.example/`,
        json: 'true',
      }),
    });
    expect(answer.status).toBe(400);
    expect(await answer.json()).toEqual({
      message:
        'callbackUrl is neither a path on this dashboard (such as /jobs) nor a URL: after signing in, the dashboard goes only to its own pages.',
    });
    expect(answer.headers.getSetCookie().some((c) => c.startsWith('next-auth.session-token='))).toBe(false);
  });

  test('a queue name that is not valid percent-encoding is answered 400 with a sentence', async () => {
    const cookie = await signIn(FIRST, 'operator@example.com', DEMO_PASSWORD);
    for (const target of ['/api/queues/%E0%A4%A/pause', '/api/jobs/%E0%A4%A/cancel']) {
      const answer = await fetch(`${FIRST}${target}`, { method: 'POST', headers: { cookie, origin: FIRST } });
      expect(answer.status, target).toBe(400);
      expect(await answer.json(), target).toEqual({
        ok: false,
        message:
          'The address is not valid percent-encoding (each %XX must spell UTF-8): check the link, or encode the queue name or job id in it with encodeURIComponent.',
      });
    }
    const page = await fetch(`${FIRST}/jobs/%E0%A4%A`, { headers: { cookie } });
    expect(page.status).toBe(400);
    expect(await page.text()).toMatch(/^The address is not valid percent-encoding/);
  });
});
