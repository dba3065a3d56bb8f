/**
 * The write shell's order: the session first (an anonymous write is 401 before its body is
 * touched), then the origin, the content type and the size, and only then the body. Real users
 * in this file's PostgreSQL database; only next-auth's session read is stubbed.
 */
import { getServerSession } from 'next-auth';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { useTestDatabase } from '../test/db.ts';
import { dalSession } from '../test/dal-session.ts';
import { bodylessWrite, jsonWrite } from './http.ts';

vi.mock('next-auth', () => ({ getServerSession: vi.fn<() => Promise<unknown>>() }));

const t = useTestDatabase();
const session = dalSession(t, 'http.example.com');
const ORIGIN = 'https://dash.example.test';

beforeAll(() => session.start({ NEXTAUTH_URL: `${ORIGIN}/api/auth` }));
afterAll(() => session.close());

/** A body that counts what is pulled from it: `size` bytes in 16 kB chunks (endless without one). */
function body(size = Number.POSITIVE_INFINITY) {
  const pulled = { bytes: 0 };
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (pulled.bytes >= size) return controller.close();
        const chunk = new TextEncoder().encode(' '.repeat(Math.min(16 * 1024, size - pulled.bytes)));
        pulled.bytes += chunk.byteLength;
        controller.enqueue(chunk);
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, pulled };
}

function post(headers: Record<string, string>, stream: ReadableStream<Uint8Array>): Request {
  return { url: `${ORIGIN}/api/bulk/preview`, method: 'POST', headers: new Headers(headers), body: stream } as never;
}

const JSON_FROM_HERE = { origin: ORIGIN, 'content-type': 'application/json' };

describe('jsonWrite', () => {
  it('answers an anonymous write 401 without reading a byte of its body', async () => {
    vi.mocked(getServerSession).mockResolvedValue(null);
    const { stream, pulled } = body();
    const work = vi.fn<() => Promise<unknown>>(async () => ({ ok: true }));
    const response = await jsonWrite(
      post({ ...JSON_FROM_HERE, 'content-length': String(100 * 1024 * 1024) }, stream),
      'previewBulk',
      work,
    );
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ ok: false, message: 'Please sign in.' });
    expect(pulled.bytes).toBe(0);
    expect(work).not.toHaveBeenCalled();
  });

  it('answers a role too low 403 without reading the body', async () => {
    session.signIn('operator');
    const { stream, pulled } = body();
    const response = await jsonWrite(post(JSON_FROM_HERE, stream), 'previewBulk', async () => ({}));
    expect(response.status).toBe(403);
    expect(pulled.bytes).toBe(0);
  });

  it('refuses another origin (403) and a body that is not JSON (415) before reading it', async () => {
    session.signIn('admin');
    const cross = body();
    const fromElsewhere = await jsonWrite(
      post({ ...JSON_FROM_HERE, origin: 'https://evil.example', 'x-forwarded-host': 'evil.example' }, cross.stream),
      'previewBulk',
      async () => ({}),
    );
    expect(fromElsewhere.status).toBe(403);
    const plain = body();
    const notJson = await jsonWrite(
      post({ origin: ORIGIN, 'content-type': 'text/plain' }, plain.stream),
      'previewBulk',
      async () => ({}),
    );
    expect(notJson.status).toBe(415);
    expect(cross.pulled.bytes + plain.pulled.bytes).toBe(0);
  });

  it('refuses a signed-in admin’s oversized body with 413: by Content-Length unread, by stream at the cap', async () => {
    session.signIn('admin');
    const declared = body();
    const byLength = await jsonWrite(
      post({ ...JSON_FROM_HERE, 'content-length': String(10 * 1024 * 1024) }, declared.stream),
      'previewBulk',
      async () => ({}),
    );
    expect(byLength.status).toBe(413);
    expect(declared.pulled.bytes).toBe(0);
    const streamed = body();
    const byStream = await jsonWrite(post(JSON_FROM_HERE, streamed.stream), 'previewBulk', async () => ({}));
    expect(byStream.status).toBe(413);
    expect(streamed.pulled.bytes).toBeLessThanOrEqual(256 * 1024 + 16 * 1024);
  });

  it('hands the parsed body to the work once every check passed', async () => {
    session.signIn('admin');
    const json = '{"action":"retry"}';
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode(json));
        c.close();
      },
    });
    const work = vi.fn<(input: unknown) => Promise<unknown>>(async (input) => ({ ok: true, got: input }));
    const response = await jsonWrite(post(JSON_FROM_HERE, stream), 'previewBulk', work);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ ok: true, got: { action: 'retry' } });
  });
});

describe('bodylessWrite', () => {
  it('needs the session and the origin, and never reads a body', async () => {
    vi.mocked(getServerSession).mockResolvedValue(null);
    const anonymous = body();
    expect(
      (await bodylessWrite(post({ origin: ORIGIN }, anonymous.stream), 'setQueuePaused', async () => ({}))).status,
    ).toBe(401);
    session.signIn('admin');
    const noOrigin = body();
    expect((await bodylessWrite(post({}, noOrigin.stream), 'setQueuePaused', async () => ({}))).status).toBe(403);
    const big = body();
    const tooBig = await bodylessWrite(
      post({ origin: ORIGIN, 'content-length': String(10 * 1024 * 1024) }, big.stream),
      'setQueuePaused',
      async () => ({}),
    );
    expect(tooBig.status).toBe(413);
    const fine = body(2);
    const work = vi.fn<() => Promise<unknown>>(async () => ({ ok: true }));
    expect((await bodylessWrite(post({ origin: ORIGIN }, fine.stream), 'setQueuePaused', work)).status).toBe(200);
    expect(work).toHaveBeenCalledOnce();
    expect(anonymous.pulled.bytes + noOrigin.pulled.bytes + big.pulled.bytes + fine.pulled.bytes).toBe(0);
  });
});
