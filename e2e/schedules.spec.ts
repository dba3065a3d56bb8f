/**
 * Schedules, end to end: a schedule declared in code (as a worker declares it at start; its
 * kind registered as its workers register it) is on the Schedules page with its next tick, and
 * its page shows its settings and its payload masked, for a viewer without a control, whose
 * writes the API refuses (403). An admin pauses a schedule that has ticked from its page, in
 * the dialog with a reason (audited as `pause_schedule`), changes its cron expression (a bad
 * one refused in a sentence, nothing written), resumes it, and is told in a sentence, nothing
 * written, when it is gone.
 */
import { sql } from 'drizzle-orm';
import { z } from 'zod';
import {
  declareSchedules,
  defineJob,
  defineSchedule,
  deleteSchedule,
  getSchedule,
  registerKinds,
} from '../db/queue/index.ts';
import { run } from '../db/queue/executor.ts';
import { MASK } from '../lib/redaction.ts';
import { db, expect, FROM_DASHBOARD, login, test, tickedSchedule, uniqueQueue } from './fixtures.ts';

const EMAIL = 'ada.schedules@example.com';
const TOKEN = 'sk-schedule-5f1c9e';
const PAYLOAD = { scope: 'all', customer: { email: EMAIL }, apiKey: TOKEN };

/** A kind version as its workers register it: `customer.email` declared secret (`apiKey` is a well-known key). */
async function registeredKind(): Promise<string> {
  const kind = uniqueQueue('e2e.report');
  await registerKinds(db(), [
    {
      kind,
      version: 1,
      defaultQueue: 'default',
      displayName: kind,
      redactedPaths: ['customer.email'],
      rerunSafe: false,
    },
  ]);
  return kind;
}

/** A yearly schedule declared in code on a queue no worker serves: it ticks in no test. */
async function declaredSchedule(): Promise<{ name: string; kind: string; queue: string }> {
  const kind = await registeredKind();
  const queue = uniqueQueue('schedules');
  const job = defineJob({
    kind,
    version: 1,
    queue,
    schema: z.object({ scope: z.string(), customer: z.object({ email: z.string() }), apiKey: z.string() }),
  });
  const name = uniqueQueue('e2e-yearly');
  await declareSchedules(db(), [
    defineSchedule({ name, job, cron: '0 0 1 1 *', payload: PAYLOAD, missed: 'skip', overlap: 'skip', jitterMs: 1500 }),
  ]);
  return { name, kind, queue };
}

test('the Schedules page lists a schedule with its next tick; its page masks the payload; a viewer gets no control', async ({
  page,
}) => {
  const { name, kind, queue } = await declaredSchedule();
  await login(page, 'viewer');
  await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Schedules' }).click();
  await expect(page).toHaveURL(/\/schedules$/);
  const row = page.getByTestId(`schedule-${name}`);
  await expect(row.getByTestId('kind')).toHaveText(`${kind} v1`);
  await expect(row.getByTestId('queue')).toHaveText(queue);
  await expect(row.getByTestId('cron')).toHaveText('0 0 1 1 * in UTC');
  await expect(row.getByTestId('next-tick')).toHaveText(`${new Date().getUTCFullYear() + 1}-01-01 00:00:00 UTC`);
  await expect(row.getByTestId('last-tick')).toHaveText('—');
  await expect(row.getByTestId('last-job')).toHaveText('—');
  await expect(row.getByTestId('state')).toHaveText('active');

  await row.getByRole('link', { name, exact: true }).click();
  await expect(page).toHaveURL(new RegExp(`/schedules/${name}$`));
  await expect(page.getByTestId('schedule-state')).toHaveText('active');
  await expect(page.getByTestId('schedule-source')).toHaveText('declared in code');
  await expect(page.getByTestId('schedule-cron')).toHaveText('"0 0 1 1 *" in UTC');
  await expect(page.getByTestId('schedule-missed')).toHaveText(
    'skip: no missed tick runs (a tick not enqueued within 1 min of its time is missed)',
  );
  await expect(page.getByTestId('schedule-overlap')).toHaveText(
    "skip: a tick is passed over while the previous tick's job has not ended",
  );
  await expect(page.getByTestId('schedule-jitter')).toHaveText('each job due up to 1,500 ms after its tick');
  await expect(page.getByTestId('ticks-table')).toContainText('No tick yet');
  const payload = JSON.parse((await page.getByTestId('schedule-payload').textContent()) ?? 'null');
  expect(payload).toEqual({ scope: 'all', customer: { email: MASK }, apiKey: MASK });
  // Neither page carries a masked value, as HTML or as the RSC payload.
  const variants: Record<string, string>[] = [{}, { RSC: '1' }];
  for (const path of ['/schedules', `/schedules/${name}`]) {
    for (const headers of variants) {
      const response = await page.request.get(path, { headers });
      expect(response.status(), `${path} ${JSON.stringify(headers)}`).toBe(200);
      const body = await response.text();
      expect(body, path).toContain(name);
      expect(body, path).not.toContain(EMAIL);
      expect(body, path).not.toContain(TOKEN);
    }
  }

  // No control for a viewer, and the API refuses their writes, writing nothing.
  await expect(page.getByRole('button', { name: /the schedule…$|cron expression…$/ })).toHaveCount(0);
  for (const [path, data] of [
    ['/api/schedules/pause', { name }],
    ['/api/schedules/resume', { name }],
    ['/api/schedules', { name, cron: '* * * * *' }],
  ] as const) {
    const refused = await page.request.post(path, { headers: FROM_DASHBOARD, data });
    expect(refused.status(), path).toBe(403);
  }
  expect(await getSchedule(db(), name)).toMatchObject({ paused: false, cron: '0 0 1 1 *', overridden: false });

  const missing = await page.goto('/schedules/no-such-schedule');
  expect(missing?.status()).toBe(404);
});

test('an admin pauses a schedule from its page (audited), changes its cron expression and resumes it', async ({
  page,
}) => {
  const { name } = await tickedSchedule(await registeredKind(), PAYLOAD);
  const reason = `the report provider is down (${name})`;
  await login(page, 'admin');
  await page.goto(`/schedules/${name}`);
  // Its ticks, each with its job (ready: no worker serves the queue).
  const ticks = page.getByTestId('ticks-table');
  await expect(ticks.getByTestId('outcome').first()).toHaveText('enqueued');
  await expect(ticks.getByTestId('job-state').first()).toHaveText('ready');
  await expect(page.getByTestId('schedule-last-job')).toHaveText('ready');

  const pause = page.getByRole('button', { name: 'Pause the schedule…' });
  await pause.click();
  const dialog = page.getByRole('dialog', { name: `Pause the schedule ${name}?` });
  await expect(dialog.getByLabel(/^Reason/)).toBeFocused();
  await dialog.getByLabel(/^Reason/).fill(reason);
  await dialog.getByRole('button', { name: 'Pause the schedule', exact: true }).click();
  await expect(dialog).toBeHidden();
  await expect(page.getByTestId('schedule-pause-result')).toHaveText(
    `Paused schedule ${name}: no tick of it is enqueued until it is resumed; jobs already enqueued still run (recorded in the audit log).`,
  );
  await expect(page.getByTestId('schedule-state')).toHaveText(`paused (${reason})`);
  await expect(page.getByTestId('schedule-next-tick')).toHaveText('— (paused)');
  await expect(page.getByRole('button', { name: 'Resume the schedule…' })).toBeFocused();
  expect(await getSchedule(db(), name)).toMatchObject({ paused: true, pausedReason: reason });

  // A bad expression is refused in the dialog, nothing written; a good one is saved.
  await page.getByRole('button', { name: 'Change the cron expression…' }).click();
  const change = page.getByRole('dialog', { name: `Change the schedule ${name}` });
  const cron = change.getByLabel(/^Cron expression/);
  await expect(cron).toBeFocused();
  await expect(cron).toHaveValue('* * * * *');
  await cron.fill('every day');
  await change.getByRole('button', { name: 'Save the schedule' }).click();
  await expect(change.getByTestId('schedule-timing-error')).toContainText(
    `Schedule ${name} was not changed: cron: "every day" is not a cron expression of 5 or 6 fields`,
  );
  expect((await getSchedule(db(), name))?.cron).toBe('* * * * *');
  await cron.fill('0 6 * * 1');
  await change.getByLabel(/^Time zone/).fill('Europe/Berlin');
  await change.getByRole('button', { name: 'Save the schedule' }).click();
  await expect(change).toBeHidden();
  await expect(page.getByTestId('schedule-timing-result')).toHaveText(
    `Saved schedule ${name}: "0 6 * * 1" in Europe/Berlin (was "* * * * *" in UTC); its ticks follow it from the next one. Recorded in the audit log.`,
  );
  await expect(page.getByTestId('schedule-cron')).toHaveText('"0 6 * * 1" in Europe/Berlin');

  await page.goto('/schedules');
  await expect(page.getByTestId(`schedule-${name}`).getByTestId('state')).toHaveText(
    `paused (${reason}), changed at run time`,
  );
  await page.goto(`/audit?action=pause_schedule&actor=admin%40example.com`);
  await expect(page.getByTestId('audit-table')).toContainText(reason);

  await page.goto(`/schedules/${name}`);
  await page.getByRole('button', { name: 'Resume the schedule…' }).click();
  const resume = page.getByRole('dialog', { name: `Resume the schedule ${name}?` });
  await resume.getByRole('button', { name: 'Resume the schedule', exact: true }).click();
  await expect(resume).toBeHidden();
  await expect(page.getByTestId('schedule-state')).toHaveText('active');
  await expect(page.getByTestId('schedule-next-tick')).toHaveText(/^\d{4}-\d\d-\d\d 0[45]:00:00 UTC$/);

  const audit = await run<{ action: string; actor: string; reason: string | null }>(
    db(),
    sql`SELECT action, actor, detail->>'reason' AS reason FROM leasehold.audit_log
        WHERE detail->>'schedule' = ${name} ORDER BY id`,
  );
  // The refused change wrote nothing.
  expect(audit).toEqual([
    { action: 'create_schedule', actor: 'seed@example.com', reason: null },
    { action: 'pause_schedule', actor: 'admin@example.com', reason },
    { action: 'change_schedule', actor: 'admin@example.com', reason: null },
    { action: 'resume_schedule', actor: 'admin@example.com', reason: null },
  ]);

  // Gone since the page was read: a sentence in the dialog, which stays open; nothing written.
  expect((await deleteSchedule(db(), name, { actor: 'seed@example.com' })).verdict).toBe('applied');
  await page.getByRole('button', { name: 'Pause the schedule…' }).click();
  const late = page.getByRole('dialog', { name: `Pause the schedule ${name}?` });
  await late.getByRole('button', { name: 'Pause the schedule', exact: true }).click();
  await expect(late.getByTestId('schedule-pause-error')).toHaveText(
    `Schedule ${name} was not changed: no schedule has that name any more (an admin may have deleted it since you looked).`,
  );
  const [after] = await run<{ n: number }>(
    db(),
    sql`SELECT count(*)::int AS n FROM leasehold.audit_log WHERE detail->>'schedule' = ${name}`,
  );
  expect(after?.n).toBe(audit.length + 1);
});
