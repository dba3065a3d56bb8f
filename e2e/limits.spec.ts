/**
 * Limits, end to end: a kind limited to 1 with one attempt running under it (the seed's claim;
 * no worker serves the queue) leaves its other jobs waiting, and the job page and the jobs list
 * say why. A viewer sees the Limits page without a form, and the API refuses them; an admin
 * changes the limit in its dialog (bad input refused in a sentence, nothing written), the
 * enforced value changes, the job waits no more, and the change is one `set_limit` audit row.
 */
import { sql } from 'drizzle-orm';
import { claim, declareLimits, enqueueMany, pauseLimit } from '../db/queue/index.ts';
import { run } from '../db/queue/executor.ts';
import { db, expect, FROM_DASHBOARD, login, test, uniqueQueue } from './fixtures.ts';

/** The `set_limit` audit rows of `key`. */
async function auditRows(key: string) {
  return run<{
    actor: string;
    reason: string | null;
    after: { max: number | null; rate: number | null; per_ms: number | null; paused_until?: string | null };
  }>(
    db(),
    sql`SELECT actor, detail->>'reason' AS reason, detail->'after' AS after FROM leasehold.audit_log
        WHERE action = 'set_limit' AND detail->>'limit' = ${key} ORDER BY id`,
  );
}

test('a job waiting for its kind’s limit says so, and an admin raises the limit on the Limits page', async ({
  page,
}) => {
  const kind = uniqueQueue('e2e.limited');
  const queue = uniqueQueue('limits');
  const key = `kind:${kind}`;
  // As the kind's workers declare it (workers/handler.ts: the kind counts toward its own limit).
  await declareLimits(db(), [{ scope: 'kind', name: kind, max: 1, kinds: [kind] }]);
  const jobs = await enqueueMany(
    db(),
    [1, 2, 3].map((i) => ({ queue, kind, payload: { i } })),
  );
  const claimed = await claim(db(), { queues: [queue], workerId: 'w', limit: 5, limits: [key] });
  expect(claimed, 'the limit of 1 lets one claim through').toHaveLength(1);
  const waiting = jobs.find((j) => j.id !== claimed[0]!.id)!;
  const why = `waiting: kind ${kind} at its limit of 1`;

  await login(page, 'viewer');
  await page.goto(`/jobs/${waiting.id}`);
  await expect(page.getByTestId('waiting-reasons')).toHaveText(why);
  await page.goto(`/jobs?queue=${queue}`);
  await expect(page.getByTestId('jobs-table')).toContainText(waiting.id);
  await expect(page.getByTestId('waiting-reason')).toHaveText([why, why]);

  await page.goto('/limits');
  const row = page.getByTestId(`limit-${key}`);
  await expect(row.getByTestId('enforced-max')).toHaveText('1');
  await expect(row.getByTestId('running')).toHaveText('1');
  await expect(row.getByTestId('waiting')).toHaveText('2');
  await expect(row.getByTestId('set-by')).toHaveText('—');
  await expect(page.getByRole('button', { name: /^Change the limit/ })).toHaveCount(0);
  const refused = await page.request.post('/api/limits', {
    headers: FROM_DASHBOARD,
    data: { scope: 'kind', name: kind, max: 3 },
  });
  expect(refused.status()).toBe(403);

  await page.context().clearCookies();
  await login(page, 'admin');
  await page.goto('/limits');
  const change = row.getByRole('button', { name: `Change the limit ${key}` });
  await change.click();
  const dialog = page.getByRole('dialog', { name: `Change the limit ${key}` });
  const max = dialog.getByLabel(/Run-time maximum/);
  await expect(max).toBeFocused();
  await max.fill('0');
  await dialog.getByRole('button', { name: 'Save the limit' }).click();
  await expect(dialog.getByTestId('limit-error')).toHaveText(
    `${key} was not changed: the maximum must be a whole number from 1 to 1,000,000 (empty clears it), not "0".`,
  );
  await max.fill('3');
  await dialog.getByLabel(/Run-time rate/).fill('100/1s');
  await dialog.getByLabel(/Reason/).fill('a second relay is up');
  await dialog.getByRole('button', { name: 'Save the limit' }).click();
  await expect(dialog).toBeHidden();
  await expect(change).toBeFocused();
  await expect(row.getByTestId('limit-result')).toHaveText(
    `Saved ${key}: the run-time maximum is 3 (was none); the run-time rate is 100/1s (was none). The next claim of the limit uses it (recorded in the audit log).`,
  );
  await expect(row.getByTestId('enforced-max')).toHaveText('3');
  await expect(row.getByTestId('enforced-rate')).toHaveText('100/1s');
  await expect(row.getByTestId('set-by')).toContainText('admin@example.com');

  // One audit row: the refused try wrote nothing.
  expect(await auditRows(key)).toEqual([
    {
      actor: 'admin@example.com',
      reason: 'a second relay is up',
      after: { max: 3, rate: 100, per_ms: 1000, paused_until: null },
    },
  ]);
  await page.goto('/audit?action=set_limit');
  await expect(page.getByTestId('audit-table').getByRole('row', { name: /a second relay is up/ })).toContainText(
    'admin@example.com',
  );

  // The limit leaves a start now: the job no longer says it waits.
  await page.goto(`/jobs/${waiting.id}`);
  await expect(page.getByTestId('job-fields')).toContainText(queue);
  await expect(page.getByTestId('waiting-reasons')).toHaveCount(0);
});

test('an admin clears a run-time value; the declaration applies again', async ({ page }) => {
  const resource = uniqueQueue('e2e-relay');
  const key = `resource:${resource}`;
  await declareLimits(db(), [{ scope: 'resource', name: resource, max: 4, kinds: ['e2e.mail'] }]);
  await login(page, 'admin');
  const set = await page.request.post('/api/limits', {
    headers: FROM_DASHBOARD,
    data: { scope: 'resource', name: resource, max: '2' },
  });
  expect(set.status()).toBe(200);
  await page.goto('/limits');
  const row = page.getByTestId(`limit-${key}`);
  await expect(row.getByTestId('enforced-max')).toHaveText('2');
  await row.getByRole('button', { name: `Change the limit ${key}` }).click();
  const dialog = page.getByRole('dialog', { name: `Change the limit ${key}` });
  await expect(dialog.getByLabel(/Run-time maximum/)).toHaveValue('2');
  await dialog.getByLabel(/Run-time maximum/).fill('');
  await dialog.getByRole('button', { name: 'Save the limit' }).click();
  await expect(row.getByTestId('limit-result')).toContainText(
    'the run-time maximum is cleared (was 2): the declaration applies again',
  );
  await expect(row.getByTestId('enforced-max')).toHaveText('4');
  await expect(row.getByTestId('set-by')).toHaveText('—');
  expect((await auditRows(key)).map((r) => r.after.max)).toEqual([2, null]);
});

test("an admin lifts a RateLimitedError's pause on the Limits page, audited", async ({ page }) => {
  const resource = uniqueQueue('e2e-partner');
  const key = `resource:${resource}`;
  await declareLimits(db(), [{ scope: 'resource', name: resource, max: 4, kinds: ['e2e.mail'] }]);
  await pauseLimit(db(), key, 600_000, 'RateLimitedError: 429 from the partner');
  await login(page, 'admin');
  await page.goto('/limits');
  const row = page.getByTestId(`limit-${key}`);
  await expect(row).toContainText('RateLimitedError: 429 from the partner');
  await row.getByRole('button', { name: `Change the limit ${key}` }).click();
  const dialog = page.getByRole('dialog', { name: `Change the limit ${key}` });
  await dialog.getByLabel(/Lift the pause/).check();
  await dialog.getByLabel(/Reason/).fill('the partner raised our quota');
  await dialog.getByRole('button', { name: 'Save the limit' }).click();
  await expect(row.getByTestId('limit-result')).toContainText('the pause is lifted');
  await expect(row).not.toContainText('RateLimitedError: 429 from the partner');
  expect((await auditRows(key)).map((r) => r.reason)).toEqual(['the partner raised our quota']);
});
