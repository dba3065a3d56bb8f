/**
 * Accessibility of the dashboard (issue 44): an axe scan of every page in light and dark (with
 * the dialogs open), the keyboard alone (no clicks) through navigation, tables, actions and the
 * bulk dialog, the theme (the system's, the reader's choice before paint, the charts' colours)
 * and a 390 px window (no page scrolls sideways; tables scroll in their own box; the navigation
 * collapses). Screenshots go to test-results/screenshots/a11y/ (gitignored).
 */
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import AxeBuilder from '@axe-core/playwright';
import type { Locator, Page } from '@playwright/test';
import {
  claim,
  declareLimits,
  enqueue,
  enqueueMany,
  pauseGroup,
  pauseSchedule,
  registerKinds,
  setGroupLimit,
} from '../db/queue/index.ts';
import { setQueueAlert } from '../db/queue/alerts.ts';
import { db, deadJob, expect, FROM_DASHBOARD, login, test, tickedSchedule, uniqueQueue } from './fixtures.ts';
import { expectVisibleFocus, loginByKeyboard, tabTo } from './keyboard-kit.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SHOTS = 'test-results/screenshots/a11y';

/**
 * Rules switched off for every scan, each with its reason. Empty: a rule goes here only with a
 * reason a reviewer can check, never to make a scan pass.
 */
const DISABLED_RULES: { id: string; reason: string }[] = [];

/** The routes of app/(console)/**\/page.tsx: `(group)` folders are not in the URL. */
function consoleRoutes(): string[] {
  const dir = path.join(ROOT, 'app', '(console)');
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => path.basename(file) === 'page.tsx')
    .map((file) => {
      const segments = path
        .dirname(file)
        .split(path.sep)
        .filter((s) => s !== '.' && !/^\(.*\)$/.test(s));
      return `/${segments.join('/')}`;
    })
    .sort();
}

interface Seed {
  queue: string;
  jobId: string;
  error: string;
  /** A ready job in a queue no worker serves, so that it stays cancellable: the cancel dialog's. */
  ready: { queue: string; jobId: string };
  /** A queue with a fair group at its maximum and a paused one: its queue page. */
  grouped: string;
  /** A declared limit's key (`kind:…`): the Limits page's row and its change dialog. */
  limit: string;
  /** A paused schedule with ticks and their jobs, and a masked payload: the schedule pages. */
  schedule: string;
}

interface PageCase {
  /** The URL with seeded data (a dynamic segment gets a seeded id). */
  url: (seed: Seed) => string;
  /** Waits until the page shows the seeded data. */
  ready: (page: Page, seed: Seed) => Promise<void>;
  /** Opens each dialog the page has, in turn: scanned open, then closed with Escape. */
  dialogs?: { name: string; open: (page: Page, seed: Seed) => Promise<Locator> }[];
}

const bulkDialog = (page: Page) => page.getByRole('dialog');

/** Every console route, keyed as consoleRoutes() names it. A new page file fails the test below until it is here. */
const PAGES: Record<string, PageCase> = {
  '/': {
    url: () => '/',
    ready: async (page, seed) => {
      await expect(page.getByTestId('backlog-table')).toContainText(seed.queue);
      await expect(page.getByTestId('chart-backlog').locator('.recharts-bar-rectangle').first()).toBeVisible();
    },
    dialogs: [
      {
        name: 'pause',
        open: async (page, seed) => {
          await page.getByRole('button', { name: `Pause queue ${seed.queue}`, exact: true }).click();
          const dialog = page.getByRole('dialog', { name: `Pause queue ${seed.queue}?` });
          await expect(dialog.getByLabel(/^Reason/)).toBeFocused();
          return dialog;
        },
      },
    ],
  },
  '/jobs': {
    url: (seed) => `/jobs?queue=${seed.queue}`,
    ready: async (page, seed) => {
      await expect(page.getByTestId('jobs-table')).toContainText(seed.jobId);
    },
    dialogs: [
      {
        name: 'bulk-retry',
        open: async (page) => {
          await page.getByRole('button', { name: 'Bulk retry…' }).click();
          await expect(page.getByTestId('bulk-count')).toBeVisible();
          return bulkDialog(page);
        },
      },
      {
        name: 'bulk-cancel',
        open: async (page) => {
          await page.getByRole('button', { name: 'Bulk cancel…' }).click();
          await expect(page.getByTestId('bulk-preview')).toContainText('No ready or running jobs match');
          return bulkDialog(page);
        },
      },
    ],
  },
  '/jobs/[id]': {
    url: (seed) => `/jobs/${seed.jobId}`,
    ready: async (page, seed) => {
      await expect(page.getByTestId('job-fields')).toContainText(seed.queue);
      await expect(page.getByTestId('attempts-table')).toContainText('failed');
    },
    dialogs: [
      {
        // The dead job above has no Cancel (nothing to cancel): the dialog is a ready job's.
        name: 'cancel',
        open: async (page, seed) => {
          await page.goto(`/jobs/${seed.ready.jobId}`);
          await expect(page.getByTestId('job-fields')).toContainText(seed.ready.queue);
          await page.getByRole('button', { name: 'Cancel', exact: true }).click();
          const dialog = page.getByRole('dialog', { name: 'Cancel this job?' });
          await expect(dialog.getByRole('button', { name: 'Keep the job' })).toBeFocused();
          return dialog;
        },
      },
      {
        // A support action's dialog (its own field and the reason): the same ready job's.
        name: 'priority',
        open: async (page, seed) => {
          await page.goto(`/jobs/${seed.ready.jobId}`);
          await expect(page.getByTestId('job-fields')).toContainText(seed.ready.queue);
          await page.getByRole('button', { name: 'Change priority…' }).click();
          const dialog = page.getByRole('dialog', { name: "Change this job's priority" });
          await expect(dialog.getByLabel(/^Priority/)).toBeFocused();
          return dialog;
        },
      },
    ],
  },
  '/failures': {
    url: () => '/failures',
    ready: async (page, seed) => {
      await expect(page.getByTestId('failure-groups')).toContainText(seed.error);
    },
    dialogs: [
      {
        name: 'group-retry',
        open: async (page, seed) => {
          await page
            .getByRole('row', { name: new RegExp(seed.error) })
            .getByRole('button', { name: 'Bulk retry…' })
            .click();
          await expect(page.getByTestId('bulk-count')).toBeVisible();
          return bulkDialog(page);
        },
      },
    ],
  },
  '/kinds': {
    url: () => '/kinds',
    ready: async (page) => {
      // The e2e worker records its kinds when it starts, which may be after the dashboard is up.
      await expect(async () => {
        await page.goto('/kinds');
        await expect(page.getByTestId('kinds-table')).toContainText('receipt.send', { timeout: 1_000 });
      }).toPass({ timeout: 20_000 });
    },
  },
  '/limits': {
    url: () => '/limits',
    ready: async (page, seed) => {
      await expect(page.getByTestId('limits-table')).toContainText(seed.limit);
    },
    dialogs: [
      {
        name: 'change-limit',
        open: async (page, seed) => {
          await page.getByRole('button', { name: `Change the limit ${seed.limit}` }).click();
          const dialog = page.getByRole('dialog', { name: `Change the limit ${seed.limit}` });
          await expect(dialog.getByLabel(/Run-time maximum/)).toBeFocused();
          return dialog;
        },
      },
    ],
  },
  '/queues/[queue]': {
    url: (seed) => `/queues/${seed.grouped}`,
    ready: async (page) => {
      await expect(page.getByTestId('group-acme').getByTestId('state')).toHaveText('at its limit of 1');
      await expect(page.getByTestId('group-globex').getByTestId('state')).toHaveText('paused');
    },
  },
  '/schedules': {
    url: () => '/schedules',
    ready: async (page, seed) => {
      const row = page.getByTestId(`schedule-${seed.schedule}`);
      await expect(row.getByTestId('state')).toHaveText('paused (a11y seed), changed at run time');
      await expect(row.getByTestId('last-job')).toContainText('ready');
    },
  },
  '/schedules/[name]': {
    url: (seed) => `/schedules/${seed.schedule}`,
    ready: async (page) => {
      await expect(page.getByTestId('schedule-state')).toHaveText('paused (a11y seed)');
      await expect(page.getByTestId('ticks-table').getByTestId('outcome').first()).toHaveText('enqueued');
      await expect(page.getByTestId('schedule-payload')).toContainText('"apiKey": "••••••"');
    },
    dialogs: [
      {
        name: 'resume-schedule',
        open: async (page, seed) => {
          await page.getByRole('button', { name: 'Resume the schedule…' }).click();
          const dialog = page.getByRole('dialog', { name: `Resume the schedule ${seed.schedule}?` });
          await expect(dialog.getByLabel(/^Reason/)).toBeFocused();
          return dialog;
        },
      },
      {
        name: 'change-schedule',
        open: async (page, seed) => {
          await page.getByRole('button', { name: 'Change the cron expression…' }).click();
          const dialog = page.getByRole('dialog', { name: `Change the schedule ${seed.schedule}` });
          await expect(dialog.getByLabel(/^Cron expression/)).toBeFocused();
          return dialog;
        },
      },
    ],
  },
  '/health': {
    url: () => '/health',
    ready: async (page, seed) => {
      await expect(page.getByTestId('check-horizon').getByTestId('check-state')).toBeVisible();
      await expect(page.getByTestId(`alert-${seed.queue}-dead`).getByTestId('alert-firing')).toHaveText('firing');
    },
    dialogs: [
      {
        name: 'set-alert',
        open: async (page) => {
          await page.getByRole('button', { name: 'Set a backlog alert' }).click();
          const dialog = page.getByRole('dialog', { name: 'Set a backlog alert' });
          await expect(dialog.getByLabel('Queue')).toBeFocused();
          return dialog;
        },
      },
    ],
  },
  '/workers': {
    url: () => '/workers',
    ready: async (page) => {
      await expect(page.getByTestId('live-workers-table')).toContainText('e2e-work');
    },
  },
  '/audit': {
    url: () => '/audit',
    ready: async (page, seed) => {
      await expect(page.getByTestId('audit-table')).toContainText(seed.queue);
    },
  },
};

/**
 * A dead job (with a failed attempt) in a queue of its own (a backlog alert on its dead jobs
 * firing), audit rows on that queue, a ready
 * job in another queue (the jobs page's bulk cancel finds none in the first), a limit, and a
 * paused schedule that has ticked.
 */
async function seed(page: Page): Promise<Seed> {
  const queue = uniqueQueue('a11y');
  // One failure group for every seed (the groups fold numbers and ids): the example shown may be any run's.
  const error = 'a11y seed: the provider refused the request';
  const jobId = await deadJob(queue, { ms: 0 }, error);
  const readyQueue = uniqueQueue('a11y-ready');
  const ready = await enqueue(db(), { queue: readyQueue, kind: 'test.sleep', payload: { ms: 0 } });
  const limited = uniqueQueue('a11y.limited');
  await declareLimits(db(), [
    { scope: 'kind', name: limited, max: 2, rate: { max: 10, perMs: 1000 }, kinds: [limited] },
  ]);
  // A queue page with both group states: acme at its maximum of 1 (its first job running), globex paused.
  const grouped = uniqueQueue('a11y-groups');
  await enqueueMany(db(), [
    { queue: grouped, kind: 'a11y.tenant', group: 'acme' },
    { queue: grouped, kind: 'a11y.tenant', group: 'acme' },
    { queue: grouped, kind: 'a11y.tenant', group: 'globex' },
  ]);
  await setGroupLimit(db(), { queue: grouped, max: 1, actor: 'admin@example.com' });
  await pauseGroup(db(), { queue: grouped, group: 'globex', actor: 'admin@example.com' });
  await claim(db(), { queues: [grouped], workerId: 'a11y', limit: 5, grouped: true });
  // A schedule that has ticked (its jobs ready: no worker serves its queue), then paused.
  const scheduled = uniqueQueue('a11y.report');
  await registerKinds(db(), [
    {
      kind: scheduled,
      version: 1,
      defaultQueue: 'default',
      displayName: scheduled,
      redactedPaths: [],
      rerunSafe: false,
    },
  ]);
  const { name: schedule } = await tickedSchedule(scheduled, { scope: 'all', apiKey: 'a11y-seed-key' });
  await pauseSchedule(db(), schedule, { actor: 'admin@example.com', reason: 'a11y seed' });
  // A backlog alert firing on the dead job's queue: the Health page's alerts and the overview's mark.
  await setQueueAlert(db(), { queue, alert: 'dead', threshold: 1, actor: 'admin@example.com' });
  // Audit rows: the admin pauses and resumes the queue (the page's session is the admin's).
  for (const action of ['pause', 'resume']) {
    const answer = await page.request.post(`/api/queues/${queue}/${action}`, { headers: FROM_DASHBOARD, data: {} });
    expect(answer.status(), `${action} ${queue}`).toBe(200);
  }
  return {
    queue,
    jobId,
    error,
    ready: { queue: readyQueue, jobId: ready.id },
    grouped,
    limit: `kind:${limited}`,
    schedule,
  };
}

/** The moderate and minor findings of the scans, by rule: kept beside the screenshots for docs/dashboard.md. */
const lesser = new Map<string, Set<string>>();

async function scan(page: Page, what: string) {
  const results = await new AxeBuilder({ page }).disableRules(DISABLED_RULES.map((r) => r.id)).analyze();
  for (const v of results.violations.filter((v) => v.impact !== 'serious' && v.impact !== 'critical')) {
    const pages = lesser.get(`${v.id} (${v.impact}): ${v.help}`) ?? new Set();
    pages.add(what);
    lesser.set(`${v.id} (${v.impact}): ${v.help}`, pages);
  }
  const serious = results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help}\n    ${v.nodes.map((n) => n.target.join(' ')).join('\n    ')}`);
  expect(serious, `serious or critical axe violations on ${what}`).toEqual([]);
}

const slug = (route: string) =>
  route === '/' ? 'overview' : route.slice(1).replaceAll('/', '-').replace(/[[\]]/g, '');

/**
 * Marks every element of the page a Tab should reach (focusable, tabindex ≥ 0, enabled, shown,
 * not inert), then presses Tab from the top of the page until the focus leaves the page or
 * comes round again: each marked element must get the focus once, in document order, each
 * showing a focus ring, and the walk must come out at the end (no trap outside a dialog).
 */
async function tabWalk(page: Page, what: string): Promise<number> {
  const expected = await page.evaluate(() => {
    const all = [
      ...document.querySelectorAll<HTMLElement | SVGElement>(
        'a[href], button, input, select, textarea, summary, [tabindex], [contenteditable="true"]',
      ),
    ].filter(
      (el) =>
        el.tabIndex >= 0 &&
        !(el as HTMLButtonElement).disabled &&
        el.checkVisibility({ visibilityProperty: true }) &&
        !el.closest('[inert]'),
    );
    all.forEach((el, i) => el.setAttribute('data-tab-walk', String(i)));
    (document.activeElement as HTMLElement | null)?.blur();
    return all.length;
  });
  expect(expected, `focusable elements on ${what}`).toBeGreaterThan(0);
  const seen: string[] = [];
  const bad: string[] = [];
  for (let i = 0; i < expected + 3; i++) {
    await page.keyboard.press('Tab');
    const step = await page.evaluate(() => {
      const el = document.activeElement;
      if (!el || el === document.body || el === document.documentElement) return null;
      const style = getComputedStyle(el);
      const outline = style.outlineStyle !== 'none' && Number.parseFloat(style.outlineWidth) >= 2;
      const shadow = style.boxShadow !== 'none' && style.boxShadow !== '';
      return {
        index: el.getAttribute('data-tab-walk') ?? `unmarked <${el.tagName.toLowerCase()}>`,
        name: `<${el.tagName.toLowerCase()}> ${(el.getAttribute('aria-label') ?? el.textContent ?? '').trim().slice(0, 40)}`,
        ring: el.matches(':focus-visible') && (outline || shadow),
      };
    });
    if (step === null || step.index === seen[0]) break;
    seen.push(step.index);
    if (!step.ring) bad.push(step.name);
  }
  expect(bad, `focused without a visible focus ring on ${what}`).toEqual([]);
  expect(seen, `the Tab order of ${what}`).toEqual(Array.from({ length: expected }, (_, i) => String(i)));
  return expected;
}

test.describe('accessibility', () => {
  test('every page file under app/(console) has a seeded case in the scan', () => {
    expect(Object.keys(PAGES).sort()).toEqual(consoleRoutes());
  });

  test('the scan finds a violation when there is one (it is not vacuous)', async ({ page }) => {
    await page.goto('/login');
    await expect(page.getByLabel('Email')).toBeVisible();
    // An unnamed button and a low-contrast line, added to the page: axe must report both.
    await page.evaluate(() => {
      const button = document.createElement('button');
      const faint = document.createElement('p');
      faint.textContent = 'barely there';
      faint.style.color = '#f0f0f0';
      document.querySelector('main')!.append(button, faint);
    });
    const results = await new AxeBuilder({ page }).analyze();
    expect(results.violations.map((v) => v.id)).toEqual(expect.arrayContaining(['button-name', 'color-contrast']));
  });

  for (const scheme of ['light', 'dark'] as const) {
    test(`no serious or critical axe violation on any page, dialogs open, in ${scheme}`, async ({ page }) => {
      test.setTimeout(120_000);
      lesser.clear();
      await page.emulateMedia({ colorScheme: scheme });
      await page.goto('/login');
      await expect(page.getByLabel('Email')).toBeVisible();
      await scan(page, `/login (${scheme})`);
      if (scheme === 'light') await page.screenshot({ path: `${SHOTS}/login-light.png`, fullPage: true });

      await login(page, 'admin');
      const data = await seed(page);
      for (const route of consoleRoutes()) {
        const look = PAGES[route];
        expect(look, `a scan case for ${route}`).toBeDefined();
        await page.goto(look!.url(data));
        await look!.ready(page, data);
        await scan(page, `${route} (${scheme})`);
        const name = slug(route);
        if (scheme === 'light' || name === 'overview' || name === 'jobs-id')
          await page.screenshot({ path: `${SHOTS}/${name}-${scheme}.png`, fullPage: true });
        for (const dialog of look!.dialogs ?? []) {
          const open = await dialog.open(page, data);
          await expect(open).toBeVisible();
          await scan(page, `${route}, ${dialog.name} dialog open (${scheme})`);
          await page.keyboard.press('Escape');
          await expect(open).toBeHidden();
        }
      }
      mkdirSync(SHOTS, { recursive: true });
      writeFileSync(
        `${SHOTS}/axe-lesser-${scheme}.json`,
        JSON.stringify(Object.fromEntries([...lesser].map(([rule, pages]) => [rule, [...pages]])), null, 2),
      );
    });
  }
});

test.describe('keyboard', () => {
  test('the Tab walk fails on a control without a focus ring and on a trap (it is not vacuous)', async ({ page }) => {
    await page.goto('/login');
    await expect(page.getByLabel('Email')).toBeVisible();
    const walked = await tabWalk(page, '/login');
    expect(walked).toBeGreaterThanOrEqual(3);
    await page.evaluate(() => {
      const bare = document.createElement('button');
      bare.textContent = 'no ring';
      bare.style.outline = 'none';
      document.querySelector('main')!.append(bare);
    });
    await expect(tabWalk(page, '/login with a ringless button')).rejects.toThrow(/without a visible focus ring/);
    await page.reload();
    await expect(page.getByLabel('Email')).toBeVisible();
    await page.evaluate(() => {
      // Tab never leaves the email field: a keyboard user is stuck there.
      document.querySelector('input')!.addEventListener('keydown', (event) => {
        if (event.key === 'Tab') event.preventDefault();
      });
    });
    await expect(tabWalk(page, '/login with a trap')).rejects.toThrow(/Tab order/);
  });

  test('Tab walks every page: each focusable element once, in order, each with a focus ring, no trap', async ({
    page,
  }) => {
    test.setTimeout(180_000);
    await page.goto('/login');
    await expect(page.getByLabel('Email')).toBeVisible();
    await tabWalk(page, '/login');
    await loginByKeyboard(page, 'admin');
    const data = await seed(page);
    for (const route of consoleRoutes()) {
      const look = PAGES[route]!;
      await page.goto(look.url(data));
      await look.ready(page, data);
      await tabWalk(page, route);
    }
  });

  test('a skip link and the navigation reach every page, each with a visible focus', async ({ page }) => {
    await loginByKeyboard(page, 'viewer');
    await page.goto('/');
    await page.keyboard.press('Tab');
    const skip = page.getByRole('link', { name: 'Skip to content' });
    await expect(skip).toBeFocused();
    await expect(skip).toBeInViewport();
    await expectVisibleFocus(skip);
    await page.keyboard.press('Enter');
    await expect(page.locator('main#main')).toBeFocused();

    const nav = page.getByRole('navigation', { name: 'Dashboard' });
    for (const [name, url] of [
      ['Jobs', /\/jobs$/],
      ['Failures', /\/failures$/],
      ['Kinds', /\/kinds$/],
      ['Limits', /\/limits$/],
      ['Schedules', /\/schedules$/],
      ['Workers', /\/workers$/],
      ['Health', /\/health$/],
      ['Audit log', /\/audit$/],
      ['Overview', /\/$/],
    ] as const) {
      const link = nav.getByRole('link', { name, exact: true });
      await tabTo(page, link);
      await expectVisibleFocus(link);
      await page.keyboard.press('Enter');
      await expect(page).toHaveURL(url);
      await expect(nav.getByRole('link', { name, exact: true })).toHaveAttribute('aria-current', 'page');
    }
  });

  test('a keyboard user opens a job from the list and retries it', async ({ page }) => {
    const queue = uniqueQueue('kbd');
    const id = await deadJob(queue);
    await loginByKeyboard(page, 'operator');
    await page.goto(`/jobs?queue=${queue}`);
    const link = page.getByTestId('jobs-table').getByRole('link', { name: id });
    await tabTo(page, link);
    await expectVisibleFocus(link);
    await page.keyboard.press('Enter');
    await expect(page).toHaveURL(new RegExp(`/jobs/${id}$`));
    const retry = page.getByRole('button', { name: 'Retry' });
    await tabTo(page, retry);
    await expectVisibleFocus(retry);
    await page.keyboard.press('Enter');
    await expect(page.getByTestId('action-result')).toContainText('Retried');
  });

  test('an admin pauses and resumes a queue from the overview by keyboard', async ({ page }) => {
    const queue = uniqueQueue('kbdpause');
    await deadJob(queue);
    await loginByKeyboard(page, 'admin');
    await expect(page.getByTestId('backlog-table')).toContainText(queue);
    const pause = page.getByRole('button', { name: `Pause queue ${queue}`, exact: true });
    await tabTo(page, pause, { max: 400 });
    await page.keyboard.press('Enter');
    // The confirm dialog: the focus on the reason; Enter in it confirms.
    const pauseDialog = page.getByRole('dialog', { name: `Pause queue ${queue}?` });
    await expect(pauseDialog.getByLabel(/Reason/)).toBeFocused();
    await page.keyboard.type('keyboard check');
    await page.keyboard.press('Enter');
    await expect(pauseDialog).toHaveCount(0);
    const resume = page.getByRole('button', { name: `Resume queue ${queue}`, exact: true });
    await expect(resume).toBeVisible();
    await expect(page.getByRole('status')).toBeVisible();
    // The same button, relabelled: the focus goes back to it, and Enter (twice: open, confirm) undoes the pause.
    await expect(resume).toBeFocused();
    await page.keyboard.press('Enter');
    await expect(page.getByRole('dialog', { name: `Resume queue ${queue}?` }).getByLabel(/Reason/)).toBeFocused();
    await page.keyboard.press('Enter');
    await expect(pause).toBeVisible();
  });

  test('the bulk dialog traps the focus, closes on Escape, gives the focus back, and confirms by keyboard', async ({
    page,
  }) => {
    const queue = uniqueQueue('kbdbulk');
    for (let i = 0; i < 3; i++) await deadJob(queue);
    await loginByKeyboard(page, 'admin');
    await page.goto(`/jobs?queue=${queue}&state=dead`);
    await expect(page.getByTestId('jobs-table').locator('tbody tr')).toHaveCount(3);
    const opener = page.getByRole('button', { name: 'Bulk retry…' });
    await tabTo(page, opener);
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Bulk retry' });
    await expect(dialog).toBeVisible();
    await expect(dialog.getByRole('button', { name: 'Close' })).toBeFocused();
    const focusInDialog = () => dialog.evaluate((d) => d.contains(document.activeElement));
    for (const key of ['Tab', 'Tab', 'Tab', 'Tab', 'Tab', 'Shift+Tab', 'Shift+Tab', 'Shift+Tab', 'Shift+Tab']) {
      await page.keyboard.press(key);
      expect(await focusInDialog(), `focus inside the dialog after ${key}`).toBe(true);
    }
    await page.keyboard.press('Escape');
    await expect(dialog).toBeHidden();
    await expect(opener).toBeFocused();

    await page.keyboard.press('Enter');
    await expect(dialog).toBeVisible();
    const confirm = dialog.getByRole('button', { name: 'Confirm retry of 3' });
    await tabTo(page, confirm, { max: 5 });
    await expectVisibleFocus(confirm);
    await page.keyboard.press('Enter');
    await expect(page.getByTestId('bulk-result')).toContainText('Retried 3 of 3');
    await expect(dialog).toBeHidden();
    await expect(opener).toBeFocused();
  });
});

test.describe('dark theme', () => {
  const DARK_BG = 'rgb(11, 17, 32)';
  const LIGHT_BG = 'rgb(249, 250, 251)';
  const background = (page: Page) => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  const barFill = (page: Page) =>
    page
      .getByTestId('chart-outcomes')
      .locator('.recharts-bar-rectangle path')
      .first()
      .evaluate((el) => getComputedStyle(el).fill);
  const tickFill = (page: Page) =>
    page
      .getByTestId('chart-outcomes')
      .locator('.recharts-cartesian-axis-tick-value')
      .first()
      .evaluate((el) => getComputedStyle(el).fill);

  test('follows the system setting, charts included', async ({ page }) => {
    await deadJob(uniqueQueue('theme'));
    await login(page, 'viewer');
    await expect(page.getByTestId('chart-outcomes').locator('.recharts-bar-rectangle').first()).toBeVisible();
    await page.emulateMedia({ colorScheme: 'light' });
    expect(await background(page)).toBe(LIGHT_BG);
    const light = { bar: await barFill(page), tick: await tickFill(page) };
    await page.emulateMedia({ colorScheme: 'dark' });
    expect(await background(page)).toBe(DARK_BG);
    const dark = { bar: await barFill(page), tick: await tickFill(page) };
    // The charts take the theme's colours: light text on dark, dark text on light.
    expect(light.tick).toBe('rgb(55, 65, 81)');
    expect(dark.tick).toBe('rgb(209, 213, 219)');
    expect(dark.bar).not.toBe(light.bar);
  });

  test('the toggle overrides the system, persists in this browser and applies before the first paint', async ({
    page,
  }) => {
    await page.emulateMedia({ colorScheme: 'light' });
    await loginByKeyboard(page, 'viewer');
    const toggle = page.getByTestId('theme-toggle');
    await expect(toggle).toHaveText('Theme: system');
    await tabTo(page, toggle);
    await expectVisibleFocus(toggle);
    await page.keyboard.press('Enter');
    await expect(toggle).toHaveText('Theme: dark');
    expect(await background(page)).toBe(DARK_BG);

    // What <html> said when <body> first appeared: the inline script ran before anything painted.
    await page.addInitScript(() => {
      new MutationObserver((_, observer) => {
        if (!document.body) return;
        (window as unknown as { themeAtBody: string | null }).themeAtBody =
          document.documentElement.getAttribute('data-theme');
        observer.disconnect();
      }).observe(document, { childList: true, subtree: true });
    });
    await page.reload();
    expect(await page.evaluate(() => (window as unknown as { themeAtBody: string | null }).themeAtBody)).toBe('dark');
    await expect(toggle).toHaveText('Theme: dark');
    expect(await background(page)).toBe(DARK_BG);

    await tabTo(page, toggle);
    await page.keyboard.press('Enter');
    await expect(toggle).toHaveText('Theme: light');
    await page.emulateMedia({ colorScheme: 'dark' });
    expect(await background(page)).toBe(LIGHT_BG);
    await page.keyboard.press('Enter');
    await expect(toggle).toHaveText('Theme: system');
    expect(await background(page)).toBe(DARK_BG);
    expect(await page.evaluate(() => localStorage.getItem('leasehold-theme'))).toBeNull();
  });

  test('another tab of the browser takes the choice on at once', async ({ page, context }) => {
    await page.emulateMedia({ colorScheme: 'light' });
    await login(page, 'viewer');
    const other = await context.newPage();
    await other.emulateMedia({ colorScheme: 'light' });
    await other.goto('/jobs');
    await expect(other.getByTestId('theme-toggle')).toHaveText('Theme: system');
    await tabTo(page, page.getByTestId('theme-toggle'));
    await page.keyboard.press('Enter');
    await expect(page.getByTestId('theme-toggle')).toHaveText('Theme: dark');
    await expect(other.getByTestId('theme-toggle')).toHaveText('Theme: dark');
    await expect.poll(() => background(other)).toBe(DARK_BG);
    await other.close();
  });
});

test.describe('a 390 px window', () => {
  test.use({ viewport: { width: 390, height: 844 } });

  const noSideScroll = (page: Page) =>
    page.evaluate(() => ({
      scrollWidth: document.documentElement.scrollWidth,
      clientWidth: document.documentElement.clientWidth,
    }));

  test('no page scrolls sideways; tables scroll in their own box', async ({ page }) => {
    test.setTimeout(90_000);
    await page.goto('/login');
    await expect(page.getByLabel('Email')).toBeVisible();
    let width = await noSideScroll(page);
    expect(width.scrollWidth, '/login').toBeLessThanOrEqual(width.clientWidth);
    await login(page, 'admin');
    const data = await seed(page);
    for (const route of consoleRoutes()) {
      const look = PAGES[route]!;
      await page.goto(look.url(data));
      await look.ready(page, data);
      width = await noSideScroll(page);
      expect(width.scrollWidth, `${route} at 390 px`).toBeLessThanOrEqual(width.clientWidth);
      const name = slug(route);
      if (name === 'overview' || name === 'jobs-id')
        await page.screenshot({ path: `${SHOTS}/${name}-390.png`, fullPage: true });
    }
    // The jobs table is wider than the window: it scrolls inside its box, by keyboard too.
    await page.goto(PAGES['/jobs']!.url(data));
    const box = page.getByRole('region', { name: 'Jobs' });
    const sizes = await box.evaluate((el) => ({ scroll: el.scrollWidth, client: el.clientWidth }));
    expect(sizes.scroll).toBeGreaterThan(sizes.client);
    await tabTo(page, box);
    await expectVisibleFocus(box);
    await page.keyboard.press('ArrowRight');
    await expect.poll(() => box.evaluate((el) => el.scrollLeft)).toBeGreaterThan(0);
  });

  test('the navigation collapses behind a menu button a keyboard opens', async ({ page }) => {
    await loginByKeyboard(page, 'viewer');
    const menu = page.getByRole('button', { name: 'Menu' });
    const jobs = page.getByRole('link', { name: 'Jobs', exact: true });
    await expect(menu).toHaveAttribute('aria-expanded', 'false');
    await expect(jobs).toBeHidden();
    await tabTo(page, menu);
    await expectVisibleFocus(menu);
    await page.keyboard.press('Enter');
    await expect(menu).toHaveAttribute('aria-expanded', 'true');
    await expect(jobs).toBeVisible();
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    await expect(jobs).toBeFocused();
    await page.keyboard.press('Enter');
    await expect(page).toHaveURL(/\/jobs$/);
    // A new page closes the menu again.
    await expect(menu).toHaveAttribute('aria-expanded', 'false');
    await expect(jobs).toBeHidden();
  });
});
