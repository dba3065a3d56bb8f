/**
 * `npm run provider`: a stand-in receipt provider (seed 000) as its own HTTP process.
 *
 *   POST /receipts   with an Idempotency-Key header: the same key gets the same result and is
 *                    delivered once, however often it is called.
 *   GET  /stats      calls, deliveries, replays, outcomes; deliveries per key.
 *   POST /reset      forget everything (tests).
 *
 * Faults, each drawn per call (flags or env):
 *   --port 4010 (PROVIDER_PORT)        --latency-ms 20 (PROVIDER_LATENCY_MS)
 *   --error-rate 0 (PROVIDER_ERROR_RATE): 503 before delivering
 *   --rate-limit-rate 0 (PROVIDER_RATE_LIMIT_RATE): 429 with Retry-After: --retry-after-s 1
 *   --timeout-rate 0 (PROVIDER_TIMEOUT_RATE): delivers, then answers only after --stall-ms 10000
 *     (the caller times out not knowing whether it was delivered)
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    port: { type: 'string' },
    'latency-ms': { type: 'string' },
    'error-rate': { type: 'string' },
    'rate-limit-rate': { type: 'string' },
    'retry-after-s': { type: 'string' },
    'timeout-rate': { type: 'string' },
    'stall-ms': { type: 'string' },
  },
});

function setting(flag: string, envName: string, fallback: number, min: number, max: number): number {
  const raw = (values as Record<string, string | undefined>)[flag] ?? process.env[envName] ?? String(fallback);
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min || value > max) {
    console.error(
      `provider: --${flag} (${envName}) must be a number from ${min} to ${max}, got ${JSON.stringify(raw)}`,
    );
    process.exit(2);
  }
  return value;
}

const settings = {
  port: setting('port', 'PROVIDER_PORT', 4010, 0, 65535),
  latencyMs: setting('latency-ms', 'PROVIDER_LATENCY_MS', 20, 0, 60_000),
  errorRate: setting('error-rate', 'PROVIDER_ERROR_RATE', 0, 0, 1),
  rateLimitRate: setting('rate-limit-rate', 'PROVIDER_RATE_LIMIT_RATE', 0, 0, 1),
  retryAfterS: setting('retry-after-s', 'PROVIDER_RETRY_AFTER_S', 1, 0, 3600),
  timeoutRate: setting('timeout-rate', 'PROVIDER_TIMEOUT_RATE', 0, 0, 1),
  stallMs: setting('stall-ms', 'PROVIDER_STALL_MS', 10_000, 0, 600_000),
};

interface Delivery {
  receiptId: string;
  deliveredAt: string;
  attempt: string | null;
}

let state = fresh();
function fresh() {
  return {
    calls: 0,
    replays: 0,
    outcomes: { delivered: 0, replayed: 0, unavailable: 0, rateLimited: 0, stalled: 0, refused: 0 },
    deliveries: new Map<string, Delivery>(),
    callsPerKey: new Map<string, number>(),
  };
}

const json = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};
const later = (ms: number) => new Promise((r) => setTimeout(r, ms));

const server = http.createServer((req, res) => void respond(req, res));

async function respond(req: http.IncomingMessage, res: http.ServerResponse) {
  if (req.method === 'GET' && req.url === '/stats') {
    return json(res, 200, {
      settings,
      calls: state.calls,
      deliveries: state.deliveries.size,
      outcomes: state.outcomes,
      perKey: Object.fromEntries(
        [...state.deliveries.keys()].map((k) => [k, { deliveries: 1, calls: state.callsPerKey.get(k) ?? 0 }]),
      ),
    });
  }
  if (req.method === 'POST' && req.url === '/reset') {
    state = fresh();
    return json(res, 200, { reset: true });
  }
  if (req.method !== 'POST' || req.url !== '/receipts') return json(res, 404, { error: 'POST /receipts, GET /stats' });
  const key = req.headers['idempotency-key'];
  for await (const _ of req); // drain the body
  state.calls += 1;
  if (typeof key !== 'string' || key === '') {
    state.outcomes.refused += 1;
    return json(res, 400, { error: 'Idempotency-Key header required' });
  }
  state.callsPerKey.set(key, (state.callsPerKey.get(key) ?? 0) + 1);
  await later(settings.latencyMs * (0.5 + Math.random()));
  const known = state.deliveries.get(key);
  if (known) {
    state.outcomes.replayed += 1;
    return json(res, 200, { receiptId: known.receiptId, deliveredAt: known.deliveredAt, replayed: true });
  }
  const draw = Math.random();
  if (draw < settings.errorRate) {
    state.outcomes.unavailable += 1;
    return json(res, 503, { error: 'temporarily unavailable' });
  }
  if (draw < settings.errorRate + settings.rateLimitRate) {
    state.outcomes.rateLimited += 1;
    return json(res, 429, { error: 'slow down' }, { 'retry-after': String(settings.retryAfterS) });
  }
  // Delivery is recorded before any await: two concurrent calls with one key deliver once.
  const delivery: Delivery = {
    receiptId: randomUUID(),
    deliveredAt: new Date().toISOString(),
    attempt: String(req.headers['x-attempt'] ?? '') || null,
  };
  state.deliveries.set(key, delivery);
  state.outcomes.delivered += 1;
  if (Math.random() < settings.timeoutRate) {
    state.outcomes.stalled += 1;
    await later(settings.stallMs);
  }
  if (!res.destroyed)
    json(res, 200, { receiptId: delivery.receiptId, deliveredAt: delivery.deliveredAt, replayed: false });
}

server.listen(settings.port, '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : settings.port;
  console.log(
    JSON.stringify({
      msg: 'receipt provider listening',
      url: `http://127.0.0.1:${port}`,
      settings: { ...settings, port },
    }),
  );
});
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
