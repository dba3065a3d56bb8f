import NextAuth from 'next-auth';
import { authOptions } from '../../../../lib/auth.ts';
import { clientAddress } from '../../../../lib/client-address.ts';
import { webEnv } from '../../../../lib/env.ts';
import { withSignInRequest, type SignInRequest } from '../../../../lib/sign-in-context.ts';
import { throttledCode, throttledMessage } from '../../../../lib/sign-in-wait.ts';

/**
 * next-auth, run with the client's address at hand (lib/sign-in-context.ts). A guess the
 * throttle refused (lib/auth.ts, authorize) is answered 429 with Retry-After and a sentence,
 * not next-auth's 401: `url` keeps the shape next-auth's signIn() reads, its `error` the code
 * the login form turns into the sentence and the wait.
 */
// Options are built per request so that a missing secret is reported, not baked in at build.
async function handler(request: Request, context: { params: Promise<{ nextauth: string[] }> }) {
  const signIn: SignInRequest = { client: clientAddress(request.headers, webEnv().trustedProxies), throttled: null };
  const response = await withSignInRequest(signIn, () => NextAuth(request as never, context as never, authOptions()));
  if (!signIn.throttled) return response as Response;
  const seconds = signIn.throttled.seconds;
  const error = throttledCode(seconds);
  const login = new URL(`${process.env.NEXT_PUBLIC_LEASEHOLD_BASE_PATH ?? ''}/login`, request.url);
  login.searchParams.set('error', error);
  const headers = new Headers();
  // next-auth's cookies (the CSRF token) go along; its Location and body do not.
  for (const cookie of (response as Response).headers.getSetCookie()) headers.append('Set-Cookie', cookie);
  headers.set('Retry-After', String(seconds));
  headers.set('Cache-Control', 'no-store');
  headers.set('Content-Type', 'application/json');
  return new Response(
    JSON.stringify({ url: login.toString(), error, message: throttledMessage(seconds), retryAfter: seconds }),
    {
      status: 429,
      headers,
    },
  );
}

export { handler as GET, handler as POST };
