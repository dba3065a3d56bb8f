/**
 * Fair groups, end to end: a queue whose default group maximum is 2 with group acme's two jobs
 * running (the seed's claim; no worker serves the queue) leaves acme's third waiting, and its
 * page says why in words; the queue's page lists the groups with their counts and state. An
 * operator pauses a group there (audited) and cannot set a maximum; an admin sets one group's
 * maximum in the page's form (bad input refused in a sentence, nothing written).
 */
import { sql } from 'drizzle-orm';
import { claim, enqueueMany, setGroupLimit } from '../db/queue/index.ts';
import { run } from '../db/queue/executor.ts';
import { db, expect, FROM_DASHBOARD, login, test, uniqueQueue } from './fixtures.ts';

test('a job waiting for its group’s limit says so, and the queue page lists the groups', async ({ page }) => {
  const queue = uniqueQueue('groups');
  const kind = uniqueQueue('e2e.tenant');
  const jobs = await enqueueMany(db(), [
    { queue, kind, group: 'acme' },
    { queue, kind, group: 'acme' },
    { queue, kind, group: 'acme' },
    { queue, kind, group: 'globex' },
  ]);
  await setGroupLimit(db(), { queue, max: 2, actor: 'admin@example.com', reason: 'one tenant at a time' });
  const claimed = await claim(db(), { queues: [queue], workerId: 'w', limit: 10, grouped: true });
  expect(
    claimed.filter((j) => j.group === 'acme'),
    'the limit of 2 lets two of acme through',
  ).toHaveLength(2);
  const waiting = jobs.find((j) => !claimed.some((c) => c.id === j.id))!;

  await login(page, 'viewer');
  await page.goto(`/jobs/${waiting.id}`);
  await expect(page.getByTestId('waiting-reasons')).toHaveText('waiting: group acme at its limit of 2');

  await page.goto(`/queues/${queue}`);
  await expect(page.getByTestId('default-group-max')).toHaveText('Default maximum for each group: 2');
  const acme = page.getByTestId('group-acme');
  await expect(acme.getByTestId('waiting')).toHaveText('1');
  await expect(acme.getByTestId('running')).toHaveText('2');
  await expect(acme.getByTestId('max')).toHaveText("2 (the queue's default)");
  await expect(acme.getByTestId('state')).toHaveText('at its limit of 2');
  await expect(page.getByTestId('group-globex').getByTestId('running')).toHaveText('1');
  // A viewer gets neither the pause buttons nor the form, and the API refuses them.
  await expect(page.getByRole('button', { name: /^Pause group/ })).toHaveCount(0);
  await expect(page.getByRole('form', { name: 'Set a group maximum' })).toHaveCount(0);
  const refused = await page.request.post('/api/groups/pause', {
    headers: FROM_DASHBOARD,
    data: { queue, group: 'acme' },
  });
  expect(refused.status()).toBe(403);
});

test('an operator pauses a group on the queue page, audited; an admin sets its maximum', async ({ page }) => {
  const queue = uniqueQueue('groups-ops');
  const kind = uniqueQueue('e2e.tenant');
  const [job] = await enqueueMany(db(), [{ queue, kind, group: 'initech' }]);
  await login(page, 'operator');
  await page.goto(`/queues/${queue}`);
  const row = page.getByTestId('group-initech');
  await row.getByRole('button', { name: 'Pause group initech' }).click();
  await expect(row.getByTestId('group-result')).toContainText(
    `Paused group initech of queue ${queue}: workers start none of its jobs until it is resumed`,
  );
  await expect(row.getByTestId('state')).toHaveText('paused');
  await expect(page.getByRole('form', { name: 'Set a group maximum' })).toHaveCount(0);
  await page.goto(`/jobs/${job!.id}`);
  await expect(page.getByTestId('waiting-reasons')).toHaveText(`group initech of queue ${queue} is paused`);
  expect(await claim(db(), { queues: [queue], workerId: 'w', limit: 10, grouped: true })).toEqual([]);

  await page.context().clearCookies();
  await login(page, 'admin');
  await page.goto(`/queues/${queue}`);
  const form = page.getByRole('form', { name: 'Set a group maximum' });
  await form.getByLabel(/^Group/).fill('initech');
  await form.getByLabel(/^Maximum/).fill('0');
  await form.getByRole('button', { name: 'Save the group maximum' }).click();
  await expect(form.getByTestId('group-max-result')).toHaveText(
    `group initech of queue ${queue} was not changed: the maximum must be a whole number from 1 to 1,000,000 (empty clears it), not "0".`,
  );
  await form.getByLabel(/^Maximum/).fill('3');
  await form.getByLabel(/^Reason/).fill('their plan allows three');
  await form.getByRole('button', { name: 'Save the group maximum' }).click();
  await expect(form.getByTestId('group-max-result')).toHaveText(
    `Saved: the maximum of group initech of queue ${queue} is 3 (was none). The next claim of the queue uses it (recorded in the audit log).`,
  );
  await expect(row.getByTestId('max')).toHaveText('3');
  await row.getByRole('button', { name: 'Resume group initech' }).click();
  await expect(row.getByTestId('state')).toHaveText('—');

  const audit = await run<{ action: string; actor: string; reason: string | null }>(
    db(),
    sql`SELECT action, actor, detail->>'reason' AS reason FROM leasehold.audit_log
        WHERE detail->>'queue' = ${queue} ORDER BY id`,
  );
  // The refused try wrote nothing.
  expect(audit).toEqual([
    { action: 'pause_group', actor: 'operator@example.com', reason: null },
    { action: 'set_group_limit', actor: 'admin@example.com', reason: 'their plan allows three' },
    { action: 'resume_group', actor: 'admin@example.com', reason: null },
  ]);
});
