import 'server-only';
/**
 * What a write must show before its body is read, and the reader that stops at the cap.
 *
 * Invariants: a body over the cap is refused without being held (by Content-Length before a
 * byte is read; by the count of streamed bytes when there is none, stopping at the first chunk
 * past the cap); a JSON write names application/json; a write names its origin, and that origin
 * is the dashboard's configured one (NEXTAUTH_URL), not whatever the request's X-Forwarded-Host
 * says. lib/http.ts runs these after the session check, so an anonymous caller is answered 401
 * before any of this. The sign-in route (app/api/auth/[...nextauth]/route.ts) uses the reader
 * with its own, smaller cap.
 */
import { InputError, RequestRefused } from './errors.ts';

/**
 * The largest JSON body a write route reads. The biggest legitimate one is a bulk apply of
 * MAX_BULK_ACTION (1,000) jobs with their lease tokens: about 100 kB.
 */
export const JSON_BODY_LIMIT = 256 * 1024;
/** next-auth's POSTs (sign-in, sign-out): a CSRF token, an email, a password, a callback URL. */
export const SIGN_IN_BODY_LIMIT = 16 * 1024;

const kib = (bytes: number) => `${Math.round(bytes / 1024)} kB`;

function tooLarge(limit: number): RequestRefused {
  return new RequestRefused(413, `That request is too large: the dashboard reads at most ${kib(limit)}.`);
}

/**
 * The body's bytes, at most `limit` of them. Refuses (413) a Content-Length over the limit
 * without reading, and a stream (chunked, or lying about its length) at the first chunk that
 * passes it. The rest is left unread: the server discards it or closes the connection, it never
 * holds it.
 */
export async function readBody(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length');
  if (declared !== null) {
    if (!/^\s*\d+\s*$/.test(declared)) throw new InputError('That request has an invalid Content-Length.');
    if (Number(declared) > limit) throw tooLarge(limit);
  }
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > limit) throw tooLarge(limit);
      chunks.push(value);
    }
  } finally {
    // Not cancel(): cancelling a Node request's body destroys its socket, and with it the 413.
    reader.releaseLock();
  }
  return Buffer.concat(chunks);
}

/** Refuses (415) a body that is not declared application/json (a charset parameter is fine). */
export function requireJsonContentType(request: Request): void {
  const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') {
    throw new RequestRefused(
      415,
      `This endpoint takes JSON: send Content-Type: application/json${type ? `, not ${type}` : ''}.`,
    );
  }
}

/** The body as JSON, within `limit` bytes; an empty body is `{}`. */
export async function readJson(request: Request, limit: number = JSON_BODY_LIMIT): Promise<unknown> {
  requireJsonContentType(request);
  const bytes = await readBody(request, limit);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new InputError('That request is not valid UTF-8.');
  }
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new InputError('That request is not valid JSON.');
  }
}

/**
 * Refuses (403) a write that does not come from the dashboard's own pages: its Origin must be
 * the configured public origin (`publicUrl`: NEXTAUTH_URL as lib/settings.ts parsed it), or, when none is configured (demo mode), have
 * the request's own Host (never X-Forwarded-Host: any client can send that). Without Origin,
 * only `Sec-Fetch-Site: same-origin` passes; browsers send Origin on every POST, so a client
 * without either is a script, and it must say where it comes from like a browser does.
 */
export function requireSameOrigin(request: Request, publicUrl: URL | null): void {
  const origin = request.headers.get('origin');
  if (origin === null) {
    if (request.headers.get('sec-fetch-site') === 'same-origin') return;
    throw new RequestRefused(
      403,
      'Refused: a write must carry an Origin header naming the dashboard (browsers send it; a script must too).',
    );
  }
  if (!originMatches(origin, request, publicUrl)) {
    throw new RequestRefused(403, 'Refused: this request came from another site.');
  }
}

function originMatches(origin: string, request: Request, publicUrl: URL | null): boolean {
  let given: URL;
  try {
    given = new URL(origin);
  } catch {
    return false; // `null` (a sandboxed frame, a privacy redirect) and garbage
  }
  if (publicUrl) return given.origin === publicUrl.origin;
  return given.host === request.headers.get('host');
}
