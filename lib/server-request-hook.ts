/**
 * One hook on every HTTP(S) server's 'request' event in this process, ahead of Next.js: each
 * caller (lib/peer-address.ts, lib/undecodable-path.ts) installs its function once under its own
 * key, and a function that answers the request itself returns true so Next.js never sees it.
 * Installed from instrumentation.ts.
 */
import http from 'node:http';
import https from 'node:https';

export type RequestHook = (request: http.IncomingMessage, response: http.ServerResponse) => boolean;

export function hookServerRequests(key: string, hook: RequestHook): void {
  const installed = Symbol.for(key);
  for (const Server of [http.Server, https.Server]) {
    const proto = Server.prototype as unknown as Record<symbol, unknown> & {
      emit: (event: string | symbol, ...args: unknown[]) => boolean;
    };
    if (proto[installed]) continue;
    const emit = proto.emit;
    proto.emit = function (this: unknown, event: string | symbol, ...args: unknown[]): boolean {
      if (event === 'request' && hook(args[0] as http.IncomingMessage, args[1] as http.ServerResponse)) {
        return true;
      }
      return emit.call(this, event, ...args);
    };
    proto[installed] = true;
  }
}
