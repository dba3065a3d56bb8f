/**
 * One way to show time (issue 43), end to end, in a browser whose zone (Pacific/Auckland) is not
 * the server's (the machine's, UTC). Every console page that shows times renders with no
 * hydration warning, and after hydration every <time> names the viewer's zone in its title, its
 * text no longer the server's UTC rendering. The "Times in UTC" setting turns every title to UTC
 * at once, and a reload keeps it (localStorage).
 */
import type { ConsoleMessage, Page } from '@playwright/test';
import { declareLimits, setLimit } from '../db/queue/index.ts';
import { absoluteTime } from '../lib/time-format.ts';
import { db, deadJob, expect, login, test, tickedSchedule, uniqueQueue } from './fixtures.ts';

const ZONE = 'Pacific/Auckland';
test.use({ timezoneId: ZONE });

/**
 * What React says of a hydration mismatch: the development wording, and the production build's
 * minified errors (#418 text, #419, #422, #423, #425: hydration failed or fell back to the client).
 */
const HYDRATION = /hydrat|did not match|server rendered|Minified React error #(418|419|422|423|425)\b/i;

interface TimeElement {
  dateTime: string;
  title: string;
  text: string;
}

const timesOf = (page: Page): Promise<TimeElement[]> =>
  page.locator('main time').evaluateAll((els) =>
    els.map((el) => ({
      dateTime: el.getAttribute('datetime') ?? '',
      title: el.getAttribute('title') ?? '',
      text: (el.textContent ?? '').trim(),
    })),
  );

/** Every <time> of the page once at least `min` show, and all name `zone` (hydration is over). */
async function hydratedTimes(page: Page, min: number, names: (title: string) => boolean): Promise<TimeElement[]> {
  await expect
    .poll(async () => {
      const times = await timesOf(page);
      return times.length >= min && times.every((t) => names(t.title));
    })
    .toBe(true);
  return timesOf(page);
}

/** Auckland's offset (+12, or +13 in its summer) and its name: `2026-12-07 14:03:27 UTC+13 (Pacific/Auckland)`. */
const VIEWER_ZONE = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\+1[23] \(Pacific\/Auckland\)/;
const inViewerZone = (title: string) => VIEWER_ZONE.test(title);
const inUtc = (title: string) => / UTC(, .*)?$/.test(title) && !title.includes(ZONE);

test('every console page shows times in the viewer’s zone without a hydration warning; UTC is a remembered setting', async ({
  page,
}) => {
  test.setTimeout(120_000);
  const queue = uniqueQueue('e2e-time');
  const jobId = await deadJob(queue);
  const schedule = await tickedSchedule('test.sleep', { ms: 0 });
  // A queue limit as the workers' queueLimits declare it, then an admin's run-time value (audited).
  await declareLimits(db(), [{ scope: 'queue', name: queue, max: 2 }]);
  await setLimit(db(), { scope: 'queue', name: queue, max: 3, actor: 'seed@example.com', reason: 'e2e time' });

  const problems: string[] = [];
  const onConsole = (m: ConsoleMessage) => {
    if (HYDRATION.test(m.text())) problems.push(`${page.url()}: console ${m.type()}: ${m.text()}`);
  };
  page.on('console', onConsole);
  page.on('pageerror', (e) => {
    if (HYDRATION.test(`${e.name}: ${e.message}`)) problems.push(`${page.url()}: page error: ${e.message}`);
  });
  await login(page, 'admin');

  // Each page with the fewest <time>s its seed guarantees (a queue's page shows none: checked
  // for warnings only).
  const pages: [string, number][] = [
    ['/', 2],
    [`/jobs?queue=${encodeURIComponent(queue)}`, 2],
    [`/jobs/${jobId}`, 6],
    ['/failures', 1],
    ['/kinds', 1],
    ['/workers', 3],
    ['/health', 1],
    ['/audit', 2],
    ['/limits', 1],
    ['/schedules', 2],
    [`/schedules/${encodeURIComponent(schedule.name)}`, 5],
    [`/queues/${encodeURIComponent(queue)}`, 0],
  ];
  const checked: Record<string, number> = {};
  for (const [path, min] of pages) {
    await page.goto(path);
    await expect(page.getByRole('heading', { level: 1 })).toBeVisible();
    const times = await hydratedTimes(page, min, inViewerZone);
    for (const t of times) {
      expect(t.title, `${path}: a title names the viewer's zone`).toMatch(VIEWER_ZONE);
      // The server's render (UTC, absolute) is gone: the text is the client's, in the viewer's zone.
      expect(t.text, `${path}: the text is not the server's UTC rendering`).not.toBe(absoluteTime(t.dateTime, 'UTC'));
      expect(t.text).not.toMatch(/ UTC$/);
    }
    checked[path] = times.length;
  }
  // Times the seed made: the dead job's relative times on its page, its schedule's ticks absolute.
  await page.goto(`/jobs/${jobId}`);
  await expect(page.getByTestId('job-fields').locator('time').first()).toHaveText(/^(just now|\d+ min ago)$/);
  await page.goto(`/schedules/${encodeURIComponent(schedule.name)}`);
  await expect(page.getByTestId('schedule-last-tick').locator('time')).toHaveText(
    /^\d{4}-\d\d-\d\d \d\d:\d\d:00 UTC\+1[23]$/,
  );

  // The UTC setting: every time on the page at once, then after a reload, then on another page.
  const toggle = page.getByRole('button', { name: 'Times in UTC' });
  await expect(toggle).toHaveAttribute('aria-pressed', 'false');
  await toggle.click();
  await expect(toggle).toHaveAttribute('aria-pressed', 'true');
  const utcTimes = await hydratedTimes(page, 5, inUtc);
  expect(utcTimes.every((t) => !t.text.includes('UTC+'))).toBe(true);
  await expect(page.getByTestId('schedule-last-tick').locator('time')).toHaveText(/^\d{4}-\d\d-\d\d \d\d:\d\d:00 UTC$/);
  await page.reload();
  await expect(page.getByRole('button', { name: 'Times in UTC' })).toHaveAttribute('aria-pressed', 'true');
  await hydratedTimes(page, 5, inUtc);
  await page.goto(`/jobs/${jobId}`);
  const jobTimes = await hydratedTimes(page, 6, inUtc);
  expect(jobTimes.length).toBeGreaterThanOrEqual(6);
  // And back to the viewer's zone.
  await page.getByRole('button', { name: 'Times in UTC' }).click();
  await hydratedTimes(page, 6, inViewerZone);

  page.off('console', onConsole);
  expect(problems, 'hydration warnings').toEqual([]);
  for (const [path, min] of pages) expect(checked[path], `${path}: <time>s checked`).toBeGreaterThanOrEqual(min);
  console.log(`time.spec: <time>s checked per page: ${JSON.stringify(checked)}`);
});
