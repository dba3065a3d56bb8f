/**
 * Tags and snooze on the dashboard (issue 39): the jobs list filtered by a tag in the UI (only
 * the tagged jobs listed, their tags shown as text), a bad tag refused in a sentence, the bulk
 * preview API taking the same filter, a tag quoting a masked value scrubbed and not found by a
 * viewer; and a job whose attempt history has a snoozed attempt, made by the real e2e worker
 * running `test.snooze` (test/handlers.ts), which returns `snooze(ms)` once and then completes.
 */
import { enqueue, enqueueMany } from '../db/queue/index.ts';
import { test, expect, login, db, jobState, uniqueQueue, FROM_DASHBOARD } from './fixtures.ts';

test.describe('tags', () => {
  test('the jobs list filters by one tag in the UI: only the tagged jobs, each with its tags', async ({ page }) => {
    // A queue no worker serves: the jobs stay ready.
    const queue = uniqueQueue('tags');
    const tag = `acme-${queue}`;
    const markup = '<img src=x data-e2e="tag-markup">';
    const [both, untagged, vipOnly, mine, marked] = await enqueueMany(db(), [
      { queue, kind: 'test.sleep', payload: { ms: 0 }, tags: [tag, 'vip'] },
      { queue, kind: 'test.sleep', payload: { ms: 0 } },
      { queue, kind: 'test.sleep', payload: { ms: 0 }, tags: ['vip'] },
      { queue, kind: 'test.sleep', payload: { ms: 0 }, tags: [tag] },
      { queue, kind: 'test.sleep', payload: { ms: 0 }, tags: [markup, tag] },
    ]);
    const other = await enqueue(db(), { queue: uniqueQueue('tags-other'), kind: 'test.sleep', payload: { ms: 0 } });

    await login(page, 'viewer');
    await page.goto('/jobs');
    await page.getByLabel('Tag', { exact: true }).fill(tag);
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect(page).toHaveURL(new RegExp(`[?&]tag=${tag}(&|$)`));

    const table = page.getByTestId('jobs-table');
    const rows = table.locator('tbody tr');
    // Some are listed, and only the tagged ones, newest first.
    await expect(rows).toHaveCount(3);
    await expect(rows.locator('td:first-child a')).toHaveText([marked!.id, mine!.id, both!.id]);
    for (const id of [untagged!.id, vipOnly!.id, other.id]) await expect(table).not.toContainText(id);
    for (let i = 0; i < 3; i++) await expect(rows.nth(i).getByTestId('job-tags')).toContainText(tag);
    await expect(rows.nth(2).getByTestId('job-tags').locator('li')).toHaveText([tag, 'vip']);
    // A tag is text, whatever it holds: shown as written, never made markup.
    await expect(rows.nth(0).getByTestId('job-tags').locator('li')).toHaveText([markup, tag]);
    await expect(page.locator('[data-e2e="tag-markup"]')).toHaveCount(0);
    // The field keeps the filter; the pager and "clear" are as for any filter.
    await expect(page.getByLabel('Tag', { exact: true })).toHaveValue(tag);

    // Another tag, with the queue: the other tagged jobs.
    await page.goto(`/jobs?queue=${queue}&tag=vip`);
    await expect(rows.locator('td:first-child a')).toHaveText([vipOnly!.id, both!.id]);
    // A tag no job carries: none, said so.
    await page.goto(`/jobs?tag=${encodeURIComponent(`${tag}-none`)}`);
    await expect(rows).toHaveText(['No jobs match.']);

    // The job's own page lists its tags.
    await page.goto(`/jobs/${both!.id}`);
    await expect(page.getByTestId('job-fields').getByTestId('job-tags').locator('li')).toHaveText([tag, 'vip']);
  });

  test('a tag no job could carry is refused in a sentence, on the page and by the API', async ({ page }) => {
    await login(page, 'admin');
    await page.goto(`/jobs?tag=${'x'.repeat(65)}`);
    await expect(page.getByTestId('page-error')).toHaveText(
      'That filter is not valid (tag: a tag is 1 to 64 characters).',
    );
    // The form stays, with what was asked, to correct it.
    await expect(page.getByLabel('Tag', { exact: true })).toHaveValue('x'.repeat(65));
    await page.goto(`/jobs?tag=${encodeURIComponent('acme\u0007')}`);
    await expect(page.getByTestId('page-error')).toHaveText(
      'That filter is not valid (tag: a tag holds no control characters).',
    );

    const refused = await page.request.post('/api/bulk/preview', {
      headers: FROM_DASHBOARD,
      data: { action: 'cancel', filter: { tag: 'x'.repeat(65) } },
    });
    expect(refused.status()).toBe(400);
    expect((await refused.json()).message).toContain('tag: a tag is 1 to 64 characters');
  });

  test('the bulk preview API takes the tag filter: it freezes the tagged jobs only', async ({ page }) => {
    const queue = uniqueQueue('tags-api');
    const tag = `bulk-${queue}`;
    const jobs = await enqueueMany(db(), [
      { queue, kind: 'test.sleep', payload: { ms: 0 }, tags: [tag] },
      { queue, kind: 'test.sleep', payload: { ms: 0 } },
      { queue, kind: 'test.sleep', payload: { ms: 0 }, tags: ['vip', tag] },
    ]);
    await login(page, 'admin');
    const preview = await page.request.post('/api/bulk/preview', {
      headers: FROM_DASHBOARD,
      data: { action: 'cancel', filter: { tag } },
    });
    expect(preview.status()).toBe(200);
    const body: { matched: number; jobs: { id: string }[] } = await preview.json();
    expect(body.matched).toBe(2);
    expect(body.jobs.map((j) => j.id).sort()).toEqual([jobs[0]!.id, jobs[2]!.id].sort());

    // The page's bulk cancel previews the same set from the list's filter.
    await page.goto(`/jobs?tag=${tag}`);
    await page.getByRole('button', { name: 'Bulk cancel…' }).click();
    await expect(page.getByTestId('bulk-count')).toHaveText('2');
  });

  test('a tag quoting a masked payload value is scrubbed, and a viewer cannot find the job by it', async ({ page }) => {
    // test.leak masks customer.email (test/handlers.ts); the e2e worker registered it. A queue
    // no worker serves: the job stays ready and never runs.
    const queue = uniqueQueue('tags-masked');
    const email = `tagged.${queue}@example.com`;
    const tag = `to:${email}`;
    const plain = `plain-${queue}`;
    const { id } = await enqueue(db(), {
      queue,
      kind: 'test.leak',
      payload: { customer: { email }, accessToken: `tok_${queue}` },
      tags: [plain, tag],
    });
    await login(page, 'viewer');
    await page.goto(`/jobs?tag=${plain}`);
    const rows = page.getByTestId('jobs-table').locator('tbody tr');
    await expect(rows.locator('td:first-child a')).toHaveText([id]);
    await expect(rows.getByTestId('job-tags').locator('li')).toHaveText([plain, 'to:••••••']);
    expect(await page.content()).not.toContain(email);
    await page.goto(`/jobs?tag=${encodeURIComponent(tag)}`);
    await expect(rows).toHaveText(['No jobs match.']);
    await page.goto(`/jobs/${id}`);
    await expect(page.getByTestId('job-fields').getByTestId('job-tags').locator('li')).toHaveText([plain, 'to:••••••']);
    expect(await page.content()).not.toContain(email);

    // An admin, who may reveal the payload anyway, finds it by the tag (shown scrubbed still).
    await page.context().clearCookies();
    await login(page, 'admin');
    await page.goto(`/jobs?tag=${encodeURIComponent(tag)}`);
    await expect(rows.locator('td:first-child a')).toHaveText([id]);
  });
});

test.describe('snooze', () => {
  test("a job's attempt history shows the attempt its handler snoozed, then the one that completed it", async ({
    page,
  }) => {
    // The real e2e worker (queue e2e-work) runs test.snooze: snooze(1500) once, then done.
    const tag = `snoozy-${uniqueQueue('snooze')}`;
    const { id } = await enqueue(db(), {
      queue: 'e2e-work',
      kind: 'test.snooze',
      payload: { ms: 1500, times: 1 },
      tags: [tag],
    });
    await expect.poll(() => jobState(id), { timeout: 30_000 }).toBe('done');

    await login(page, 'viewer');
    await page.goto(`/jobs/${id}`);
    const attempts = page.getByTestId('attempts-table').locator('tbody tr');
    await expect(attempts).toHaveCount(2);
    const snoozed = attempts.nth(0);
    await expect(snoozed.locator('td').nth(0)).toHaveText('1');
    await expect(snoozed.locator('td[data-outcome="snoozed"]')).toHaveText('snoozed for 1.5 s');
    // Not an error: the error and class columns are empty.
    await expect(snoozed.locator('td').nth(6)).toHaveText('');
    await expect(snoozed.locator('td').nth(7)).toHaveText('');
    await expect(attempts.nth(1).locator('td[data-outcome="completed"]')).toHaveText('completed');
    // The snooze cost no attempt: one charged, one handed back.
    const fields = page.getByTestId('job-fields');
    await expect(fields).toContainText('1 of 10 charged');
    await expect(fields).toContainText('1 handed back or released, not charged');
    await expect(fields).toContainText('1 time, 1.5 s in all, not charged');

    // Found by its tag too.
    await page.goto(`/jobs?tag=${tag}`);
    await expect(page.getByTestId('jobs-table').locator('tbody td:first-child a')).toHaveText([id]);
  });
});
