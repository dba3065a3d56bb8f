import {
  test,
  expect,
  login,
  deadJob,
  deadJobs,
  runningJob,
  moveOn,
  jobState,
  uniqueQueue,
  db,
  FROM_DASHBOARD,
} from './fixtures.ts';
import { enqueue } from '../db/queue/index.ts';

test.describe('sign in', () => {
  for (const role of ['viewer', 'operator', 'admin'] as const) {
    test(`a ${role} signs in and sees the overview`, async ({ page }) => {
      await login(page, role);
      await expect(page.getByRole('heading', { name: 'Overview' })).toBeVisible();
    });
  }

  test('every page needs a login', async ({ page }) => {
    for (const path of ['/', '/jobs', '/failures', '/kinds', '/limits', '/audit']) {
      await page.goto(path);
      await expect(page).toHaveURL(/\/login/);
    }
    const response = await page.request.get('/api/overview');
    expect(response.status()).toBe(401);
  });

  test('wrong credentials get a sentence, not a session', async ({ page }) => {
    await page.goto('/login');
    await page.getByLabel('Email').fill('viewer@example.com');
    await page.getByLabel('Password').fill('not-the-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByText('Those credentials did not work')).toBeVisible();
    await expect(page).toHaveURL(/\/login/);
  });
});

test.describe('roles', () => {
  test('a viewer sees no retry button, and a direct POST of the retry is refused by the server', async ({ page }) => {
    const id = await deadJob(uniqueQueue('viewer'));
    await login(page, 'viewer');
    await page.goto(`/jobs/${id}`);
    await expect(page.getByTestId('job-fields')).toBeVisible();
    await expect(page.getByRole('button', { name: 'Retry' })).toHaveCount(0);
    const response = await page.request.post(`/api/jobs/${id}/retry`, { headers: FROM_DASHBOARD, data: {} });
    expect(response.status()).toBe(403);
    expect((await response.json()).message).toContain('operator role');
    expect(await jobState(id)).toBe('dead');
  });

  test('a viewer sees redacted payload fields masked; an admin may reveal them, and the reveal is audited', async ({
    page,
  }) => {
    const queue = uniqueQueue('redact');
    const { id } = await enqueue(db(), {
      queue,
      kind: 'receipt.send',
      payload: { orderId: crypto.randomUUID(), email: 'secret@example.com', totalCents: 100 },
    });
    await login(page, 'viewer');
    await page.goto(`/jobs/${id}`);
    await expect(page.getByTestId('payload')).not.toContainText('secret@example.com');
    await expect(page.getByTestId('payload')).toContainText('••••••');
    await expect(page.getByRole('button', { name: /Reveal/ })).toHaveCount(0);
    const refused = await page.request.post(`/api/jobs/${id}/reveal`, { headers: FROM_DASHBOARD, data: {} });
    expect(refused.status()).toBe(403);

    await page.context().clearCookies();
    await login(page, 'admin');
    await page.goto(`/jobs/${id}`);
    await page.getByRole('button', { name: /Reveal/ }).click();
    await expect(page.getByTestId('revealed-payload')).toContainText('secret@example.com');
    await page.goto('/audit?action=reveal_payload');
    await expect(page.getByTestId('audit-table')).toContainText('admin@example.com');
  });
});

test.describe('operator actions', () => {
  test('an operator retries a dead job and a real worker process runs it to done; the audit log shows it', async ({
    page,
  }) => {
    const id = await deadJob('e2e-work');
    await login(page, 'operator');
    await page.goto(`/jobs/${id}`);
    await expect(page.getByTestId('retry-plan')).toContainText('attempt 2');
    await page.getByRole('button', { name: 'Retry' }).click();
    await expect(page.getByTestId('action-result')).toContainText('Retried');
    await expect.poll(() => jobState(id), { timeout: 20_000 }).toBe('done');
    await page.reload();
    await expect(page.getByTestId('attempts-table')).toContainText('completed');
    await page.screenshot({ path: 'test-results/screenshots/job-detail.png', fullPage: true });
    await page.goto('/audit');
    await expect(page.getByTestId('audit-table')).toContainText('operator@example.com');
    await expect(page.getByTestId('audit-table')).toContainText('retry');
  });

  test('an operator cancels a running job; its worker cannot settle it', async ({ page }) => {
    const { id } = await enqueue(db(), { queue: 'e2e-work', kind: 'test.sleep', payload: { ms: 60_000 } });
    await expect.poll(() => jobState(id), { timeout: 15_000 }).toBe('running');
    await login(page, 'operator');
    await page.goto(`/jobs/${id}`);
    await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    await page
      .getByRole('dialog', { name: 'Cancel this running job?' })
      .getByRole('button', { name: 'Cancel the job' })
      .click();
    await expect(page.getByTestId('action-result')).toContainText('Cancelled');
    expect(await jobState(id)).toBe('cancelled');
    // The worker's next heartbeat is refused: the job stays cancelled.
    await page.waitForTimeout(2_000);
    expect(await jobState(id)).toBe('cancelled');
  });

  test('a cancel of a job that changed since it was viewed is refused with a sentence', async ({ page }) => {
    const queue = uniqueQueue('moved');
    const seen = await runningJob(queue);
    await login(page, 'operator');
    await page.goto(`/jobs/${seen.id}`);
    await expect(page.getByRole('button', { name: 'Cancel' })).toBeVisible();
    await moveOn(queue, seen.id); // attempt 1 reaped, attempt 2 running with a new token
    await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    await page
      .getByRole('dialog', { name: 'Cancel this running job?' })
      .getByRole('button', { name: 'Cancel the job' })
      .click();
    await expect(page.getByTestId('action-result')).toContainText('changed since you looked');
    expect(await jobState(seen.id)).toBe('running');
  });
});

test.describe('admin bulk actions', () => {
  test('bulk retry by filter shows a preview count, applies to the frozen set, and is audited', async ({ page }) => {
    const queue = uniqueQueue('bulk');
    await deadJobs(queue, 5);
    await login(page, 'admin');
    await page.goto(`/jobs?queue=${queue}&state=dead`);
    await expect(page.getByTestId('jobs-table').locator('tbody tr')).toHaveCount(5);
    await page.getByRole('button', { name: 'Bulk retry…' }).click();
    await expect(page.getByTestId('bulk-count')).toHaveText('5');
    await page.getByRole('button', { name: 'Confirm retry of 5' }).click();
    await expect(page.getByTestId('bulk-result')).toContainText('Retried 5 of 5');
    await page.goto('/audit?action=bulk_retry');
    await expect(page.getByTestId('audit-table')).toContainText('admin@example.com');
  });

  test('a bulk action over the cap is refused in the preview and by the server', async ({ page }) => {
    const queue = uniqueQueue('cap');
    await deadJobs(queue, 1001);
    await login(page, 'admin');
    await page.goto(`/jobs?queue=${queue}&state=dead`);
    await page.getByRole('button', { name: 'Bulk retry…' }).click();
    await expect(page.getByTestId('bulk-preview')).toContainText('More than 1000 jobs match');
    await expect(page.getByRole('button', { name: /Confirm/ })).toHaveCount(0);
    const ids = Array.from({ length: 1001 }, (_, i) => ({
      id: `00000000-0000-7000-8000-${String(i).padStart(12, '0')}`,
    }));
    const response = await page.request.post('/api/bulk/apply', {
      headers: FROM_DASHBOARD,
      data: { action: 'retry', jobs: ids, confirm: true },
    });
    expect(response.status()).toBe(400);
    expect((await response.json()).message).toContain('at most 1000');
  });

  test('bulk actions are admin-only on the server', async ({ page }) => {
    await login(page, 'operator');
    const response = await page.request.post('/api/bulk/preview', {
      headers: FROM_DASHBOARD,
      data: { action: 'retry', filter: {} },
    });
    expect(response.status()).toBe(403);
  });
});

test.describe('pages with data', () => {
  test('the overview charts render with data, with the numbers as text', async ({ page }) => {
    await deadJob(uniqueQueue('chart'));
    await login(page, 'viewer');
    await page.goto('/');
    for (const chart of [
      'chart-backlog',
      'chart-outcomes',
      'chart-history-outcomes',
      'chart-attempts',
      'chart-failures',
    ]) {
      await expect(page.getByTestId(chart).locator('svg.recharts-surface[role="application"]')).toBeVisible();
    }
    await expect(page.getByTestId('chart-outcomes').locator('.recharts-bar-rectangle').first()).toBeVisible();
    await expect(page.getByTestId('backlog-table')).toContainText('e2e-work');
    await expect(page.getByTestId('workers-table')).toContainText('e2e-work');
    await page.screenshot({ path: 'test-results/screenshots/overview.png', fullPage: true });
  });

  test('the failures page groups dead jobs by class and error', async ({ page }) => {
    const queue = uniqueQueue('group');
    await deadJob(queue, { ms: 0 }, 'provider refused order 123: 422');
    await deadJob(queue, { ms: 0 }, 'provider refused order 456: 422');
    await login(page, 'viewer');
    await page.goto('/failures');
    await expect(page.getByTestId('failure-groups')).toContainText('provider refused order');
  });
});

test.describe('kinds registry', () => {
  test('the kinds page lists what the worker registered; an admin adds a redacted path, audited', async ({ page }) => {
    await login(page, 'viewer');
    // The e2e worker records its kinds when it starts, which may be after the dashboard is up.
    await expect(async () => {
      await page.goto('/kinds');
      await expect(page.getByTestId('kinds-table')).toContainText('receipt.send', { timeout: 1_000 });
    }).toPass({ timeout: 20_000 });
    await expect(page.getByRole('row', { name: /receipt\.send/ }).getByTestId('declared-paths')).toContainText('email');
    await expect(page.getByRole('button', { name: /^Add/ })).toHaveCount(0);

    await page.context().clearCookies();
    await login(page, 'admin');
    await page.goto('/kinds');
    // test.sleep's payloads have no `note`: masking it changes nothing the other specs look at.
    await page.getByLabel('Add a redacted path to test.sleep v1').fill('note');
    await page
      .getByRole('row', { name: /test\.sleep/ })
      // The redaction form's (the search paths' form beside it has an Add button too).
      .getByRole('button', { name: /^Add \(every version; recorded/ })
      .click();
    await expect(page.getByTestId('redaction-result')).toContainText(
      'Saved: note is now masked in every version of test.sleep',
    );
    await expect(page.getByRole('row', { name: /test\.sleep/ }).getByTestId('added-paths')).toContainText('note');
    // What the worker declared has no remove button: only admin-added paths do.
    await expect(page.getByRole('button', { name: 'Unmask email in receipt.send' })).toHaveCount(0);
    await page.goto('/audit?action=add_redacted_path');
    await expect(page.getByTestId('audit-table')).toContainText('admin@example.com');
  });
});

test.describe('bad input', () => {
  test('malformed filters, invalid ids and bad requests get a clear message, never a 500', async ({ page }) => {
    await login(page, 'admin');
    await page.goto('/jobs?state=bogus&sort=sideways');
    await expect(page.getByTestId('page-error')).toContainText('not valid');
    await page.goto(`/jobs?search=${'x'.repeat(600)}`);
    await expect(page.getByTestId('page-error')).toContainText('not valid');
    await page.goto('/jobs/not-a-uuid');
    await expect(page.getByTestId('page-error')).toContainText('job id');
    const missing = await page.goto('/jobs/00000000-0000-7000-8000-00000000f00d');
    expect(missing?.status()).toBe(404);
    const garbled = await page.request.post('/api/bulk/preview', {
      headers: { ...FROM_DASHBOARD, 'content-type': 'application/json' },
      data: '{"action":',
    });
    expect(garbled.status()).toBe(400);
    const wrongShape = await page.request.post('/api/jobs/not-a-uuid/retry', {
      headers: FROM_DASHBOARD,
      data: { colour: 'red' },
    });
    expect(wrongShape.status()).toBe(400);
    expect((await wrongShape.json()).message).toContain('not valid');
  });
});
