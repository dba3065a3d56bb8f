/**
 * The theme a reader chose, per browser: `light` or `dark` in localStorage, or nothing to follow
 * the system (prefers-color-scheme). The root layout runs THEME_SCRIPT inline, with the
 * request's CSP nonce, before the body is parsed: the chosen theme is on <html> before the first
 * paint, with no flash of the other one. No 'use client': the server layout imports the string.
 */
export const THEME_KEY = 'leasehold-theme';

export type ThemeChoice = 'system' | 'light' | 'dark';

export const THEME_SCRIPT = `try{var t=localStorage.getItem(${JSON.stringify(THEME_KEY)});if(t==='light'||t==='dark')document.documentElement.setAttribute('data-theme',t)}catch(e){}`;
