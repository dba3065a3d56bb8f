/**
 * The security headers on every page with data, and the pages still working under the enforcing
 * Content-Security-Policy (proxy.ts, lib/security-headers.ts): a fresh nonce per request, on
 * the scripts Next.js renders; React hydrates (a client-side navigation and a button's fetch);
 * no violation anywhere (the fixture fails any test of any spec on one, e2e/fixtures.ts).
 */
import type { APIResponse, Page, Response } from '@playwright/test';
import { cspViolations, deadJob, expect, login, test, uniqueQueue } from './fixtures.ts';

type Headers = Record<string, string>;

const nonceOf = (headers: Headers) => /'nonce-([^']+)'/.exec(headers['content-security-policy'] ?? '')?.[1] ?? null;

function directives(headers: Headers): Record<string, string> {
  return Object.fromEntries(
    (headers['content-security-policy'] ?? '').split(';').map((d) => {
      const [name, ...values] = d.trim().split(/\s+/);
      return [name!, values.join(' ')];
    }),
  );
}

/** What every page must answer with, over plain http. */
function expectPageHeaders(path: string, headers: Headers) {
  const csp = directives(headers);
  expect(nonceOf(headers), `${path}: a nonce in the policy`).toMatch(/^[A-Za-z0-9+/]{22}==$/);
  expect(csp['script-src'], path).toBe(`'self' 'nonce-${nonceOf(headers)}' 'strict-dynamic'`);
  expect(csp['script-src'], path).not.toMatch(/unsafe-inline|unsafe-eval/);
  expect(csp['style-src'], path).toBe(`'self' 'nonce-${nonceOf(headers)}'`);
  expect(csp['frame-ancestors'], path).toBe("'none'");
  expect(csp['object-src'], path).toBe("'none'");
  expect(csp['form-action'], path).toBe("'self'");
  expect(headers['content-security-policy-report-only'], path).toBeUndefined();
  expect(headers['x-content-type-options'], path).toBe('nosniff');
  expect(headers['referrer-policy'], path).toBe('same-origin');
  expect(headers['x-powered-by'], path).toBeUndefined();
  expect(headers['strict-transport-security'], `${path}: no HSTS over http`).toBeUndefined();
}

/** Opens `path` in the browser, checks its headers, and that a second request gets another nonce. */
async function visit(page: Page, path: string, ready: () => Promise<void>): Promise<Response> {
  const response = (await page.goto(path))!;
  expectPageHeaders(path, response.headers());
  await ready();
  const again: APIResponse = await page.request.get(path);
  expectPageHeaders(path, again.headers());
  expect(nonceOf(again.headers()), `${path}: a fresh nonce per request`).not.toBe(nonceOf(response.headers()));
  // Next.js puts the request's nonce on the scripts it renders (the browser hides the attribute
  // from the DOM once parsed, so read the HTML). No style attribute: the policy would refuse it.
  const html = await again.text();
  expect(html, `${path}: no style="…" attribute`).not.toMatch(/<[a-z][^>]*\sstyle="/i);
  const scripts = html.match(/<script\b[^>]*>/g) ?? [];
  expect(scripts.length, `${path}: scripts`).toBeGreaterThan(0);
  for (const tag of scripts) expect(tag, path).toContain(`nonce="${nonceOf(again.headers())}"`);
  return response;
}

test('every page answers with the security headers, a fresh nonce each time, and runs under them', async ({ page }) => {
  test.setTimeout(120_000);
  const queue = uniqueQueue('headers');
  const id = await deadJob(queue, { ms: 0 }, 'provider refused order 9: 422');

  await visit(page, '/login', () => expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible());
  await login(page, 'admin');
  await visit(page, '/', () => expect(page.getByRole('heading', { name: 'Overview' })).toBeVisible());
  await visit(page, `/jobs?queue=${queue}`, () => expect(page.getByTestId('jobs-table')).toContainText(id));
  await visit(page, `/jobs/${id}`, () => expect(page.getByTestId('job-fields')).toContainText(queue));
  await visit(page, '/failures', () => expect(page.getByTestId('failure-groups')).toContainText('provider refused'));
  await visit(page, '/audit', () => expect(page.getByTestId('audit-table')).toBeVisible());
  await visit(page, '/kinds', () => expect(page.getByTestId('kinds-table')).toBeVisible());
  const missing = await visit(page, '/jobs/00000000-0000-7000-8000-00000000beef', async () => {});
  expect(missing.status()).toBe(404);
});

test('React hydrates under the policy: a client-side navigation and a button’s request work', async ({ page }) => {
  const queue = uniqueQueue('hydrate');
  await deadJob(queue);
  await login(page, 'admin');
  await page.goto('/');
  await expect(page.getByRole('heading', { name: 'Overview' })).toBeVisible();
  // A full page load would lose this; next/link's client-side navigation keeps it.
  await page.evaluate(() => Object.assign(window, { leaseholdMarker: 'still here' }));
  await page.getByRole('link', { name: 'Jobs', exact: true }).click();
  await expect(page).toHaveURL(/\/jobs$/);
  expect(await page.evaluate(() => (window as unknown as { leaseholdMarker?: string }).leaseholdMarker)).toBe(
    'still here',
  );
  // A React onClick that POSTs (fetch, connect-src 'self', the Origin check) and renders the answer.
  await page.goto(`/jobs?queue=${queue}&state=dead`);
  await page.getByRole('button', { name: 'Bulk retry…' }).click();
  await expect(page.getByTestId('bulk-count')).toHaveText('1');
});

test('the violation check sees a script the policy blocks (so an empty list means something)', async ({ page }) => {
  // The login page as the server sent it, policy included, plus one inline script without the nonce.
  await page.route('**/login', async (route) => {
    const original = await route.fetch();
    const html = (await original.text()).replace('</body>', '<script>window.injected = true</script></body>');
    await route.fulfill({ response: original, body: html });
  });
  await page.goto('/login');
  await expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible();
  await expect.poll(() => cspViolations(page).length).toBeGreaterThan(0);
  expect(cspViolations(page).join('\n')).toContain('script-src');
  expect(await page.evaluate(() => (window as unknown as { injected?: boolean }).injected)).toBeUndefined();
  cspViolations(page).length = 0; // seen: the fixture's own check must not fail this test
});

test('HSTS only when the request came over https; API answers carry nosniff and a closed policy', async ({ page }) => {
  const overHttps = await page.request.get('/login', { headers: { 'x-forwarded-proto': 'https' } });
  expect(overHttps.headers()['strict-transport-security']).toBe('max-age=31536000');
  expect(directives(overHttps.headers())).toHaveProperty('upgrade-insecure-requests');

  await login(page, 'viewer');
  const api = await page.request.get('/api/overview');
  expect(api.status()).toBe(200);
  const headers = api.headers();
  expect(headers['x-content-type-options']).toBe('nosniff');
  expect(headers['content-security-policy']).toBe("default-src 'none'; frame-ancestors 'none'");
  expect(headers['cache-control']).toBe('no-store');
  expect(headers['x-powered-by']).toBeUndefined();
  const session = await page.request.get('/api/auth/session');
  expect(session.headers()['x-content-type-options']).toBe('nosniff');
});
