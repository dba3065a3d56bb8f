'use client';
import { useSyncExternalStore } from 'react';
import { THEME_KEY, type ThemeChoice } from './theme.ts';

const NEXT: Record<ThemeChoice, ThemeChoice> = { system: 'dark', dark: 'light', light: 'system' };
const LABEL: Record<ThemeChoice, string> = { system: 'system', dark: 'dark', light: 'light' };

const CHANGED = 'leasehold-theme-change';

function apply(choice: ThemeChoice) {
  if (choice === 'system') document.documentElement.removeAttribute('data-theme');
  else document.documentElement.setAttribute('data-theme', choice);
}

/** This page's choice (CHANGED), or another tab's (storage), which this page takes on too. */
function subscribe(onChange: () => void) {
  const fromOtherTab = (event: StorageEvent) => {
    if (event.key !== THEME_KEY && event.key !== null) return;
    apply(stored());
    onChange();
  };
  window.addEventListener('storage', fromOtherTab);
  window.addEventListener(CHANGED, onChange);
  return () => {
    window.removeEventListener('storage', fromOtherTab);
    window.removeEventListener(CHANGED, onChange);
  };
}

function stored(): ThemeChoice {
  try {
    const value = localStorage.getItem(THEME_KEY);
    return value === 'light' || value === 'dark' ? value : 'system';
  } catch {
    return 'system';
  }
}

/**
 * One button that cycles the theme: system (prefers-color-scheme), dark, light. The choice is
 * kept in this browser's localStorage; components/theme.ts's inline script applies it on the
 * next page before paint.
 */
export function ThemeToggle() {
  // 'system' on the server, which cannot know the browser's storage; the stored choice after hydration.
  const choice = useSyncExternalStore(subscribe, stored, () => 'system' as const);
  const cycle = () => {
    const next = NEXT[choice];
    try {
      if (next === 'system') localStorage.removeItem(THEME_KEY);
      else localStorage.setItem(THEME_KEY, next);
    } catch {
      // Storage refused (a private window's quota): the choice lasts for this page only.
    }
    apply(next);
    window.dispatchEvent(new Event(CHANGED));
  };
  return (
    <button
      type="button"
      className="theme-toggle"
      data-testid="theme-toggle"
      data-theme-choice={choice}
      onClick={cycle}
    >
      Theme: {LABEL[choice]}
    </button>
  );
}
