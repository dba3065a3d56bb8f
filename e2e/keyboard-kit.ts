/**
 * Keyboard helpers of the accessibility specs: Tab to an element, check that the focused
 * element shows a focus ring, sign in with keys alone. Only page.keyboard moves the focus.
 */
import type { Locator, Page } from '@playwright/test';
import { DEMO_PASSWORD } from '../db/users.ts';
import { expect, type Role } from './fixtures.ts';

/** Presses Tab (or Shift+Tab) until `target` has the focus; fails after `max` presses. */
export async function tabTo(page: Page, target: Locator, { max = 150, back = false } = {}) {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press(back ? 'Shift+Tab' : 'Tab');
    if (await target.evaluate((el) => el === document.activeElement).catch(() => false)) return;
  }
  throw new Error(`${String(target)} never got the focus in ${max} presses of Tab`);
}

/** The focused element shows a focus ring: a :focus-visible outline of at least 2 px, or a box shadow. */
export async function expectVisibleFocus(target: Locator) {
  await expect(target).toBeFocused();
  const ring = await target.evaluate((el) => {
    const style = getComputedStyle(el);
    return {
      visible: el.matches(':focus-visible'),
      outline: style.outlineStyle !== 'none' && Number.parseFloat(style.outlineWidth) >= 2,
      shadow: style.boxShadow !== 'none' && style.boxShadow !== '',
      described: `outline ${style.outlineStyle} ${style.outlineWidth}, box-shadow ${style.boxShadow}`,
    };
  });
  expect(ring.visible, 'matches :focus-visible').toBe(true);
  expect(ring.outline || ring.shadow, `a focus ring (${ring.described})`).toBe(true);
}

/** Signs in with the keyboard only: Tab to the fields, type, Enter. */
export async function loginByKeyboard(page: Page, role: Role) {
  await page.goto('/login');
  await tabTo(page, page.getByLabel('Email'));
  await page.keyboard.type(`${role}@example.com`);
  await page.keyboard.press('Tab');
  await page.keyboard.type(DEMO_PASSWORD);
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('who')).toContainText(role);
}

/**
 * Tab and Shift+Tab, `presses` times each way, keep the focus inside `dialog` (a modal that
 * traps it), and the focus is on something of the dialog after every press.
 */
export async function expectFocusTrapped(page: Page, dialog: Locator, presses = 6) {
  const inside = () => dialog.evaluate((d) => d.contains(document.activeElement) && document.activeElement !== d);
  for (const key of [...Array(presses).fill('Tab'), ...Array(presses).fill('Shift+Tab')] as string[]) {
    await page.keyboard.press(key);
    expect(await inside(), `focus inside the dialog after ${key}`).toBe(true);
  }
}
