/**
 * Next.js's request proxy (the file convention that replaced middleware.ts in Next.js 16): a
 * fresh CSP nonce and the security headers for every page (lib/security-headers.ts). The
 * policy goes on the request too: Next.js reads the nonce from it and puts it on the inline and
 * framework scripts it renders.
 *
 * Not for /api/…: the proxy makes Next.js clone and buffer a request's body
 * (experimental.proxyClientMaxBodySize, next.config.ts), and the write routes must see the
 * body as a stream to refuse it unread (lib/request-limits.ts). API routes get their static
 * headers from next.config.ts. The matcher is under the base path (Next.js prefixes it).
 */
import { type NextRequest, NextResponse } from 'next/server';
import { baseSecurityHeaders, contentSecurityPolicy, newNonce, originOf } from './lib/security-headers.ts';

export function proxy(request: NextRequest) {
  const nonce = newNonce();
  const https =
    request.nextUrl.protocol === 'https:' || originOf(process.env.NEXTAUTH_URL)?.startsWith('https:') === true;
  const issuer = originOf(process.env.LEASEHOLD_OIDC_ISSUER);
  const policy = contentSecurityPolicy({
    nonce,
    dev: process.env.NODE_ENV === 'development',
    // The sign-in POST answers a redirect to the identity provider: let a form follow it there.
    formActions: issuer ? [issuer] : [],
    https,
  });
  const requestHeaders = new Headers(request.headers);
  requestHeaders.set('x-nonce', nonce);
  requestHeaders.set('content-security-policy', policy);
  const response = NextResponse.next({ request: { headers: requestHeaders } });
  response.headers.set('content-security-policy', policy);
  for (const [name, value] of Object.entries(baseSecurityHeaders(https))) response.headers.set(name, value);
  return response;
}

export const config = {
  matcher: ['/((?!api/|_next/static/|_next/image|favicon.ico|icon.svg).*)'],
};
