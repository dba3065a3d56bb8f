/**
 * next-auth's callbackUrl: a value that is neither a path nor a URL is refused with a sentence
 * (next-auth's own redirect callback threw on it, a 500 with no body), and the redirect
 * callback that replaces next-auth's never throws. Pure.
 */
import { describe, expect, it } from 'vitest';
import { authRequestProblem, callbackUrlProblem, safeRedirect } from './callback-url.ts';

const BASE = 'http://127.0.0.1:3310';
const NOT_A_URL = 'http://127.0.0.1:3310.evil.example/';
const form = (fields: Record<string, string>) => new TextEncoder().encode(new URLSearchParams(fields).toString());
const FORM = 'application/x-www-form-urlencoded';

describe('a callbackUrl', () => {
  it('that is neither a path nor a URL is refused with a sentence; a path or any URL passes', () => {
    expect(callbackUrlProblem(NOT_A_URL)).toBe(
      'callbackUrl is neither a path on this dashboard (such as /jobs) nor a URL: after signing in, the dashboard goes only to its own pages.',
    );
    expect(callbackUrlProblem('jobs')).not.toBeNull();
    for (const fine of ['/jobs', `${BASE}/jobs`, 'https://elsewhere.example/', null, undefined, ''])
      expect(callbackUrlProblem(fine)).toBeNull();
  });

  it('is found in the form, a JSON body and the query, and a JSON body that is not JSON is refused too', () => {
    const url = `${BASE}/api/auth/callback/credentials`;
    expect(authRequestProblem(url, FORM, form({ csrfToken: 'x', callbackUrl: NOT_A_URL }))).toMatch(
      /^callbackUrl is neither/,
    );
    expect(authRequestProblem(`${url}?callbackUrl=${encodeURIComponent(NOT_A_URL)}`, null, null)).toMatch(
      /^callbackUrl is neither/,
    );
    const json = (text: string) => new TextEncoder().encode(text);
    expect(authRequestProblem(url, 'application/json', json(JSON.stringify({ callbackUrl: NOT_A_URL })))).toMatch(
      /^callbackUrl is neither/,
    );
    expect(authRequestProblem(url, 'application/json', json('{"callbackUrl": 5}'))).toBe(
      'callbackUrl must be a string: a path on this dashboard such as /jobs.',
    );
    expect(authRequestProblem(url, 'application/json', json('{'))).toMatch(/^The body is not JSON/);
    // Repeated fields: each is checked (next-auth takes the last).
    const twice = new TextEncoder().encode(`callbackUrl=%2Fjobs&callbackUrl=${encodeURIComponent(NOT_A_URL)}`);
    expect(authRequestProblem(url, FORM, twice)).not.toBeNull();
    expect(authRequestProblem(url, FORM, form({ csrfToken: 'x', callbackUrl: `${BASE}/` }))).toBeNull();
    expect(authRequestProblem(url, FORM, form({ csrfToken: 'x' }))).toBeNull();
  });
});

describe('the redirect callback', () => {
  it('keeps a path or a URL of the dashboard, sends anything else to the front page, and never throws', () => {
    expect(safeRedirect({ url: '/jobs', baseUrl: BASE })).toBe(`${BASE}/jobs`);
    expect(safeRedirect({ url: `${BASE}/failures`, baseUrl: BASE })).toBe(`${BASE}/failures`);
    expect(safeRedirect({ url: 'https://evil.example/', baseUrl: BASE })).toBe(BASE);
    expect(safeRedirect({ url: NOT_A_URL, baseUrl: BASE })).toBe(BASE);
    expect(safeRedirect({ url: 5, baseUrl: BASE })).toBe(BASE);
  });
});
