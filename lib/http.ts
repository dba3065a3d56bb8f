import 'server-only';
/**
 * Route handlers' common shell: JSON in and out, server-side authorization errors as 401/403,
 * bad input as 400 with a sentence, and never a raw 500 page.
 *
 * Writes go through `jsonWrite` / `bodylessWrite`, which check in this order, each before the
 * body is read: the session holds the function's role (401/403, the DAL's own `authorize`), the
 * request comes from the dashboard's origin (403), it is JSON (415), it fits the cap (413, by
 * Content-Length, then by counting streamed bytes: lib/request-limits.ts). Only then is the body
 * read. An anonymous 100 MB POST is answered 401 without a byte of it held.
 */
import { NextResponse } from 'next/server';
import { authorize, type RoleGated } from './dal/policy.ts';
import { webEnv } from './env.ts';
import { toUserMessage } from './errors.ts';
import { JSON_BODY_LIMIT, readBody, readJson, requireSameOrigin } from './request-limits.ts';

export async function respond(work: () => Promise<unknown>): Promise<NextResponse> {
  try {
    const body = await work();
    return NextResponse.json(body, { headers: { 'cache-control': 'no-store' } });
  } catch (error) {
    const expected = toUserMessage(error);
    // No `Connection: close` on a 413: closing a socket with unread bytes in it resets the
    // connection, and the client may lose the answer. Node discards or holds what is left.
    if (expected) return NextResponse.json({ ok: false, message: expected.message }, { status: expected.status });
    console.error('[dashboard] request failed', error);
    return NextResponse.json(
      { ok: false, message: 'The server could not complete this request; nothing was changed. Try again in a moment.' },
      { status: 503 },
    );
  }
}

/** The checks every write passes before its body is looked at. */
async function admit(request: Request, fn: RoleGated): Promise<void> {
  // The DAL function authorizes again itself; this one is here so that nobody's body is read.
  await authorize(fn);
  requireSameOrigin(request, webEnv().publicUrl);
}

/** A write that takes a JSON body: `work` gets it parsed, after the checks above. */
export function jsonWrite(
  request: Request,
  fn: RoleGated,
  work: (body: unknown) => Promise<unknown>,
): Promise<NextResponse> {
  return respond(async () => {
    await admit(request, fn);
    return work(await readJson(request, JSON_BODY_LIMIT));
  });
}

/**
 * A write whose input is all in its URL (pause, resume, reveal): the body is never read, and one
 * declared over the cap is refused like any other.
 */
export function bodylessWrite(request: Request, fn: RoleGated, work: () => Promise<unknown>): Promise<NextResponse> {
  return respond(async () => {
    await admit(request, fn);
    // Refused by its Content-Length alone (readBody throws before reading); an undeclared one is
    // left unread, and the server discards it after the answer.
    if (Number(request.headers.get('content-length') ?? 0) > JSON_BODY_LIMIT) await readBody(request, JSON_BODY_LIMIT);
    return work();
  });
}

/**
 * A write that answers with a file (the CSV export): the same checks and body as jsonWrite; the
 * file is sent as an attachment named `filename`, never cached. A refusal is JSON, as elsewhere.
 */
export async function fileWrite(
  request: Request,
  fn: RoleGated,
  work: (body: unknown) => Promise<{ filename: string; body: string; type: string }>,
): Promise<NextResponse> {
  let file: { filename: string; body: string; type: string } | undefined;
  const refused = await respond(async () => {
    await admit(request, fn);
    file = await work(await readJson(request, JSON_BODY_LIMIT));
    return null;
  });
  if (!file) return refused;
  return new NextResponse(file.body, {
    headers: {
      'content-type': file.type,
      'content-disposition': `attachment; filename="${file.filename.replace(/[^A-Za-z0-9._-]/g, '_')}"`,
      'cache-control': 'no-store',
    },
  });
}

/**
 * A JSON body with the route's URL parameters added (`{ ...body, id }`), for a DAL function that
 * parses both at once; a body that is not an object is passed on as is, for its parse to refuse.
 */
export function withParams(body: unknown, params: Record<string, string>): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  return { ...body, ...params };
}
