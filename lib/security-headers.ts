/**
 * The headers every page answers with (proxy.ts sets them per request; next.config.ts sets the
 * static ones on everything else, API routes and assets included). No `server-only` here:
 * proxy.ts imports this, the proxy's bundle layer has refused that marker (vercel/next.js#75904),
 * and nothing here is secret.
 *
 * The Content-Security-Policy is enforcing and nonce-based: Next.js renders inline scripts for
 * hydration and reads the nonce from the policy on the request (proxy.ts passes it on), so every
 * page is rendered per request (app/layout.tsx). No 'unsafe-inline' or 'unsafe-eval' in
 * script-src outside `next dev` (React's dev tooling evaluates code), and none in style-src
 * either: no page renders a `style="…"` attribute or an inline <style> without the nonce (the
 * charts set their sizes from script, which a policy does not govern; app/not-found.tsx replaces
 * Next.js's own 404 page, whose <style> has no nonce). Every e2e spec fails on a violation.
 */

export interface PolicyOptions {
  nonce: string;
  /** `next dev`: React's dev tooling needs eval, and its overlay injects styles. */
  dev: boolean;
  /** Where a form may post besides the dashboard itself: the identity provider's origin. */
  formActions: string[];
  /** Served over https: upgrade any http subresource (never set over plain http: it would break it). */
  https: boolean;
}

export function contentSecurityPolicy({ nonce, dev, formActions, https }: PolicyOptions): string {
  const directives = [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'${dev ? " 'unsafe-eval'" : ''}`,
    dev ? "style-src 'self' 'unsafe-inline'" : `style-src 'self' 'nonce-${nonce}'`,
    "img-src 'self' data: blob:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    ['form-action', "'self'", ...formActions].join(' '),
    "frame-ancestors 'none'",
    ...(https ? ['upgrade-insecure-requests'] : []),
  ];
  return directives.join('; ');
}

/** The origin of an http(s) URL, or null for anything else (an unset or malformed setting). */
export function originOf(url: string | undefined): string | null {
  if (!url) return null;
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed.origin : null;
  } catch {
    return null;
  }
}

/** One year; no includeSubDomains: the dashboard's host says nothing about its neighbours. */
export const HSTS = 'max-age=31536000';

/**
 * The headers besides the policy, for pages and API routes alike. HSTS only over https (the
 * public URL or the request): a browser ignores it over http, and a dashboard on
 * http://localhost must not pin itself.
 */
export function baseSecurityHeaders(https: boolean): Record<string, string> {
  return {
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'same-origin',
    ...(https ? { 'strict-transport-security': HSTS } : {}),
  };
}

/** A fresh nonce: 16 random bytes, base64 (what CSP's nonce-source allows). */
export function newNonce(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return btoa(String.fromCharCode(...bytes));
}
