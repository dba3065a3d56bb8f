/**
 * Support staff find the customer's job (docs/dashboard.md, "Search"): an operator searches the
 * Jobs page by a payload path the kind declares searchable, shares the URL with a second
 * signed-in session that sees the same result, and exports it as CSV (the file's header and
 * row, and the export's audit row); a viewer's search on a path masked for viewers finds
 * nothing; bad input is a sentence on the page and a 400 from the API.
 *
 * The kind is registered here with its searchable paths and its jobs wait in a queue no worker
 * serves; the index builder runs as `leasehold search-index` would.
 */
import { readFileSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import { enqueue, registerKinds } from '../db/queue/index.ts';
import { run } from '../db/queue/executor.ts';
import { buildSearchIndexes } from '../db/migrate/index.ts';
import { test, expect, login, db, uniqueQueue, FROM_DASHBOARD } from './fixtures.ts';

const tag = Date.now().toString(36);
const KIND = `e2e.receipt.${tag}`;
const ORDER = `ord-${tag}`;
const EMAIL = `ada.${tag}@example.com`;
const queue = uniqueQueue('search');
let jobId = '';

test.describe.configure({ mode: 'serial' });

test.beforeAll(async () => {
  await registerKinds(db(), [
    {
      kind: KIND,
      version: 1,
      defaultQueue: queue,
      displayName: 'Receipt (search)',
      redactedPaths: ['customer.email'],
      rerunSafe: false,
      searchablePaths: ['orderId', 'customer.email'],
    },
  ]);
  ({ id: jobId } = await enqueue(db(), {
    queue,
    kind: KIND,
    payload: { orderId: ORDER, customer: { email: EMAIL, name: 'Ada' } },
  }));
  await enqueue(db(), {
    queue,
    kind: KIND,
    payload: { orderId: `${ORDER}-other`, customer: { email: 'b@example.com' } },
  });
  await buildSearchIndexes(process.env.E2E_DATABASE_URL!, { allowProxy: true });
});

test('an operator finds a job by orderId, shares the URL, and exports the result', async ({ page, browser }) => {
  await login(page, 'operator');
  await page.goto('/jobs');
  await page.getByLabel('Payload path').fill('orderId');
  await page.getByLabel('equals').fill(ORDER);
  await page.getByRole('button', { name: 'Filter' }).click();
  await expect(page).toHaveURL(new RegExp(`path=orderId&value=${ORDER}(&|$)`));
  const rows = page.getByTestId('jobs-table').locator('tbody tr');
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toContainText(jobId);
  await page.screenshot({ path: 'test-results/e2e/search-result.png', fullPage: true });

  // The URL holds the whole search: another signed-in session sees the same result.
  const shared = page.url();
  const other = await browser.newContext();
  try {
    const second = await other.newPage();
    await login(second, 'viewer');
    await second.goto(shared);
    await expect(second.getByTestId('jobs-table').locator('tbody tr')).toHaveCount(1);
    await expect(second.getByTestId('jobs-table')).toContainText(jobId);
  } finally {
    await other.close();
  }

  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('button', { name: /Export CSV/ }).click(),
  ]);
  expect(download.suggestedFilename()).toMatch(/^leasehold-jobs-.*\.csv$/);
  const [header, row] = readFileSync((await download.path())!, 'utf8').split('\r\n');
  expect(header).toBe(
    'id,state,queue,kind,kind_version,tags,attempts,failure_class,created_at,run_at,finished_at,idempotency_key,last_error,payload',
  );
  expect(row).toContain(`${jobId},ready,${queue},${KIND},1,`);
  expect(row).toContain(ORDER);
  // Masked as the job page shows it to an operator.
  expect(row).not.toContain(EMAIL);
  await expect(page.getByTestId('export-result')).toContainText('recorded in the audit log');
  const audit = await run<{ affected: number }>(
    db(),
    sql`SELECT affected FROM leasehold.audit_log WHERE action = 'export_jobs' AND actor = 'operator@example.com'
          AND detail->'filter'->>'value' = ${ORDER}`,
  );
  expect(audit).toEqual([{ affected: 1 }]);
});

test("a viewer's search on a path masked for viewers finds nothing; an admin's finds the job", async ({ page }) => {
  const url = `/jobs?${new URLSearchParams({ path: 'customer.email', value: EMAIL, kind: KIND })}`;
  await login(page, 'viewer');
  await page.goto(url);
  await expect(page.getByTestId('jobs-table')).toContainText('No jobs match.');
  await expect(page.getByTestId('jobs-table')).not.toContainText(jobId);
  const api = await page.request.get(`/api${url}`);
  expect(api.status()).toBe(200);
  expect((await api.json()).jobs).toEqual([]);
  await page.context().clearCookies();
  await login(page, 'admin');
  await page.goto(url);
  await expect(page.getByTestId('jobs-table')).toContainText(jobId);
});

test('bad input is a sentence on the page and a 400 from the API, nothing written', async ({ page }) => {
  await login(page, 'operator');
  const cases: [Record<string, string>, RegExp][] = [
    [{ path: 'notes', value: 'x', kind: KIND }, /notes is not declared searchable in/],
    [{ path: 'items[0].sku', value: 'x' }, /a payload path is keys joined by dots/],
    [{ path: 'orderId', value: 'x'.repeat(513) }, /at most 512 characters/],
    [{ from: '2026-05-02T00:00', to: '2026-05-01T00:00' }, /ends before it starts/],
  ];
  for (const [params, sentence] of cases) {
    const query = new URLSearchParams(params).toString();
    await page.goto(`/jobs?${query}`);
    await expect(page.getByTestId('page-error')).toHaveText(sentence);
    const api = await page.request.get(`/api/jobs?${query}`);
    expect(api.status()).toBe(400);
    expect((await api.json()).message).toMatch(sentence);
  }
  const exported = await page.request.post('/api/jobs/export', {
    headers: FROM_DASHBOARD,
    data: { filter: { path: 'notes', value: 'x', kind: KIND } },
  });
  expect(exported.status()).toBe(400);
  expect((await exported.json()).message).toMatch(/not declared searchable/);
  const audit = await run<{ n: number }>(
    db(),
    sql`SELECT count(*)::int AS n FROM leasehold.audit_log WHERE action = 'export_jobs' AND detail->'filter'->>'path' = 'notes'`,
  );
  expect(audit).toEqual([{ n: 0 }]);
});

test('the Kinds page shows each searchable path with its index ready', async ({ page }) => {
  await login(page, 'viewer');
  await page.goto('/kinds');
  const row = page.getByTestId(`kind-${KIND}-v1`);
  await expect(row.getByTestId('search-path-orderId')).toContainText('index ready');
  await expect(row.getByTestId('search-path-customer.email')).toContainText('index ready');
});
