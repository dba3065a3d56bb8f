import 'server-only';
/**
 * Route handlers' common shell: JSON in and out, server-side authorization errors as 401/403,
 * bad input as 400 with a sentence, a same-origin check on writes, and never a raw 500 page.
 */
import { NextResponse } from 'next/server';
import { InputError, toUserMessage } from './errors.ts';

export async function jsonBody(request: Request): Promise<unknown> {
  const text = await request.text();
  if (text.length > 1_000_000) throw new InputError('That request is too large.');
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new InputError('That request is not valid JSON.');
  }
}

function sameOrigin(request: Request): boolean {
  const origin = request.headers.get('origin');
  if (!origin) return true; // non-browser clients; the session cookie is SameSite=Lax anyway
  const host = request.headers.get('x-forwarded-host') ?? request.headers.get('host');
  try {
    return new URL(origin).host === host;
  } catch {
    return false;
  }
}

export async function respond(request: Request, work: () => Promise<unknown>): Promise<NextResponse> {
  try {
    if (request.method !== 'GET' && !sameOrigin(request)) {
      return NextResponse.json(
        { ok: false, message: 'Refused: this request came from another site.' },
        { status: 403 },
      );
    }
    const body = await work();
    return NextResponse.json(body, { headers: { 'cache-control': 'no-store' } });
  } catch (error) {
    const expected = toUserMessage(error);
    if (expected) return NextResponse.json({ ok: false, message: expected.message }, { status: expected.status });
    console.error('[dashboard] request failed', error);
    return NextResponse.json(
      { ok: false, message: 'The server could not complete this request; nothing was changed. Try again in a moment.' },
      { status: 503 },
    );
  }
}
