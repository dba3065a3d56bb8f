/**
 * Results and progress on the job page (issue 40), made by the real e2e worker running
 * `test.progress` (test/handlers.ts): it reports 25 %, waits, reports 75 %, waits, and returns a
 * small result that quotes its payload's customer (`customer.email`, a path the kind redacts).
 * The job page, opened while the job runs, shows the bar move from 25 % to 75 % with no reload
 * (it polls GET /api/jobs/[id]/progress while the job runs), then the job done with its result
 * (it refreshes itself once the state moves on). The result is masked as the payload is, for a
 * viewer and for an admin alike; the admin's audited reveal returns it whole. The progress route
 * is a GET behind the session, like every other.
 */
import AxeBuilder from '@axe-core/playwright';
import { sql } from 'drizzle-orm';
import { run } from '../db/queue/executor.ts';
import { enqueue } from '../db/queue/index.ts';
import { MASK } from '../lib/redaction.ts';
import { test, expect, login, db, jobState, uniqueQueue, FROM_DASHBOARD } from './fixtures.ts';

/** The job's progress fraction as the worker wrote it (null: none yet). */
async function progressOf(id: string): Promise<number | null> {
  const [row] = await run<{ fraction: number }>(
    db(),
    sql`SELECT fraction FROM leasehold.job_progress WHERE job_id = ${id}::uuid`,
  );
  return row?.fraction ?? null;
}

/** A job of test.progress on the e2e worker's queue, for a customer of its own. */
async function progressJob(stepMs: number) {
  const email = `watched.${uniqueQueue('progress')}@example.com`;
  const { id } = await enqueue(db(), {
    queue: 'e2e-work',
    kind: 'test.progress',
    payload: { stepMs, customer: { email } },
  });
  return { id, email };
}

test('the job page shows the progress bar move live, then the job done with its masked result', async ({ page }) => {
  // Signed in first: the page opens while the handler's first step waits (4 s).
  await login(page, 'viewer');
  const { id, email } = await progressJob(4_000);
  await expect.poll(() => progressOf(id), { timeout: 30_000 }).toBe(0.25);

  await page.goto(`/jobs/${id}`);
  // A mark on the window: a reload (or a navigation) would lose it.
  await page.evaluate(() => Reflect.set(window, 'e2eSamePage', true));
  await expect(page.getByRole('heading', { level: 1 })).toContainText('running');
  const bar = page.getByRole('progressbar', { name: 'Progress' });
  await expect(bar).toHaveAttribute('value', '25');
  await expect(bar).toHaveAttribute('max', '100');
  await expect(page.getByTestId('progress-percent')).toHaveText('25 %');
  await expect(page.getByTestId('progress-message')).toHaveText('a quarter');
  // A relative time (components/time.tsx), its instant in dateTime.
  await expect(page.getByTestId('job-progress')).toContainText(/Updated (just now|\d+ min ago) by attempt 1/);
  await expect(page.getByTestId('job-progress').locator('time')).toHaveAttribute(
    'datetime',
    /^\d{4}-\d\d-\d\dT[\d:.]+Z$/,
  );
  await expect(page.getByTestId('result-none')).toHaveText('No result yet: the job has not completed.');

  // The second report, without a reload.
  await expect(bar).toHaveAttribute('value', '75', { timeout: 10_000 });
  await expect(page.getByTestId('progress-percent')).toHaveText('75 %');
  await expect(page.getByTestId('progress-message')).toHaveText('three quarters');

  // Then the job ends: the page follows by itself, with the result.
  await expect(page.getByRole('heading', { level: 1 })).toContainText('done', { timeout: 15_000 });
  const result = page.getByTestId('result');
  await expect(result).toBeVisible();
  const shown = JSON.parse(await result.innerText());
  expect(shown).toEqual({ rows: 42, file: 'out.csv', customer: { email: MASK }, note: `sent to ${MASK}` });
  await expect(page.getByText('Masked fields: customer.email.')).toHaveCount(2); // the payload's and the result's
  await expect(page.getByTestId('result-none')).toHaveCount(0);
  // The last report stays after the end, no longer polled.
  await expect(bar).toHaveAttribute('value', '75');
  await expect(page.getByTestId('job-progress')).not.toContainText('refreshes every');
  expect(await page.evaluate(() => Reflect.get(window, 'e2eSamePage'))).toBe(true);
  expect(await jobState(id)).toBe('done');
  // The bar and the result pass axe as the rest of the page does (e2e/accessibility.spec.ts).
  const { violations } = await new AxeBuilder({ page }).analyze();
  expect(violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id)).toEqual([]);

  // Nowhere on the page, as HTML or as the RSC payload, nor in the poll's answer.
  expect(await page.content()).not.toContain(email);
  const variants: Record<string, string>[] = [{}, { RSC: '1' }];
  for (const headers of variants) {
    expect(await (await page.request.get(`/jobs/${id}`, { headers })).text()).not.toContain(email);
  }
  const polled = await page.request.get(`/api/jobs/${id}/progress`);
  expect(polled.status()).toBe(200);
  expect(await polled.json()).toMatchObject({
    state: 'done',
    progress: { fraction: 0.75, percent: 75, message: 'three quarters' },
  });
});

test("an admin sees the result masked too; the payload's audited reveal returns it whole", async ({ page }) => {
  const { id, email } = await progressJob(0);
  await expect.poll(() => jobState(id), { timeout: 30_000 }).toBe('done');
  await login(page, 'admin');
  await page.goto(`/jobs/${id}`);
  await expect(page.getByTestId('result')).toContainText(`"email": "${MASK}"`);
  await expect(page.getByTestId('result')).toContainText(`"note": "sent to ${MASK}"`);
  expect(await page.content()).not.toContain(email);
  // A job that did not wait between its reports: the last one was written when it ended.
  await expect(page.getByRole('progressbar', { name: 'Progress' })).toHaveAttribute('value', '75');

  await page.getByRole('button', { name: 'Reveal (recorded in the audit log)' }).click();
  await expect(page.getByTestId('revealed-payload')).toContainText(email);
  await expect(page.getByTestId('revealed-result')).toContainText(`"note": "sent to ${email}"`);
  await page.goto('/audit?action=reveal_payload');
  await expect(page.getByTestId('audit-table').locator(`a[href$="/jobs/${id}"]`)).toHaveCount(1);
});

test('the progress route answers GET only, to a signed-in user, with a sentence for a bad id', async ({ page }) => {
  const { id } = await progressJob(0);
  // Nobody signed in.
  const anonymous = await page.request.get(`/api/jobs/${id}/progress`);
  expect(anonymous.status()).toBe(401);
  expect(await anonymous.json()).toEqual({ ok: false, message: 'Please sign in.' });

  await login(page, 'viewer');
  expect((await page.request.get(`/api/jobs/${id}/progress`)).status()).toBe(200);
  const bad = await page.request.get('/api/jobs/not-a-job/progress');
  expect(bad.status()).toBe(400);
  const gone = await page.request.get('/api/jobs/00000000-0000-7000-8000-000000000001/progress');
  expect(gone.status()).toBe(400);
  expect((await gone.json()).message).toBe('No job with this id exists any more.');
  // No write: a POST is not a method of this route.
  const post = await page.request.post(`/api/jobs/${id}/progress`, { headers: FROM_DASHBOARD, data: {} });
  expect(post.status()).toBe(405);
});
