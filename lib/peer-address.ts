/**
 * Records each request's socket address in PEER_HEADER (lib/client-address.ts) before Next.js
 * sees the request: route handlers under `next start` get no socket, and the X-Forwarded-For
 * Next.js fills in is the client's own when the client sent one. Installed once per server
 * process by instrumentation.ts; the header a client sent under that name is always replaced.
 */
import http from 'node:http';
import https from 'node:https';
import { PEER_HEADER } from './client-address.ts';

const INSTALLED = Symbol.for('leasehold.peer-address');

export function recordPeerAddresses(): void {
  for (const Server of [http.Server, https.Server]) {
    const proto = Server.prototype as unknown as Record<symbol, unknown> & {
      emit: (event: string | symbol, ...args: unknown[]) => boolean;
    };
    if (proto[INSTALLED]) continue;
    const emit = proto.emit;
    proto.emit = function (this: unknown, event: string | symbol, ...args: unknown[]): boolean {
      if (event === 'request') {
        const request = args[0] as http.IncomingMessage;
        request.headers[PEER_HEADER] = request.socket?.remoteAddress ?? '';
      }
      return emit.call(this, event, ...args);
    };
    proto[INSTALLED] = true;
  }
}
