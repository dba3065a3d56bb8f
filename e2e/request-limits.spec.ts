/**
 * Huge bodies are refused unread: ten parallel anonymous 100 MB POSTs, streamed with and
 * without Content-Length, to the write routes and to next-auth's credentials callback, are each
 * answered 401 (no session: the body is never looked at) or 413 (over the cap) at once (alone
 * within 100 ms; see expectRefusedUnread for the parallel bound), and the dashboard server's
 * resident memory grows by less than 20 MB meanwhile (it is read
 * from /proc: e2e/global-setup.ts exports the `next start` process's pid).
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { expect, login, ORIGIN, test } from './fixtures.ts';

const PORT = Number(new URL(ORIGIN).port);
const HUNDRED_MB = 100 * 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 0x20);

const WRITES = [
  '/api/bulk/apply',
  '/api/bulk/preview',
  '/api/failures/preview',
  '/api/jobs/00000000-0000-7000-8000-000000000001/retry',
  '/api/jobs/00000000-0000-7000-8000-000000000001/cancel',
  '/api/jobs/00000000-0000-7000-8000-000000000001/reveal',
  '/api/queues/default/pause',
  '/api/kinds/redaction',
];
const SIGN_IN = '/api/auth/callback/credentials';

interface Answer {
  path: string;
  chunked: boolean;
  status: number;
  ms: number;
  /** How much of the 100 MB the client had written when the answer came. */
  sentMb: number;
}

/**
 * POSTs 100 MB of spaces to `path` over a raw socket, written as fast as it takes them, and
 * resolves with the status once the answer's status line arrives (then stops and drops the
 * connection). Raw, not node:http: once the server has answered it drops a connection whose
 * body it refused, and node:http reports the write's EPIPE instead of the answer it had already
 * received; a socket's `data` comes first.
 */
function hugePost(path: string, chunked: boolean, contentType: string, cookie?: string): Promise<Answer> {
  return new Promise((resolve) => {
    const started = performance.now();
    let sent = 0;
    let answered = false;
    let received = '';
    const finish = (status: number) => {
      if (answered) return;
      answered = true;
      resolve({
        path,
        chunked,
        status,
        ms: Math.round(performance.now() - started),
        sentMb: Math.round(sent / 1024 / 1024),
      });
      socket.destroy();
    };
    const socket = net.connect(PORT, '127.0.0.1');
    const head = [
      `POST ${path} HTTP/1.1`,
      `Host: 127.0.0.1:${PORT}`,
      `Origin: ${ORIGIN}`,
      `Content-Type: ${contentType}`,
      ...(cookie ? [`Cookie: ${cookie}`] : []),
      chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${HUNDRED_MB}`,
      '',
      '',
    ].join('\r\n');
    const frame = chunked
      ? Buffer.concat([Buffer.from(`${CHUNK.length.toString(16)}\r\n`), CHUNK, Buffer.from('\r\n')])
      : CHUNK;
    socket.on('data', (data: Buffer) => {
      received += data.toString('latin1');
      const status = /^HTTP\/1\.1 (\d{3})/.exec(received);
      if (status) finish(Number(status[1]));
    });
    socket.on('error', (error) => {
      if (!answered) console.log(`[request-limits] ${path}: ${error.message} after ${sent} bytes, no answer`);
    });
    socket.on('close', () => finish(0));
    // One chunk per turn of the event loop: while the server reads as fast as this writes (it
    // discards what is left of a body after answering), a loop that writes until the socket
    // pushes back would send the whole 100 MB before this process looked at the answer.
    const pump = () => {
      if (answered) return;
      if (sent >= HUNDRED_MB) {
        if (chunked) socket.write('0\r\n\r\n');
        return;
      }
      sent += CHUNK.length;
      if (socket.write(frame)) setImmediate(pump);
      else socket.once('drain', pump);
    };
    socket.write(head);
    pump();
  });
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

/**
 * Every target once on its own, then all ten at a time, each first with Content-Length, then
 * chunked; the answers (alone and in parallel) and the server's RSS growth over all of them.
 */
async function flood(
  targets: string[],
  cookie?: string,
): Promise<{ alone: Answer[]; parallel: Answer[]; growthMb: number }> {
  const pid = Number(process.env.E2E_WEB_PID);
  expect(pid, 'the dashboard server’s pid (e2e/global-setup.ts)').toBeGreaterThan(0);
  // Warm up: the first request to a route loads its code, which is not what is measured here.
  for (const path of new Set(targets)) {
    const warm = await fetch(`${ORIGIN}${path}`, {
      method: 'POST',
      headers: { origin: ORIGIN, 'content-type': 'application/json', ...(cookie ? { cookie } : {}) },
      body: '{}',
    });
    expect(warm.status, path).toBeLessThan(500);
  }
  const contentType = (path: string) => (path === SIGN_IN ? 'application/x-www-form-urlencoded' : 'application/json');
  const alone: Answer[] = [];
  const parallel: Answer[] = [];
  // One unmeasured round first: a fresh server's heap grows on its first requests of each kind.
  await Promise.all(targets.map((path) => hugePost(path, true, contentType(path), cookie)));
  for (const chunked of [false, true])
    for (const path of new Set(targets)) {
      // The fastest of five: one request alone is at the mercy of the shared machine's load.
      const tries: Answer[] = [];
      for (let i = 0; i < 5; i++) tries.push(await hugePost(path, chunked, contentType(path), cookie));
      alone.push(tries.reduce((a, b) => (b.ms < a.ms ? b : a)));
    }
  // The memory the ten parallel ones take, sampled every 5 ms while they run.
  const before = rssMb(pid);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 5);
  try {
    for (const chunked of [false, true])
      parallel.push(...(await Promise.all(targets.map((path) => hugePost(path, chunked, contentType(path), cookie)))));
  } finally {
    clearInterval(sampler);
  }
  peak = Math.max(peak, rssMb(pid));
  const growthMb = peak - before;
  console.log(
    `[request-limits] RSS ${before.toFixed(1)} MB before, ${peak.toFixed(1)} MB at most: +${growthMb.toFixed(1)} MB`,
  );
  for (const [label, answers] of [
    ['alone', alone],
    ['parallel', parallel],
  ] as const)
    for (const a of answers)
      console.log(
        `[request-limits] ${label} ${a.chunked ? 'chunked' : 'length '} ${a.path}: ${a.status} in ${a.ms} ms, ${a.sentMb} MB sent`,
      );
  expect(parallel).toHaveLength(targets.length * 2);
  return { alone, parallel, growthMb };
}

const what = (a: Answer) => `${a.path} (${a.chunked ? 'chunked' : 'Content-Length'})`;

/**
 * The timing bounds. Alone, within 100 ms (the fastest of five tries). Ten at a time, within a
 * second: they measured 12–54 ms on the shared 2-core machine the tests run on, but the tenth
 * of ten answers also measures that machine's load. What shows the body was not read is how
 * little of it was sent when the answer came (the socket buffers' worth, a few MB of the 100)
 * and the RSS.
 */
function expectRefusedUnread(answers: { alone: Answer[]; parallel: Answer[] }, status: (a: Answer) => number) {
  for (const a of answers.alone) {
    expect(a.status, what(a)).toBe(status(a));
    expect(a.ms, `${what(a)} alone: ms`).toBeLessThan(100);
  }
  for (const a of answers.parallel) {
    expect(a.status, what(a)).toBe(status(a));
    expect(a.ms, `${what(a)} in parallel: ms`).toBeLessThan(1000);
    expect(a.sentMb, `${what(a)}: MB sent before the answer`).toBeLessThan(10);
  }
}

test('ten parallel anonymous 100 MB POSTs are refused unread: 401 or 413 at once, RSS grows < 20 MB', async () => {
  test.setTimeout(120_000);
  const answers = await flood([...WRITES, SIGN_IN, SIGN_IN]);
  expectRefusedUnread(answers, (a) => (a.path === SIGN_IN ? 413 : 401));
  expect(answers.growthMb, 'RSS growth in MB').toBeLessThan(20);
});

test('a signed-in admin’s ten parallel 100 MB POSTs are cut at the cap: 413 at once, RSS grows < 20 MB', async ({
  page,
}) => {
  test.setTimeout(120_000);
  await login(page, 'admin');
  const cookie = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
  const jsonWrites = WRITES.filter((p) => !p.endsWith('/reveal') && !p.endsWith('/pause'));
  const answers = await flood([...jsonWrites, ...jsonWrites.slice(0, 4)], cookie);
  expectRefusedUnread(answers, () => 413);
  expect(answers.growthMb, 'RSS growth in MB').toBeLessThan(20);
});
