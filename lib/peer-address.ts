/**
 * Records each request's socket address in PEER_HEADER (lib/client-address.ts) before Next.js
 * sees the request: route handlers under `next start` get no socket, and the X-Forwarded-For
 * Next.js fills in is the client's own when the client sent one. Installed once per server
 * process by instrumentation.ts; the header a client sent under that name is always replaced.
 */
import { PEER_HEADER } from './client-address.ts';
import { hookServerRequests } from './server-request-hook.ts';

export function recordPeerAddresses(): void {
  hookServerRequests('leasehold.peer-address', (request) => {
    request.headers[PEER_HEADER] = request.socket?.remoteAddress ?? '';
    return false;
  });
}
