import NextAuth from 'next-auth';
import { NextRequest, NextResponse } from 'next/server';
import { authOptions } from '../../../../lib/auth.ts';
import { toUserMessage } from '../../../../lib/errors.ts';
import { readBody, SIGN_IN_BODY_LIMIT } from '../../../../lib/request-limits.ts';

type Context = { params: Promise<{ nextauth: string[] }> };

// Options are built per request so that a missing secret is reported, not baked in at build.
function handler(request: Request, context: Context) {
  return NextAuth(request as never, context as never, authOptions());
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
  return handler(copy, context);
}

export { handler as GET, post as POST };
