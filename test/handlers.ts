/**
 * Handlers for tests that run real worker processes (`--handlers test/handlers.ts`).
 */
import { z } from 'zod';
import { defineHandler } from '../workers/handler.ts';

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });

export const handlers = [
  defineHandler({
    kind: 'test.sleep',
    versions: [1],
    schema: z.object({ ms: z.int().min(0) }),
    timeoutMs: 120_000,
    async handle({ payload, signal }) {
      await sleep(payload.ms, signal);
      return { slept: payload.ms };
    },
  }),
];
