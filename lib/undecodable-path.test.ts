/**
 * A request whose path is not valid percent-encoded UTF-8 is answered 400 with a sentence before
 * the server's own handler sees it (under `next start` that handler is Next.js, which answered
 * 500 "Internal Server Error"). A real http server with the hook installed.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isUndecodablePath, refuseUndecodablePaths, UNDECODABLE_PATH_MESSAGE } from './undecodable-path.ts';

let server: http.Server;
let base = '';
const reached: string[] = [];

beforeAll(async () => {
  refuseUndecodablePaths();
  server = http.createServer((request, response) => {
    reached.push(request.url ?? '');
    response.end('handled');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('a path that cannot be decoded', () => {
  it('is told apart from one that can: bad hex, a cut sequence, bytes that are not UTF-8', () => {
    for (const bad of ['/api/queues/%E0%A4%A/pause', '/api/queues/%ZZ/pause', '/jobs/%E0%A4', '/x/%C0%80', '/%'])
      expect(isUndecodablePath(bad), bad).toBe(true);
    for (const good of ['/api/queues/a%2Fb/pause', '/jobs/%E0%A4%A4', '/jobs?q=%E0%A4%A', '/', '/login'])
      expect(isUndecodablePath(good), good).toBe(false);
  });

  it('is answered 400 with the sentence (JSON under /api/, text for pages), and the handler never sees it', async () => {
    const api = await fetch(`${base}/api/queues/%E0%A4%A/pause`, { method: 'POST' });
    expect(api.status).toBe(400);
    expect(api.headers.get('content-type')).toBe('application/json');
    expect(await api.json()).toEqual({ ok: false, message: UNDECODABLE_PATH_MESSAGE });
    const page = await fetch(`${base}/jobs/%E0%A4%A`);
    expect(page.status).toBe(400);
    expect(await page.text()).toBe(`${UNDECODABLE_PATH_MESSAGE}\n`);
    expect(reached).toEqual([]);
    // A path that decodes still reaches the handler.
    expect(await (await fetch(`${base}/api/queues/a%2Fb/pause`, { method: 'POST' })).text()).toBe('handled');
    expect(reached).toEqual(['/api/queues/a%2Fb/pause']);
  });
});
