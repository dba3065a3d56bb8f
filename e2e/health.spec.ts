/**
 * Health and alerts (issue 41), end to end. A second connection with an application name of its
 * own opens a transaction and holds it while the e2e worker drains jobs: the Health page, open
 * before, names that session (pid and application name) within one refresh and without a reload,
 * its client address and query for an admin only; after COMMIT it names it no more. An admin sets
 * a backlog-age threshold for a queue whose oldest ready job waits 7 min (0 and `abc` refused in
 * a sentence, nothing written): the alert fires, the overview marks the queue, and the change is
 * one `set_queue_alert` audit row. A viewer sees the alerts without a form, and the API refuses
 * them. The Workers page lists the e2e worker and a registered one with version, schema range and
 * kind versions, and the queue whose jobs wait for a kind no live worker runs.
 */
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { POLL } from '../components/queries.ts';
import { setQueueAlert } from '../db/queue/alerts.ts';
import { run } from '../db/queue/executor.ts';
import { enqueueMany } from '../db/queue/index.ts';
import { deregisterWorker, registerWorker } from '../db/queue/worker-registry.ts';
import { SCHEMA_VERSION, SUPPORTED_SCHEMA } from '../db/schema-version.ts';
import { db, expect, FROM_DASHBOARD, jobState, login, test, uniqueQueue } from './fixtures.ts';

/** One refresh of the page (its poll), and the slack for the request and the render after it. */
const ONE_REFRESH = { timeout: POLL.health + 3_000 };

/** The `set_queue_alert` audit rows of `queue`. */
async function auditRows(queue: string) {
  return run<{ actor: string; reason: string | null; alert: string; after: number | null }>(
    db(),
    sql`SELECT actor, detail->>'reason' AS reason, detail->>'alert' AS alert, (detail->>'after')::float8 AS after
        FROM leasehold.audit_log WHERE action = 'set_queue_alert' AND queue = ${queue} ORDER BY id`,
  );
}

async function storedAlerts(queue: string) {
  return run<{ alert: string; threshold: number; set_by: string }>(
    db(),
    sql`SELECT alert, threshold, set_by FROM leasehold.queue_alerts WHERE queue = ${queue} ORDER BY alert`,
  );
}

/** Ready jobs of a kind no worker runs, due 7 minutes ago: the queue's oldest ready job is 7 min old. */
async function waitingQueue(prefix: string, count = 2): Promise<string> {
  const queue = uniqueQueue(prefix);
  const runAt = new Date(Date.now() - 7 * 60_000);
  await enqueueMany(
    db(),
    Array.from({ length: count }, (_, i) => ({ queue, kind: 'e2e.unrun', payload: { i }, runAt })),
  );
  return queue;
}

test('the Health page names a session holding the horizon within one refresh, and no more after COMMIT', async ({
  page,
}) => {
  const application = uniqueQueue('e2e-holder');
  const holder = new pg.Client({ connectionString: process.env.E2E_DATABASE_URL, application_name: application });
  await holder.connect();
  try {
    const pid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    await login(page, 'viewer');
    await page.goto('/health');
    await expect(page.getByTestId('check-horizon').getByTestId('check-state')).toBeVisible();
    await expect(page.getByTestId('check-autovacuum').getByTestId('check-sentence')).toContainText('autovacuum');
    // A mark on the window: a reload (or a navigation) would lose it.
    await page.evaluate(() => Reflect.set(window, 'e2eSamePage', true));

    await holder.query('BEGIN');
    await holder.query('SELECT pg_current_xact_id()');
    // The e2e worker drains jobs while the transaction holds the horizon.
    const jobs = await enqueueMany(
      db(),
      Array.from({ length: 5 }, (_, i) => ({ queue: 'e2e-work', kind: 'test.sleep', payload: { ms: 0, i } })),
    );

    const row = page.getByTestId(`holder-session-${pid}`);
    await expect(row).toBeVisible(ONE_REFRESH);
    await expect(row.getByTestId('holder-name')).toHaveText(`pid ${pid}`);
    await expect(row.getByTestId('holder-application')).toHaveText(application);
    expect(await page.evaluate(() => Reflect.get(window, 'e2eSamePage'))).toBe(true);
    // A viewer: no client address, no query.
    await expect(page.getByTestId('holders-table').getByRole('columnheader')).toContainText(['holder', 'open for']);
    await expect(page.getByRole('columnheader', { name: 'client address' })).toHaveCount(0);
    await expect(row.getByTestId('holder-query')).toHaveCount(0);
    await expect
      .poll(() => Promise.all(jobs.map((j) => jobState(j.id))), { timeout: 30_000 })
      .toEqual(jobs.map(() => 'done'));

    // An admin sees where it connects from and its query's start.
    await page.context().clearCookies();
    await login(page, 'admin');
    await page.goto('/health');
    await expect(row.getByTestId('holder-application')).toHaveText(application);
    await expect(row.getByTestId('holder-query')).toHaveText('SELECT pg_current_xact_id()');
    await expect(page.getByRole('columnheader', { name: 'client address' })).toBeVisible();
    await page.evaluate(() => Reflect.set(window, 'e2eSamePage', true));

    const read = await page.getByTestId('health-read').getAttribute('datetime');
    await holder.query('COMMIT');
    // The next refresh (a new read time) names it no more, in the table and in the horizon check.
    await expect(page.getByTestId('health-read')).not.toHaveAttribute('datetime', read!, ONE_REFRESH);
    await expect(row).toHaveCount(0, ONE_REFRESH);
    await expect(page.getByTestId('check-horizon').getByTestId('check-sentence')).not.toContainText(`pid ${pid}`);
    await expect(page.getByTestId('check-horizon').getByTestId('check-state')).toHaveAttribute(
      'data-state',
      /^(ok|warning|critical)$/,
    );
    expect(await page.evaluate(() => Reflect.get(window, 'e2eSamePage'))).toBe(true);
  } finally {
    await holder.end();
  }
});

test('an admin sets a backlog-age threshold: the alert fires, the overview marks the queue, one audit row', async ({
  page,
}) => {
  const queue = await waitingQueue('e2e-alerts');
  const figure = 'oldest_ready_age_seconds';
  await login(page, 'admin');
  await page.goto('/health');
  const opener = page.getByRole('button', { name: 'Set a backlog alert' });
  await opener.click();
  const dialog = page.getByRole('dialog', { name: 'Set a backlog alert' });
  await expect(dialog.getByLabel('Queue')).toBeFocused();
  await dialog.getByLabel('Queue').fill(queue);
  await dialog.getByLabel('Figure').selectOption({ label: 'oldest ready job’s age' });
  const threshold = dialog.getByLabel(/^Threshold/);
  const save = dialog.getByRole('button', { name: 'Save the alert' });
  await threshold.fill('0');
  await save.click();
  await expect(dialog.getByTestId('alert-error')).toHaveText(
    `The alert of queue ${queue} on the oldest ready job’s age was not changed: threshold: 0: expected a duration such as 90s, 5m, 2h or 1d, or seconds, more than 0. Nothing was written.`,
  );
  await threshold.fill('abc');
  await save.click();
  await expect(dialog.getByTestId('alert-error')).toHaveText(
    `The alert of queue ${queue} on the oldest ready job’s age was not changed: threshold: "abc": expected a duration such as 90s, 5m, 2h or 1d, or seconds, more than 0. Nothing was written.`,
  );
  expect(await auditRows(queue)).toEqual([]);
  expect(await storedAlerts(queue)).toEqual([]);

  await threshold.fill('5m');
  await dialog.getByLabel(/Reason/).fill('e2e: five minutes is the promise');
  await save.click();
  await expect(dialog).toBeHidden();
  await expect(opener).toBeFocused();
  await expect(page.getByTestId('alert-result')).toHaveText(
    `Saved the alert of queue ${queue} on the oldest ready job’s age: it fires at 5 min or more (was none). Recorded in the audit log.`,
  );
  const alertRow = page.getByTestId(`alert-${queue}-${figure}`);
  await expect(alertRow.getByTestId('alert-threshold')).toHaveText('5 min');
  await expect(alertRow.getByTestId('alert-source')).toContainText('run time (by admin@example.com');
  // 7 min when enqueued: 8 min on a slow run.
  await expect(alertRow.getByTestId('alert-value')).toHaveText(/^[78] min$/);
  await expect(alertRow.getByTestId('alert-firing')).toHaveText('firing');

  expect(await auditRows(queue)).toEqual([
    { actor: 'admin@example.com', reason: 'e2e: five minutes is the promise', alert: figure, after: 300 },
  ]);
  expect(await storedAlerts(queue)).toEqual([{ alert: figure, threshold: 300, set_by: 'admin@example.com' }]);

  await page.goto('/');
  const badge = page.getByTestId(`backlog-${queue}`).getByTestId('over-alert');
  await expect(badge).toHaveText(/^over alert: oldest ready [78] min ≥ 5 min$/);
  // The sentence (db/queue/alerts.ts) as the badge's title: the age to the second.
  await expect(badge).toHaveAttribute(
    'title',
    new RegExp(`^${queue}: oldest ready job’s age [78] min( \\d+ s)? is at or over its threshold of 5 min$`),
  );

  await page.goto('/audit?action=set_queue_alert');
  await expect(
    page.getByTestId('audit-table').getByRole('row', { name: /e2e: five minutes is the promise/ }),
  ).toContainText('admin@example.com');

  // Cleared from its row: the queue is no longer marked.
  await page.goto('/health');
  await alertRow.getByRole('button', { name: `Change the alert of ${queue} on the oldest ready job’s age` }).click();
  const change = page.getByRole('dialog', { name: `Change the alert of ${queue} on the oldest ready job’s age` });
  await expect(change.getByLabel(/^Threshold/)).toBeFocused();
  await expect(change.getByLabel(/^Threshold/)).toHaveValue('300s');
  await change.getByLabel(/^Threshold/).fill('');
  await change.getByRole('button', { name: 'Save the alert' }).click();
  await expect(page.getByTestId('alert-result')).toContainText(
    `Cleared the alert of queue ${queue} on the oldest ready job’s age (was 5 min)`,
  );
  await expect(alertRow).toHaveCount(0);
  expect((await auditRows(queue)).map((r) => r.after)).toEqual([300, null]);
  await page.goto('/');
  await expect(page.getByTestId(`backlog-${queue}`)).toBeVisible();
  await expect(page.getByTestId(`backlog-${queue}`).getByTestId('over-alert')).toHaveCount(0);
});

test('a viewer sees the backlog alerts without a form, and the API refuses them', async ({ page }) => {
  const queue = await waitingQueue('e2e-alerts-viewer', 1);
  await setQueueAlert(db(), { queue, alert: 'waiting_for_kind', threshold: 1, actor: 'admin@example.com' });
  for (const path of ['/api/health', '/api/alerts', '/api/workers']) {
    expect((await page.request.get(path)).status(), `${path} without a session`).toBe(401);
  }
  await login(page, 'viewer');
  await page.goto('/health');
  const row = page.getByTestId(`alert-${queue}-waiting_for_kind`);
  await expect(row.getByTestId('alert-threshold')).toHaveText('1');
  await expect(row.getByTestId('alert-value')).toHaveText('1');
  await expect(row.getByTestId('alert-firing')).toHaveText('firing');
  await expect(page.getByRole('button', { name: 'Set a backlog alert' })).toHaveCount(0);
  await expect(page.getByRole('button', { name: /^Change the alert/ })).toHaveCount(0);

  const refused = await page.request.post('/api/alerts', {
    headers: FROM_DASHBOARD,
    data: { queue, alert: 'waiting_for_kind', threshold: null },
  });
  expect(refused.status()).toBe(403);
  expect(await storedAlerts(queue)).toEqual([{ alert: 'waiting_for_kind', threshold: 1, set_by: 'admin@example.com' }]);
  await page.goto('/');
  await expect(page.getByTestId(`backlog-${queue}`).getByTestId('over-alert')).toHaveText(
    'over alert: no worker for kind 1 ≥ 1',
  );
});

test('the Workers page lists live workers with version, schema range and kind versions, and unrun kinds', async ({
  page,
}) => {
  const id = uniqueQueue('e2e-rolling');
  const queue = await waitingQueue('e2e-unrun', 3);
  await registerWorker(db(), {
    id,
    host: 'e2e-host',
    pid: 4711,
    queues: ['e2e-rolling'],
    concurrency: 2,
    version: '9.9.9-e2e',
    codeVersion: SCHEMA_VERSION + 1,
    schemaFrom: SCHEMA_VERSION,
    kinds: [{ kind: 'test.sleep', version: 1 }],
  });
  try {
    await login(page, 'viewer');
    await page.goto('/workers');
    const row = page.getByTestId(`worker-${id}`);
    await expect(row.getByTestId('worker-version')).toHaveText('9.9.9-e2e');
    await expect(row.getByTestId('worker-schema')).toHaveText(`${SCHEMA_VERSION}–${SCHEMA_VERSION + 1}`);
    await expect(row.getByTestId('worker-kinds')).toHaveText('test.sleep v1');
    await expect(row).toContainText('e2e-host');
    // The e2e worker (global setup): its queue, its handlers' kinds, the schema range of this code.
    const [from, to]: number[] = [SUPPORTED_SCHEMA.min, SCHEMA_VERSION];
    const range = from === to ? `${to}` : `${from}–${to}`;
    const e2e = page.getByTestId('live-workers-table').getByRole('row').filter({ hasText: 'e2e-work' });
    await expect(e2e.getByTestId('worker-kinds')).toContainText('test.sleep v1');
    await expect(e2e.getByTestId('worker-schema')).toHaveText(range);
    await expect(page.getByTestId('worker-versions')).toContainText('9.9.9-e2e (1)');
    await expect(page.getByTestId(`unrun-${queue}`)).toContainText('3');
  } finally {
    await deregisterWorker(db(), id);
  }
});
