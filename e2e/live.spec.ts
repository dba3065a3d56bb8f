/**
 * Live pages (issue 43): a job's page follows the job from running to done without a reload or
 * a navigation; the job list offers "n new jobs" instead of moving its rows, and a click shows
 * them; a page whose session ended stops polling and says so, with the sign-in link. The real
 * e2e worker runs `test.sleep` on `e2e-work` (test/handlers.ts).
 */
import { enqueue } from '../db/queue/index.ts';
import { test, expect, login, db, jobState, uniqueQueue } from './fixtures.ts';

test('a job page follows its job from running to done with no reload or navigation', async ({ page }) => {
  await login(page, 'viewer');
  const { id } = await enqueue(db(), { queue: 'e2e-work', kind: 'test.sleep', payload: { ms: 4_000 } });
  await expect.poll(() => jobState(id), { timeout: 20_000 }).toBe('running');

  await page.goto(`/jobs/${id}`);
  const heading = page.getByRole('heading', { level: 1 });
  await expect(heading).toContainText('running');
  await expect(page.getByTestId('attempts-table')).toContainText('No attempt has ended yet.');
  await expect(page.getByTestId('result-none')).toBeVisible();
  // From here on, any navigation of the page (a reload, a router refresh's history write) counts.
  let navigations = 0;
  page.on('framenavigated', (frame) => {
    if (frame === page.mainFrame()) navigations++;
  });

  await expect(heading).toContainText('done', { timeout: 20_000 });
  const attempts = page.getByTestId('attempts-table');
  await expect(attempts.locator('td[data-outcome="completed"]')).toHaveCount(1);
  await expect(attempts).not.toContainText('No attempt has ended yet.');
  await expect(page.getByTestId('result')).toContainText('"slept": 4000');
  expect(await jobState(id)).toBe('done');
  expect(navigations).toBe(0);
});

test('the job list offers a job enqueued while it is open, and a click shows it', async ({ page }) => {
  // A queue no worker serves: its jobs stay ready where the list shows them.
  const queue = uniqueQueue('live-list');
  const first = await enqueue(db(), { queue, kind: 'test.sleep', payload: { ms: 0 } });
  await login(page, 'viewer');
  await page.goto(`/jobs?queue=${queue}`);
  const table = page.getByTestId('jobs-table');
  await expect(table).toContainText(first.id);
  await expect(page.getByTestId('new-jobs')).toHaveCount(0);

  const second = await enqueue(db(), { queue, kind: 'test.sleep', payload: { ms: 0 } });
  const marker = page.getByTestId('new-jobs');
  await expect(marker).toHaveText('1 new job');
  // The rows stay as they were until asked.
  await expect(table).not.toContainText(second.id);
  await marker.click();
  await expect(table).toContainText(second.id);
  await expect(table.getByRole('row')).toHaveCount(3); // the header and the two jobs
  await expect(page.getByTestId('new-jobs')).toHaveCount(0);
});

test('a page whose session ended stops polling and links to the sign-in', async ({ page, context }) => {
  await login(page, 'viewer');
  const polls: number[] = [];
  page.on('request', (request) => {
    if (new URL(request.url()).pathname === '/api/overview') polls.push(Date.now());
  });
  await page.goto('/');
  await expect(page.getByText(/refreshes every 5 s/)).toBeVisible();
  await expect.poll(() => polls.length, { timeout: 15_000 }).toBeGreaterThanOrEqual(2);

  await context.clearCookies();
  const banner = page.getByTestId('session-ended');
  await expect(banner).toContainText('Your session has ended', { timeout: 15_000 });
  await expect(banner.getByRole('link', { name: 'Sign in' })).toHaveAttribute('href', '/login');
  const seen = polls.length;
  // Two intervals of the overview's poll (5 s) and a margin: not one request more.
  await page.waitForTimeout(11_000);
  expect(polls.length).toBe(seen);
  await banner.getByRole('link', { name: 'Sign in' }).click();
  await expect(page).toHaveURL(/\/login$/);
});
