/**
 * The body reader and the write checks on their own: a body over the cap is refused by its
 * Content-Length before a byte is pulled, a stream without one is cut at the first chunk past
 * the cap, a JSON write must say application/json, and its Origin must be the configured one.
 */
import { describe, expect, it } from 'vitest';
import { InputError, RequestRefused } from './errors.ts';
import { readBody, readJson, requireSameOrigin } from './request-limits.ts';

const URL_ = 'http://dash.example.test/api/bulk/preview';

/** An endless body of `chunk`-byte chunks that counts what was pulled from it. */
function endless(chunk = 16 * 1024) {
  const pulled = { bytes: 0, chunks: 0 };
  // highWaterMark 0: nothing is pulled until somebody reads.
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        pulled.bytes += chunk;
        pulled.chunks += 1;
        controller.enqueue(new Uint8Array(chunk).fill(0x61));
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, pulled };
}

/** A request with exactly these headers (fetch's Request drops Content-Length: a server's does not). */
function request(headers: Record<string, string>, body: ReadableStream<Uint8Array> | string | null = null): Request {
  const stream =
    typeof body === 'string'
      ? new ReadableStream<Uint8Array>({
          start(c) {
            c.enqueue(new TextEncoder().encode(body));
            c.close();
          },
        })
      : body;
  return { url: URL_, method: 'POST', headers: new Headers(headers), body: stream } as unknown as Request;
}

async function refusal(promise: Promise<unknown>): Promise<RequestRefused> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(RequestRefused);
  return error as RequestRefused;
}

describe('readBody', () => {
  it('refuses a Content-Length over the cap with 413 before pulling a byte', async () => {
    const { stream, pulled } = endless();
    const error = await refusal(readBody(request({ 'content-length': String(100 * 1024 * 1024) }, stream), 256 * 1024));
    expect(error.status).toBe(413);
    expect(error.message).toBe('That request is too large: the dashboard reads at most 256 kB.');
    expect(pulled.bytes).toBe(0);
  });

  it('cuts a body without Content-Length at the first chunk past the cap', async () => {
    const { stream, pulled } = endless(16 * 1024);
    const error = await refusal(readBody(request({}, stream), 64 * 1024));
    expect(error.status).toBe(413);
    // 64 kB in four chunks, the fifth passes it: nothing more was asked of the stream.
    expect(pulled.chunks).toBe(5);
  });

  it('cuts a body that sends more than its Content-Length said', async () => {
    const { stream, pulled } = endless(16 * 1024);
    const error = await refusal(readBody(request({ 'content-length': '100' }, stream), 32 * 1024));
    expect(error.status).toBe(413);
    expect(pulled.chunks).toBe(3);
  });

  it('returns a body within the cap whole, and refuses a malformed Content-Length', async () => {
    const bytes = await readBody(request({ 'content-length': '11' }, '{"a":"bcd"}'), 11);
    expect(new TextDecoder().decode(bytes)).toBe('{"a":"bcd"}');
    await expect(readBody(request({ 'content-length': '12abc' }, '{}'), 100)).rejects.toThrow(
      new InputError('That request has an invalid Content-Length.'),
    );
  });
});

describe('readJson', () => {
  it('refuses a body not declared application/json with 415, before reading it', async () => {
    const { stream, pulled } = endless();
    const error = await refusal(readJson(request({ 'content-type': 'text/plain' }, stream)));
    expect(error.status).toBe(415);
    expect(error.message).toBe('This endpoint takes JSON: send Content-Type: application/json, not text/plain.');
    expect(pulled.bytes).toBe(0);
    expect((await refusal(readJson(request({}, '{}')))).status).toBe(415);
  });

  it('parses application/json with a charset, and says so when the JSON is bad', async () => {
    expect(await readJson(request({ 'content-type': 'application/json; charset=utf-8' }, '{"reason":"x"}'))).toEqual({
      reason: 'x',
    });
    expect(await readJson(request({ 'content-type': 'application/json' }, ''))).toEqual({});
    await expect(readJson(request({ 'content-type': 'application/json' }, '{"reason":'))).rejects.toThrow(
      'That request is not valid JSON.',
    );
  });
});

describe('requireSameOrigin', () => {
  const PUBLIC = 'https://ops.example.com/leasehold/api/auth';
  // null: no NEXTAUTH_URL configured.
  const check = (headers: Record<string, string>, publicUrl: string | null = PUBLIC) => {
    try {
      requireSameOrigin(request(headers), publicUrl === null ? null : new URL(publicUrl));
      return 'allowed';
    } catch (error) {
      return error instanceof RequestRefused ? `${error.status} ${error.message}` : String(error);
    }
  };

  it('allows the configured origin, whatever Host and X-Forwarded-Host say', () => {
    expect(check({ origin: 'https://ops.example.com', host: '127.0.0.1:3000' })).toBe('allowed');
  });

  it('refuses another origin even when X-Forwarded-Host or Host agree with it', () => {
    const refused = '403 Refused: this request came from another site.';
    expect(check({ origin: 'https://evil.example', 'x-forwarded-host': 'evil.example' })).toBe(refused);
    expect(check({ origin: 'https://evil.example', host: 'evil.example' })).toBe(refused);
    expect(check({ origin: 'http://ops.example.com' })).toBe(refused); // another scheme is another origin
    expect(check({ origin: 'null' })).toBe(refused);
  });

  it('refuses a write without Origin unless the browser says it is same-origin', () => {
    expect(check({})).toBe(
      '403 Refused: a write must carry an Origin header naming the dashboard (browsers send it; a script must too).',
    );
    expect(check({ 'sec-fetch-site': 'cross-site' })).toMatch(/^403 /);
    expect(check({ 'sec-fetch-site': 'same-origin' })).toBe('allowed');
  });

  it('without a configured URL compares with Host, never with X-Forwarded-Host', () => {
    expect(check({ origin: 'http://127.0.0.1:3000', host: '127.0.0.1:3000' }, null)).toBe('allowed');
    expect(
      check({ origin: 'https://evil.example', host: '127.0.0.1:3000', 'x-forwarded-host': 'evil.example' }, null),
    ).toMatch(/^403 /);
  });
});
