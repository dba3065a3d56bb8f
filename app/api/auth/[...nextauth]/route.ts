import NextAuth from 'next-auth';
import { NextRequest, NextResponse } from 'next/server';
import { authOptions, checkedSessionAnswer } from '../../../../lib/auth.ts';
import { authRequestProblem } from '../../../../lib/callback-url.ts';
import { clientAddress } from '../../../../lib/client-address.ts';
import { webEnv } from '../../../../lib/env.ts';
import { toUserMessage } from '../../../../lib/errors.ts';
import { readBody, SIGN_IN_BODY_LIMIT } from '../../../../lib/request-limits.ts';
import { withSignInRequest, type SignInRequest } from '../../../../lib/sign-in-context.ts';
import { throttledCode, throttledMessage } from '../../../../lib/sign-in-wait.ts';

type Context = { params: Promise<{ nextauth: string[] }> };

/**
 * next-auth, run with the client's address at hand (lib/sign-in-context.ts). A guess the
 * throttle refused (lib/auth.ts, authorize) is answered 429 with Retry-After and a sentence,
 * not next-auth's 401: `url` keeps the shape next-auth's signIn() reads (the login page on
 * NEXTAUTH_URL's origin), its `error` the code the login form turns into the sentence and the
 * wait. A request next-auth would fail on with an empty 500 (lib/callback-url.ts) is answered
 * 400 with a sentence before next-auth sees it.
 */
// Options are built per request so that a missing secret is reported, not baked in at build.
async function handler(request: Request, context: Context, body: Uint8Array | null = null) {
  // What next-auth would answer with an empty 500 (a callbackUrl that is no URL, a JSON body
  // that is not JSON) is refused here with a sentence.
  const problem = authRequestProblem(request.url, request.headers.get('content-type'), body);
  if (problem)
    return NextResponse.json({ message: problem }, { status: 400, headers: { 'cache-control': 'no-store' } });
  const signIn: SignInRequest = { client: clientAddress(request.headers, webEnv().trustedProxies), throttled: null };
  const response = await withSignInRequest(signIn, () => NextAuth(request as never, context as never, authOptions()));
  // next-auth only decodes the token: whether its identity signed out since is asked here.
  if (request.method === 'GET' && (await context.params).nextauth?.[0] === 'session')
    return checkedSessionAnswer(response as Response);
  if (!signIn.throttled) return response as Response;
  const seconds = signIn.throttled.seconds;
  const error = throttledCode(seconds);
  // On the dashboard's public origin (NEXTAUTH_URL), not the address this process listens on,
  // which behind a proxy is nobody's to open.
  const login = new URL(
    `${process.env.NEXT_PUBLIC_LEASEHOLD_BASE_PATH ?? ''}/login`,
    webEnv().publicUrl ?? request.url,
  );
  login.searchParams.set('error', error);
  const headers = new Headers();
  // next-auth's cookies (the CSRF token) go along; its Location and body do not.
  for (const cookie of (response as Response).headers.getSetCookie()) headers.append('Set-Cookie', cookie);
  headers.set('Retry-After', String(seconds));
  headers.set('Cache-Control', 'no-store');
  headers.set('Content-Type', 'application/json');
  return new Response(
    JSON.stringify({ url: login.toString(), error, message: throttledMessage(seconds), retryAfter: seconds }),
    { status: 429, headers },
  );
}

/**
 * next-auth reads a POST's whole body (req.json() / req.text()) before it looks at anything
 * else, for anyone: so the body is read here first, capped at SIGN_IN_BODY_LIMIT (413 by
 * Content-Length without reading, or at the first streamed chunk past it), and next-auth gets a
 * copy of the few bytes that were allowed.
 */
async function post(request: Request, context: Context) {
  let body: Uint8Array;
  try {
    body = await readBody(request, SIGN_IN_BODY_LIMIT);
  } catch (error) {
    const refused = toUserMessage(error);
    if (!refused) throw error;
    return NextResponse.json({ message: refused.message }, { status: refused.status });
  }
  const headers = new Headers(request.headers);
  // The copy's length is its own: a chunked original's framing does not apply to it.
  headers.delete('transfer-encoding');
  headers.set('content-length', String(body.byteLength));
  const copy = new NextRequest(request.url, { method: 'POST', headers, body: body as BodyInit });
  return handler(copy, context, body);
}

const get = (request: Request, context: Context) => handler(request, context);

export { get as GET, post as POST };
