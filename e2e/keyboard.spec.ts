/**
 * Every action of the dashboard by keyboard alone (issue 44): page.keyboard moves the focus and
 * presses the keys, never a click or a fill on the element under test. Each control is reached
 * by Tab and shows a focus ring; lists are walked through their links; each dialog traps the
 * focus, closes on Escape and gives the focus back to its opener. The navigation, the bulk
 * dialog of the jobs page, the theme toggle and the narrow window's Menu are in
 * e2e/accessibility.spec.ts ("keyboard", "dark theme", "a 390 px window"), with the Tab walk of
 * every page.
 */
import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import { enqueue } from '../db/queue/index.ts';
import { db, deadJob, expect, jobState, runningJob, test, uniqueQueue } from './fixtures.ts';
import { expectFocusTrapped, expectVisibleFocus, loginByKeyboard, tabTo } from './keyboard-kit.ts';

/** Letters only: failure groups fold digits, so a group of its own needs a name without them. */
const letters = (n = 10) =>
  Array.from({ length: n }, () => String.fromCharCode(97 + Math.floor(Math.random() * 26))).join('');

async function expectNoSeriousAxe(page: Page, what: string) {
  const results = await new AxeBuilder({ page }).analyze();
  const serious = results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
  expect(serious, `serious or critical axe violations on ${what}`).toEqual([]);
}

test.describe('keyboard actions', () => {
  test('cancel a job: a modal asks, traps the focus, Escape keeps the job, Enter cancels it', async ({ page }) => {
    const queue = uniqueQueue('kbdcancel');
    const job = await runningJob(queue);
    await loginByKeyboard(page, 'operator');
    await page.goto(`/jobs/${job.id}`);
    const cancel = page.getByRole('button', { name: 'Cancel', exact: true });
    await tabTo(page, cancel);
    await expectVisibleFocus(cancel);
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Cancel this running job?' });
    await expect(dialog).toBeVisible();
    const keep = dialog.getByRole('button', { name: 'Keep the job' });
    await expect(keep).toBeFocused();
    await expectFocusTrapped(page, dialog);
    await expectNoSeriousAxe(page, 'the cancel dialog');

    await page.keyboard.press('Escape');
    await expect(dialog).toBeHidden();
    await expect(cancel).toBeFocused();
    expect(await jobState(job.id)).toBe('running');

    // Keep the job by its button: nothing happens, the focus comes back too.
    await page.keyboard.press('Enter');
    await expect(keep).toBeFocused();
    await page.keyboard.press('Enter');
    await expect(dialog).toBeHidden();
    await expect(cancel).toBeFocused();
    expect(await jobState(job.id)).toBe('running');

    await page.keyboard.press('Enter');
    const confirm = dialog.getByRole('button', { name: 'Cancel the job' });
    await tabTo(page, confirm, { max: 3, back: true });
    await expectVisibleFocus(confirm);
    await page.keyboard.press('Enter');
    const result = page.getByTestId('action-result');
    await expect(result).toContainText('Cancelled');
    expect(await jobState(job.id)).toBe('cancelled');
    // The Cancel button went with the refresh: the focus is on the result, not lost.
    await expect(cancel).toHaveCount(0);
    await expect(result).toBeFocused();
  });

  test('reveal a redacted payload by keyboard; the focus moves onto what was revealed', async ({ page }) => {
    const { id } = await enqueue(db(), {
      queue: uniqueQueue('kbdreveal'),
      kind: 'receipt.send',
      payload: { orderId: crypto.randomUUID(), email: 'kbd-secret@example.com', totalCents: 100 },
    });
    await loginByKeyboard(page, 'admin');
    await page.goto(`/jobs/${id}`);
    await expect(page.getByTestId('payload')).not.toContainText('kbd-secret@example.com');
    const reveal = page.getByRole('button', { name: /Reveal/ });
    await tabTo(page, reveal);
    await expectVisibleFocus(reveal);
    await page.keyboard.press('Enter');
    const shown = page.getByTestId('revealed-payload');
    await expect(shown).toContainText('kbd-secret@example.com');
    await expectVisibleFocus(shown);
  });

  test('add and remove a redacted path of a kind by keyboard', async ({ page }) => {
    const path = `kbd${letters(6)}.secret`;
    await loginByKeyboard(page, 'admin');
    await expect(async () => {
      await page.goto('/kinds');
      await expect(page.getByTestId('kinds-table')).toContainText('receipt.send', { timeout: 1_000 });
    }).toPass({ timeout: 20_000 });
    const field = page.getByLabel(/^Add a redacted path to receipt\.send v/).first();
    await tabTo(page, field, { max: 300 });
    await expectVisibleFocus(field);
    await page.keyboard.type(path);
    await page.keyboard.press('Enter');
    await expect(page.getByTestId('redaction-result').first()).toBeVisible();
    const remove = page.getByRole('button', { name: `Unmask ${path} in receipt.send` }).first();
    await expect(remove).toBeVisible();
    const listed = page.getByTestId('added-paths').locator('code', { hasText: path });
    await expect(listed.first()).toBeVisible();

    await page.goto('/kinds');
    await tabTo(page, remove, { max: 300 });
    await expectVisibleFocus(remove);
    await page.keyboard.press('Enter');
    await expect(page.getByRole('button', { name: `Unmask ${path} in receipt.send` })).toHaveCount(0);
    await expect(listed).toHaveCount(0);
    // The button went with the path: the focus is on the kind's field, not at the page's start.
    await expect(page.locator('input:focus')).toHaveAttribute('aria-label', /^Add a redacted path to receipt\.send v/);
  });

  test('filter the jobs list by keyboard: a select, a field, Enter', async ({ page }) => {
    const queue = uniqueQueue('kbdfilter');
    const dead = await deadJob(queue);
    await enqueue(db(), { queue, kind: 'test.sleep', payload: { ms: 0 } });
    const other = await deadJob(uniqueQueue('kbdother'));
    await loginByKeyboard(page, 'viewer');
    await page.goto('/jobs');
    const state = page.getByLabel('State');
    await tabTo(page, state);
    await expectVisibleFocus(state);
    await page.keyboard.type('dead');
    await expect(state).toHaveValue('dead');
    const queueField = page.getByLabel('Queue');
    await tabTo(page, queueField, { max: 3 });
    await expectVisibleFocus(queueField);
    await page.keyboard.type(queue);
    await page.keyboard.press('Enter');
    await expect(page).toHaveURL(new RegExp(`[?&]queue=${queue}(&|$)`));
    await expect(page).toHaveURL(/[?&]state=dead(&|$)/);
    const rows = page.getByTestId('jobs-table').locator('tbody tr');
    await expect(rows).toHaveCount(1);
    await expect(rows).toContainText(dead);
    await expect(page.getByTestId('jobs-table')).not.toContainText(other);

    // The clear link, by keyboard too.
    const clear = page.getByRole('link', { name: 'clear' });
    await tabTo(page, clear);
    await expectVisibleFocus(clear);
    await page.keyboard.press('Enter');
    await expect(page).toHaveURL(/\/jobs$/);
  });

  test("page through the jobs by keyboard; Tab goes through the rows' links in order", async ({ page }) => {
    const queue = uniqueQueue('kbdpage');
    const ids = [await deadJob(queue), await deadJob(queue), await deadJob(queue)];
    await loginByKeyboard(page, 'viewer');
    await page.goto(`/jobs?queue=${queue}&limit=2&sort=oldest`);
    const links = page.getByTestId('jobs-table').locator('tbody a');
    await expect(links).toHaveCount(2);
    const first = links.nth(0);
    await tabTo(page, first);
    await expectVisibleFocus(first);
    // The next Tab is the next row's link: the rows hold no other stops.
    await page.keyboard.press('Tab');
    await expectVisibleFocus(links.nth(1));
    const pageOne = await links.allTextContents();

    const next = page.getByRole('link', { name: 'Next page →' });
    await tabTo(page, next, { max: 5 });
    await expectVisibleFocus(next);
    await page.keyboard.press('Enter');
    await expect(page).toHaveURL(/[?&]after=/);
    await expect(links).toHaveCount(1);
    const pageTwo = await links.allTextContents();
    expect([...pageOne, ...pageTwo].sort()).toEqual([...ids].sort());
    await expect(page.getByRole('link', { name: 'Next page →' })).toHaveCount(0);
  });

  test('retry a failure group by keyboard: the dialog traps the focus, Escape gives it back', async ({ page }) => {
    const error = `keyboard group ${letters()} refused`;
    const queue = uniqueQueue('kbdgroup');
    const ids = [await deadJob(queue, { ms: 0 }, error), await deadJob(queue, { ms: 0 }, error)];
    await loginByKeyboard(page, 'admin');
    await page.goto('/failures');
    const row = page.getByRole('row', { name: new RegExp(error) });
    const opener = row.getByRole('button', { name: 'Bulk retry…' });
    await tabTo(page, opener, { max: 400 });
    await expectVisibleFocus(opener);
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Bulk retry' });
    await expect(dialog.getByTestId('bulk-count')).toHaveText('2');
    await expect(dialog.getByRole('button', { name: 'Close' })).toBeFocused();
    await expectFocusTrapped(page, dialog);
    await page.keyboard.press('Escape');
    await expect(dialog).toBeHidden();
    await expect(opener).toBeFocused();
    expect(await jobState(ids[0]!)).toBe('dead');

    await page.keyboard.press('Enter');
    const confirm = dialog.getByRole('button', { name: 'Confirm retry of 2' });
    await tabTo(page, confirm, { max: 3 });
    await expectVisibleFocus(confirm);
    await page.keyboard.press('Enter');
    await expect.poll(() => Promise.all(ids.map(jobState))).not.toContain('dead');
    // The group's row went with the refresh; its result is said above the table, and has the focus.
    const result = page.getByTestId('bulk-result');
    await expect(result).toContainText('Retried 2 of 2');
    await expect(row).toHaveCount(0);
    await expect(result).toBeFocused();
  });

  test('sign out by keyboard', async ({ page }) => {
    await loginByKeyboard(page, 'viewer');
    const signOut = page.getByRole('button', { name: 'Sign out' });
    await tabTo(page, signOut);
    await expectVisibleFocus(signOut);
    await page.keyboard.press('Enter');
    await expect(page).toHaveURL(/\/login/);
    await page.goto('/jobs');
    await expect(page).toHaveURL(/\/login/);
  });
});
