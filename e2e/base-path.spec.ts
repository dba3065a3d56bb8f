/**
 * The dashboard under a base path, behind a reverse proxy that forwards only `/leasehold/*`
 * (anything else is its 404): built by `leasehold dashboard build --base-path /leasehold`, served
 * by `leasehold dashboard` as a login that has only the role leasehold_dashboard. The browser's
 * every request (redirect hops included) stays under the prefix: sign-in, a job page, a retry,
 * sign-out.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import httpProxy from 'http-proxy';
import pg from 'pg';
import { applyRoles } from '../db/roles.ts';
import { upsertUser } from '../db/users.ts';
import { db, deadJob, expect, test, uniqueQueue } from './fixtures.ts';
import { e2ePorts } from './ports.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const PREFIX = '/leasehold';
const { app: APP_PORT, proxy: PROXY_PORT } = e2ePorts();
const ORIGIN = `http://127.0.0.1:${PROXY_PORT}`;
const BUILD_DIR = path.join(ROOT, '.leasehold', 'e2e-base-path');
const OPERATOR = { email: 'base-path-operator@example.com', password: 'base-path-password-1' };

const underPrefix = (pathname: string) =>
  pathname === PREFIX || pathname.startsWith(`${PREFIX}/`) || pathname.startsWith(`${PREFIX}?`);

/** `leasehold <args>` from this checkout, as a user runs it (only the environment given, plus PATH and HOME). */
function leasehold(args: string[], env: Record<string, string>, output: string[]): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'cli', 'main.ts'), ...args], {
    cwd: ROOT,
    // A clean environment (Next.js's types declare NODE_ENV always set; here it is not).
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env } as unknown as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (c: Buffer) => output.push(c.toString()));
  child.stderr!.on('data', (c: Buffer) => output.push(c.toString()));
  return child;
}

let dashboard: ChildProcess | undefined;
let proxyServer: http.Server | undefined;
let login: string | undefined;
const dashboardOutput: string[] = [];
/** What reached the proxy outside the prefix (it answered 404). */
const outside: string[] = [];

test.describe.configure({ mode: 'serial' });

test.beforeAll(async () => {
  test.setTimeout(20 * 60_000);
  const url = process.env.E2E_DATABASE_URL!;
  await upsertUser(db(), { ...OPERATOR, role: 'operator' });

  // The dashboard's own login: the role from db/roles.sql, nothing else.
  login = `lh_e2e_dash_${randomBytes(4).toString('hex')}`;
  const password = randomBytes(12).toString('hex');
  await applyRoles(url);
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query(`CREATE ROLE ${login} LOGIN PASSWORD '${password}' IN ROLE leasehold_dashboard`);
  } finally {
    await admin.end();
  }
  await applyRoles(url); // the login's timeouts
  const dashboardUrl = new URL(url);
  dashboardUrl.username = login;
  dashboardUrl.password = password;

  const buildOutput: string[] = [];
  const started = Date.now();
  const build = leasehold(['dashboard', 'build', '--base-path', PREFIX, '--dir', BUILD_DIR], {}, buildOutput);
  const code = await new Promise<number | null>((resolve) => build.on('exit', (c) => resolve(c)));
  console.log(`[base-path] leasehold dashboard build: ${Math.round((Date.now() - started) / 1000)} s`);
  if (code !== 0) throw new Error(`leasehold dashboard build exited ${code}:\n${buildOutput.join('').slice(-4000)}`);
  expect(buildOutput.join('')).toMatch(/takes minutes|using the build/);

  // No --base-path: `leasehold dashboard` serves the build as `build --base-path` made it.
  dashboard = leasehold(
    ['dashboard', '--port', String(APP_PORT), '--hostname', '127.0.0.1', '--dir', BUILD_DIR],
    {
      DATABASE_URL: dashboardUrl.toString(),
      NEXTAUTH_SECRET: randomBytes(24).toString('base64'),
      NEXTAUTH_URL: `${ORIGIN}${PREFIX}/api/auth`,
    },
    dashboardOutput,
  );

  const proxy = httpProxy.createProxyServer({ target: `http://127.0.0.1:${APP_PORT}`, xfwd: true });
  proxy.on('error', (_error, _req, res) => {
    if (res instanceof http.ServerResponse && !res.headersSent) res.writeHead(502).end('dashboard unreachable');
  });
  proxyServer = http.createServer((req, res) => {
    const pathname = new URL(req.url ?? '/', ORIGIN).pathname;
    if (underPrefix(pathname)) return proxy.web(req, res);
    outside.push(`${req.method} ${req.url}`);
    res.writeHead(404, { 'content-type': 'text/plain' }).end(`not under ${PREFIX}`);
  });
  await new Promise<void>((resolve) => proxyServer!.listen(PROXY_PORT, '127.0.0.1', resolve));

  const deadline = Date.now() + 90_000;
  for (;;) {
    if (dashboard.exitCode !== null)
      throw new Error(`leasehold dashboard exited ${dashboard.exitCode}:\n${dashboardOutput.join('').slice(-4000)}`);
    const answer = await fetch(`${ORIGIN}${PREFIX}/login`).catch(() => null);
    if (answer?.status === 200) break;
    if (Date.now() > deadline)
      throw new Error(`the dashboard did not answer under ${PREFIX}:\n${dashboardOutput.join('').slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 300));
  }
  outside.length = 0;
});

test.afterAll(async () => {
  if (dashboard && dashboard.exitCode === null) {
    dashboard.kill('SIGTERM');
    await new Promise((r) => dashboard!.once('exit', r));
  }
  await new Promise((r) => (proxyServer ? proxyServer.close(r) : r(null)));
  if (login) {
    const admin = new pg.Client({ connectionString: process.env.E2E_DATABASE_URL! });
    await admin.connect();
    try {
      await admin.query(`DROP ROLE IF EXISTS ${login}`);
    } finally {
      await admin.end();
    }
  }
});

test('the proxy answers 404 outside the prefix, so a request that leaves it would show', async () => {
  const leaked = await fetch(`${ORIGIN}/login`);
  expect(leaked.status).toBe(404);
  expect(outside).toEqual(['GET /login']);
  outside.length = 0;
});

test('the server redirects a visitor without a session to the login under the prefix', async () => {
  const response = await fetch(`${ORIGIN}${PREFIX}/jobs`, { redirect: 'manual' });
  expect(response.status).toBeGreaterThanOrEqual(300);
  expect(response.status).toBeLessThan(400);
  expect(new URL(response.headers.get('location')!, ORIGIN).pathname).toBe(`${PREFIX}/login`);
});

test('pages under the prefix carry the nonce-based policy; API routes their own headers', async () => {
  const login = await fetch(`${ORIGIN}${PREFIX}/login`);
  expect(login.headers.get('content-security-policy')).toMatch(/script-src 'self' 'nonce-[^']+' 'strict-dynamic'/);
  expect(login.headers.get('x-content-type-options')).toBe('nosniff');
  expect(login.headers.get('x-powered-by')).toBeNull();
  const api = await fetch(`${ORIGIN}${PREFIX}/api/auth/session`);
  expect(api.headers.get('content-security-policy')).toBe("default-src 'none'; frame-ancestors 'none'");
  expect(api.headers.get('x-content-type-options')).toBe('nosniff');
});

test('sign-in, a job page, a retry and sign-out: every request stays under the prefix', async ({ page }) => {
  const requests: string[] = [];
  page.on('request', (request) => requests.push(request.url()));
  const queue = uniqueQueue('base-path');
  const id = await deadJob(queue);

  await page.goto(`${ORIGIN}${PREFIX}/`);
  await expect(page).toHaveURL(`${ORIGIN}${PREFIX}/login`);
  await page.getByLabel('Email').fill(OPERATOR.email);
  await page.getByLabel('Password').fill(OPERATOR.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByTestId('who')).toContainText('operator');
  expect(new URL(page.url()).pathname).toMatch(new RegExp(`^${PREFIX}/?$`));
  await expect(page.getByRole('heading', { name: 'Overview' })).toBeVisible();

  // next/link in the header, then the list's plain link to the job.
  await page.getByRole('link', { name: 'Jobs', exact: true }).click();
  await expect(page).toHaveURL(`${ORIGIN}${PREFIX}/jobs`);
  await page.goto(`${ORIGIN}${PREFIX}/jobs?queue=${queue}`);
  await page.getByTestId('jobs-table').getByRole('link', { name: id }).click();
  await expect(page).toHaveURL(`${ORIGIN}${PREFIX}/jobs/${id}`);
  await expect(page.getByTestId('job-fields')).toContainText(queue);
  await page.getByRole('button', { name: 'Retry' }).click();
  await expect(page.getByTestId('action-result')).toContainText('Retried');

  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(`${ORIGIN}${PREFIX}/login`);
  await page.goto(`${ORIGIN}${PREFIX}/jobs/${id}`);
  await expect(page).toHaveURL(`${ORIGIN}${PREFIX}/login`);

  const paths = requests.map((u) => new URL(u)).filter((u) => u.origin === ORIGIN);
  expect(requests.filter((u) => !u.startsWith(ORIGIN))).toEqual([]);
  expect(paths.filter((u) => !underPrefix(u.pathname)).map((u) => u.href)).toEqual([]);
  expect(outside).toEqual([]);
  // What the flow must have sent, so that an empty list above means something.
  const seen = paths.map((u) => u.pathname);
  expect(seen.some((p) => p.startsWith(`${PREFIX}/_next/static/`))).toBe(true);
  expect(seen).toContain(`${PREFIX}/api/auth/callback/credentials`);
  expect(seen).toContain(`${PREFIX}/api/auth/signout`);
  expect(seen).toContain(`${PREFIX}/api/jobs/${id}/retry`);
  expect(seen).toContain(`${PREFIX}/api/overview`);
});
