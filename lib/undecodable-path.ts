/**
 * A request whose path is not valid percent-encoded UTF-8 (`/api/queues/%E0%A4%A/pause`):
 * Next.js fails to decode the dynamic segment before any route handler runs and answers 500
 * "Internal Server Error". Such a request is answered here instead, before Next.js sees it, with
 * 400 and a sentence: JSON under /api/ (the shape every route answers in), plain text for pages.
 * Installed once per server process by instrumentation.ts, beside lib/peer-address.ts.
 */
import { hookServerRequests } from './server-request-hook.ts';

export const UNDECODABLE_PATH_MESSAGE =
  'The address is not valid percent-encoding (each %XX must spell UTF-8): check the link, or encode the queue name or job id in it with encodeURIComponent.';

/** Whether the path part of a request target (`/a/b?c`) cannot be decoded as Next.js decodes it. */
export function isUndecodablePath(target: string): boolean {
  const end = target.search(/[?#]/);
  const path = end === -1 ? target : target.slice(0, end);
  try {
    decodeURIComponent(path);
    return false;
  } catch {
    return true;
  }
}

/** The 400 for such a request under `basePath` (the build's, components/base-path.ts): headers and body. */
export function undecodablePathAnswer(
  target: string,
  basePath = process.env.NEXT_PUBLIC_LEASEHOLD_BASE_PATH ?? '',
): { headers: Record<string, string>; body: string } {
  const prefix = `${basePath}/api`;
  const rest = target.startsWith(prefix) ? target.slice(prefix.length) : null;
  const api = rest !== null && (rest === '' || /^[/?#]/.test(rest));
  return api
    ? {
        headers: {
          'content-type': 'application/json',
          'cache-control': 'no-store',
          'x-content-type-options': 'nosniff',
          'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
        },
        body: JSON.stringify({ ok: false, message: UNDECODABLE_PATH_MESSAGE }),
      }
    : {
        headers: {
          'content-type': 'text/plain; charset=utf-8',
          'cache-control': 'no-store',
          'x-content-type-options': 'nosniff',
          'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
        },
        body: `${UNDECODABLE_PATH_MESSAGE}\n`,
      };
}

export function refuseUndecodablePaths(): void {
  hookServerRequests('leasehold.undecodable-path', (request, response) => {
    const target = request.url ?? '/';
    if (!isUndecodablePath(target)) return false;
    const { headers, body } = undecodablePathAnswer(target);
    response.writeHead(400, { ...headers, 'content-length': Buffer.byteLength(body) });
    response.end(request.method === 'HEAD' ? undefined : body);
    return true;
  });
}
