/**
 * The support actions (docs/dashboard.md, "Support actions"): an operator runs a scheduled job
 * now (and the e2e worker runs it), reschedules one, changes a ready job's priority and re-runs
 * a done job of a re-run-safe kind (both pages link the other); an admin purges a queue's old
 * dead jobs after a preview. Each is refused for a viewer (no button; the API answers 403) and
 * for a job that changed since the page loaded (a sentence on the page, nothing changed).
 */
import type { Page } from '@playwright/test';
import { sql } from 'drizzle-orm';
import {
  claim,
  completeIfLeaseHeld,
  enqueue,
  registerKinds,
  retryIfTerminal,
  setPriorityIfUnchanged,
} from '../db/queue/index.ts';
import { run } from '../db/queue/executor.ts';
import { db, deadJob, expect, FROM_DASHBOARD, jobState, login, test, uniqueQueue } from './fixtures.ts';

const RERUN_KIND = 'e2e.rerun';

/** A job's row as the tests look at it. */
async function row(id: string) {
  const [found] = await run<{ state: string; priority: number; run_at: string; updated_at: string; attempts: number }>(
    db(),
    sql`SELECT state, priority, to_json(run_at) #>> '{}' AS run_at, to_json(updated_at) #>> '{}' AS updated_at, attempts
        FROM leasehold.jobs WHERE id = ${id}::uuid`,
  );
  return found;
}

/** A job waiting an hour on a queue no worker serves. */
async function scheduledJob(queue = uniqueQueue('support-sched')): Promise<string> {
  return (await enqueue(db(), { queue, kind: 'test.sleep', payload: { ms: 0 }, delayMs: 3_600_000 })).id;
}

/** A done job of a kind registered re-run safe, on a queue no worker serves. */
async function doneRerunJob(): Promise<string> {
  const queue = uniqueQueue('support-rerun');
  await registerKinds(db(), [
    {
      kind: RERUN_KIND,
      version: 1,
      defaultQueue: queue,
      displayName: 'e2e re-run',
      redactedPaths: [],
      rerunSafe: true,
    },
  ]);
  const { id } = await enqueue(db(), { queue, kind: RERUN_KIND, payload: { receipt: 7 } });
  const [job] = await claim(db(), { queues: [queue], workerId: 'e2e-seed', limit: 1 });
  await completeIfLeaseHeld(db(), job!);
  return id;
}

/** Three dead jobs of a queue of their own, two of them finished ten days ago. */
async function deadJobsToPurge(): Promise<{ queue: string; old: string[]; recent: string }> {
  const queue = uniqueQueue('support-purge');
  const ids = [await deadJob(queue), await deadJob(queue), await deadJob(queue)];
  const old = ids.slice(0, 2);
  await run(
    db(),
    sql`UPDATE leasehold.jobs SET finished_at = finished_at - interval '10 days' WHERE id = ANY(${sql.param(old)}::uuid[])`,
  );
  return { queue, old, recent: ids[2]! };
}

/** A time as the browser's datetime-local input takes it, `ms` from now, in the browser's zone. */
function localTime(page: Page, ms: number): Promise<string> {
  return page.evaluate((offset) => {
    const d = new Date(Date.now() + offset);
    const pad = (n: number) => String(n).padStart(2, '0');
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
  }, ms);
}

async function auditOf(action: string, id: string) {
  return run<{ actor: string; outcome: string; detail: { reason?: string; refused?: string | null } }>(
    db(),
    sql`SELECT actor, outcome, detail FROM leasehold.audit_log WHERE action = ${action} AND job_ids @> ARRAY[${id}::uuid] ORDER BY id`,
  );
}

test('an operator runs a scheduled job now and the real worker runs it, audited with the reason', async ({ page }) => {
  const { id } = await enqueue(db(), {
    queue: 'e2e-work',
    kind: 'test.sleep',
    payload: { ms: 0 },
    delayMs: 3_600_000,
  });
  await login(page, 'operator');
  await page.goto(`/jobs/${id}`);
  await page.getByRole('button', { name: 'Run now…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Run this job now?' });
  await dialog.getByLabel(/Reason/).fill('the customer is waiting');
  await dialog.getByRole('button', { name: 'Run it now' }).click();
  await expect(page.getByTestId('support-result')).toContainText('Run now: the job is due');
  await expect.poll(() => jobState(id), { timeout: 20_000 }).toBe('done');
  expect(await auditOf('run_now', id)).toMatchObject([
    { actor: 'operator@example.com', outcome: 'applied', detail: { reason: 'the customer is waiting' } },
  ]);
});

test('an operator reschedules a job; a time in the past is refused in the dialog, nothing written', async ({
  page,
}) => {
  const id = await scheduledJob();
  const before = await row(id);
  await login(page, 'operator');
  await page.goto(`/jobs/${id}`);
  await page.getByRole('button', { name: 'Reschedule…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Reschedule this job' });
  const when = dialog.getByLabel(/New run time/);
  await when.fill(await localTime(page, -86_400_000));
  await dialog.getByRole('button', { name: 'Reschedule' }).click();
  await expect(dialog.getByTestId('reschedule-dialog-error')).toContainText(
    'the new run time must be in the future and at most 365 days from now',
  );
  expect(await row(id)).toEqual(before);
  await when.fill(await localTime(page, 2 * 86_400_000));
  await dialog.getByRole('button', { name: 'Reschedule' }).click();
  await expect(page.getByTestId('support-result')).toContainText('Rescheduled');
  const runAt = Date.parse((await row(id))!.run_at);
  expect(runAt).toBeGreaterThan(Date.now() + 86_400_000);
  expect(runAt).toBeLessThan(Date.now() + 3 * 86_400_000);
});

test('an operator changes a ready job’s priority', async ({ page }) => {
  const { id } = await enqueue(db(), { queue: uniqueQueue('support-prio'), kind: 'test.sleep', payload: { ms: 0 } });
  await login(page, 'operator');
  await page.goto(`/jobs/${id}`);
  await page.getByRole('button', { name: 'Change priority…' }).click();
  const dialog = page.getByRole('dialog', { name: "Change this job's priority" });
  await dialog.getByLabel(/Priority/).fill('50');
  await dialog.getByRole('button', { name: 'Change the priority' }).click();
  await expect(page.getByTestId('support-result')).toContainText('Priority changed');
  expect((await row(id))!.priority).toBe(50);
});

test('an operator re-runs a done job of a re-run-safe kind: a copy, each page linking the other', async ({ page }) => {
  const id = await doneRerunJob();
  await login(page, 'operator');
  await page.goto(`/jobs/${id}`);
  await page.getByRole('button', { name: 'Re-run…' }).click();
  await page.getByRole('dialog', { name: 'Re-run this job?' }).getByRole('button', { name: 'Re-run it' }).click();
  await expect(page.getByTestId('support-result')).toContainText('Re-run: a copy of the job was enqueued.');
  const copy = (await page.getByTestId('rerun-copy').getAttribute('href'))!.split('/').at(-1)!;
  expect(await jobState(copy)).toMatch(/ready|running|done/);
  expect(await jobState(id)).toBe('done');
  await expect(page.getByTestId('rerun-as')).toContainText(copy);
  await page.getByTestId('rerun-copy').click();
  await expect(page).toHaveURL(new RegExp(`/jobs/${copy}$`));
  await expect(page.getByTestId('rerun-of')).toHaveText(`re-run of ${id}`);
  await page.getByTestId('rerun-of').getByRole('link').click();
  await expect(page).toHaveURL(new RegExp(`/jobs/${id}$`));
});

test('an admin purges a queue’s old dead jobs after a preview, audited once', async ({ page }) => {
  const { queue, old, recent } = await deadJobsToPurge();
  await login(page, 'admin');
  await page.goto(`/queues/${queue}`);
  const date = (await localTime(page, -2 * 86_400_000)).slice(0, 10);
  await page.getByLabel(/Dead jobs that finished before/).fill(date);
  await page.getByRole('button', { name: 'Preview the purge' }).click();
  await expect(page.getByTestId('purge-preview')).toContainText(`2 dead jobs of ${queue} finished before then.`);
  await page.getByRole('button', { name: 'Purge 2 dead jobs…' }).click();
  const dialog = page.getByRole('dialog', { name: `Purge 2 dead jobs of ${queue}?` });
  await dialog.getByLabel(/Reason/).fill('old noise');
  await dialog.getByRole('button', { name: 'Purge them' }).click();
  await expect(page.getByTestId('purge-result')).toHaveText(`Purged 2 of 2 dead jobs of ${queue}.`);
  expect(await Promise.all(old.map(jobState))).toEqual(['missing', 'missing']);
  expect(await jobState(recent)).toBe('dead');
  expect(await auditOf('purge_dead', old[0]!)).toMatchObject([
    { actor: 'admin@example.com', outcome: 'applied', detail: { reason: 'old noise' } },
  ]);
});

test('a viewer gets no support action and the API refuses each with 403, writing nothing', async ({ page }) => {
  const scheduled = await scheduledJob();
  const done = await doneRerunJob();
  const { queue, old } = await deadJobsToPurge();
  const before = await row(scheduled);
  await login(page, 'viewer');
  await page.goto(`/jobs/${scheduled}`);
  await expect(page.getByTestId('job-fields')).toBeVisible();
  await expect(page.getByRole('button', { name: /Run now…|Reschedule…|Change priority…/ })).toHaveCount(0);
  await page.goto(`/jobs/${done}`);
  await expect(page.getByTestId('job-fields')).toBeVisible();
  await expect(page.getByRole('button', { name: 'Re-run…' })).toHaveCount(0);
  await page.goto(`/queues/${queue}`);
  await expect(page.getByTestId('groups-table')).toBeVisible();
  await expect(page.getByRole('button', { name: 'Preview the purge' })).toHaveCount(0);
  const seen = { state: 'ready', attempts: 0, updatedAt: new Date(before!.updated_at).toISOString() };
  const writes: [string, unknown][] = [
    [`/api/jobs/${scheduled}/run-now`, { seen }],
    [`/api/jobs/${scheduled}/reschedule`, { seen, runAt: new Date(Date.now() + 86_400_000).toISOString() }],
    [`/api/jobs/${scheduled}/priority`, { seen, priority: 9 }],
    [`/api/jobs/${done}/rerun`, { seen: { ...seen, state: 'done', attempts: 1 } }],
    [`/api/queues/${queue}/purge/preview`, { before: new Date().toISOString() }],
    [`/api/queues/${queue}/purge`, { before: new Date().toISOString(), ids: old, confirm: true }],
  ];
  for (const [path, data] of writes) {
    const refused = await page.request.post(path, { headers: FROM_DASHBOARD, data });
    expect(refused.status(), path).toBe(403);
  }
  expect(await row(scheduled)).toEqual(before);
  expect(await Promise.all(old.map(jobState))).toEqual(['dead', 'dead']);
  // An operator may not purge either: it is the admin's.
  await login(page, 'operator');
  const purge = await page.request.post(`/api/queues/${queue}/purge`, { headers: FROM_DASHBOARD, data: writes[5]![1] });
  expect(purge.status()).toBe(403);
});

test('each action is refused with a sentence when the job changed since the page loaded', async ({ page }) => {
  const queue = uniqueQueue('support-moved');
  const scheduled = await scheduledJob(queue);
  const done = await doneRerunJob();
  await login(page, 'operator');
  const other = { actor: 'other@example.com' };
  /** Another operator changes the job's priority after the page loaded. */
  const changeBehind = async (id: string, priority: number) => {
    const now = await row(id);
    const seen = { state: 'ready' as const, attempts: now!.attempts, updatedAt: new Date(now!.updated_at) };
    expect(await setPriorityIfUnchanged(db(), { id, priority, seen, ...other })).toMatchObject({ applied: true });
  };
  /** Opens the dialog, lets `meanwhile` change the job, then confirms. */
  const attempt = async (button: string, dialogName: string, submit: string, meanwhile: () => Promise<void>) => {
    await page.getByRole('button', { name: button }).click();
    const dialog = page.getByRole('dialog', { name: dialogName });
    await expect(dialog).toBeVisible();
    await meanwhile();
    await dialog.getByRole('button', { name: submit }).click();
  };
  for (const [button, dialogName, submit, verb] of [
    ['Run now…', 'Run this job now?', 'Run it now', 'Not run now'],
    ['Reschedule…', 'Reschedule this job', 'Reschedule', 'Not rescheduled'],
    ['Change priority…', "Change this job's priority", 'Change the priority', 'Priority not changed'],
  ] as const) {
    await page.goto(`/jobs/${scheduled}`);
    let before: Awaited<ReturnType<typeof row>>;
    await attempt(button, dialogName, submit, async () => {
      await changeBehind(scheduled, (await row(scheduled))!.priority === 1 ? 2 : 1);
      before = await row(scheduled);
    });
    await expect(page.getByTestId('support-result')).toContainText(`${verb}: the job changed since you looked`);
    expect(await row(scheduled)).toEqual(before!);
  }
  // A done job never changes: what can happen to it is its removal (retention).
  await page.goto(`/jobs/${done}`);
  await attempt('Re-run…', 'Re-run this job?', 'Re-run it', async () => {
    await run(db(), sql`DELETE FROM leasehold.jobs WHERE id = ${done}::uuid`);
  });
  await expect(page.getByTestId('support-result')).toContainText('Not re-run: no job with this id exists any more');
  // A purge's frozen set: a previewed job retried since is left alone.
  const purge = await deadJobsToPurge();
  await login(page, 'admin');
  await page.goto(`/queues/${purge.queue}`);
  await page.getByLabel(/Dead jobs that finished before/).fill((await localTime(page, -2 * 86_400_000)).slice(0, 10));
  await page.getByRole('button', { name: 'Preview the purge' }).click();
  await expect(page.getByTestId('purge-preview')).toContainText('2 dead jobs');
  expect(await retryIfTerminal(db(), { id: purge.old[1]!, ...other })).toMatchObject({ applied: true });
  await page.getByRole('button', { name: 'Purge 2 dead jobs…' }).click();
  await page
    .getByRole('dialog', { name: /^Purge 2 dead jobs/ })
    .getByRole('button', { name: 'Purge them' })
    .click();
  await expect(page.getByTestId('purge-result')).toHaveText(
    `Purged 1 of 2 dead jobs of ${purge.queue}. 1 changed since the preview (retried or already removed) and were left alone.`,
  );
  expect(await jobState(purge.old[1]!)).toBe('ready');
});
