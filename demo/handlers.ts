/**
 * The demo's handlers file (`--handlers demo/handlers.ts`; scripts/demo-handlers.ts names it
 * for npm start and npm run workers). It imports Leasehold only through `leasehold/worker`,
 * as a user's handlers file would.
 *
 * `receipt.send` (the seed's demo): send the receipt for one order through the receipt
 * provider, with the stable delivery key `receipt:<order_id>` on every attempt so that the
 * provider delivers once however often we call. The job's contract (kind, version, queue,
 * payload schema) is in demo/jobs.ts, which the enqueueing side imports instead of this.
 */
import {
  defineHandler,
  type Handler,
  PermanentError,
  RateLimitedError,
  TransientError,
  UnknownOutcomeError,
} from 'leasehold/worker';
import { receiptJob } from './jobs.ts';

const providerUrl = () => process.env.RECEIPT_PROVIDER_URL ?? 'http://127.0.0.1:4010';
const callTimeoutMs = () => Number(process.env.RECEIPT_CALL_TIMEOUT_MS ?? 2000);

export const receiptSend = defineHandler(
  receiptJob,
  async ({ payload, attempt, signal, receipt }) => {
    const key = `receipt:${payload.orderId}`;
    return receipt(async () => {
      // Our own timer rather than AbortSignal.any([signal, AbortSignal.timeout()]): on Node 20
      // the timeout signal inside any() can be garbage-collected and never fire.
      const call = new AbortController();
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        call.abort(new Error('call timeout'));
      }, callTimeoutMs());
      const forward = () => call.abort(signal.reason);
      signal.addEventListener('abort', forward, { once: true });
      let response: Response;
      let text: string;
      try {
        response = await fetch(`${providerUrl()}/receipts`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': key, 'x-attempt': String(attempt) },
          body: JSON.stringify(payload),
          signal: call.signal,
        });
        text = await response.text();
      } catch (error) {
        if (signal.aborted) throw error; // lease lost, cancelled or shutting down: settle nothing
        if (timedOut) {
          throw new UnknownOutcomeError(`receipt provider did not answer within ${callTimeoutMs()} ms`, {
            cause: error,
          });
        }
        throw new TransientError(`receipt provider unreachable: ${(error as Error).message}`, { cause: error });
      } finally {
        clearTimeout(timer);
        signal.removeEventListener('abort', forward);
      }
      if (response.status === 429) {
        // Seconds only (an HTTP date or a bad value falls back to backoff), at most a day.
        const header = response.headers.get('retry-after');
        const seconds = header !== null && /^\s*\d+(\.\d+)?\s*$/.test(header) ? Number(header) : null;
        throw new RateLimitedError(
          `receipt provider rate limited (429)`,
          seconds !== null ? { retryAfterMs: Math.min(seconds, 86_400) * 1000 } : {},
        );
      }
      if (response.status >= 500) throw new TransientError(`receipt provider answered ${response.status}`);
      if (!response.ok)
        throw new PermanentError(`receipt provider refused the receipt: ${response.status} ${text.slice(0, 200)}`);
      return JSON.parse(text) as { receiptId: string; deliveredAt: string };
    }, key);
  },
  {
    displayName: 'Order receipt',
    // The customer's address: viewers and operators see it masked; admins may reveal it (audited).
    redact: ['email'],
    // The provider honours the delivery key and receipt() returns a recorded result, so running
    // a delivered receipt again does not send a second one.
    rerunSafe: true,
    maxAttempts: 25,
    timeoutMs: 30_000,
  },
);

/** What the worker loads from this file: every handler of the demo. */
export const handlers: readonly Handler[] = [receiptSend];
