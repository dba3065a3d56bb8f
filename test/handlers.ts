/**
 * Handlers for tests that run real worker processes (`--handlers test/handlers.ts`).
 */
import { z } from 'zod';
import { PermanentError } from '../workers/errors.ts';
import { defineHandler } from '../workers/handler.ts';
import { snooze } from '../workers/snooze.ts';

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
  // Snoozes `times` times for `ms` each (the attempt not spent), then completes:
  // e2e/tags-snooze.spec.ts shows the snoozed attempts in a job's history.
  defineHandler({
    kind: 'test.snooze',
    versions: [1],
    schema: z.object({ ms: z.int().min(1), times: z.int().min(0) }),
    timeoutMs: 10_000,
    async handle({ job, payload }) {
      if (job.snoozes < payload.times) return snooze(payload.ms);
      return { snoozes: job.snoozes };
    },
  }),
  // Reports progress(0.25, 'a quarter'), waits `stepMs`, reports progress(0.75, 'three
  // quarters'), waits `stepMs` again and returns a small result that quotes its payload's
  // customer, at the redacted path and in text: e2e/results-progress.spec.ts watches the job page's
  // bar move without a reload, then the result appear, masked as the payload is.
  defineHandler({
    kind: 'test.progress',
    versions: [1],
    schema: z.object({ stepMs: z.int().min(0).max(20_000), customer: z.object({ email: z.string() }) }),
    redact: ['customer.email'],
    timeoutMs: 60_000,
    async handle({ payload, signal, progress }) {
      progress(0.25, 'a quarter');
      await sleep(payload.stepMs, signal);
      progress(0.75, 'three quarters');
      await sleep(payload.stepMs, signal);
      const { email } = payload.customer;
      return { rows: 42, file: 'out.csv', customer: { email }, note: `sent to ${email}` };
    },
  }),
  // Echoes its payload, secrets and all, into its error, a cause and the stack, as a handler
  // that quotes a provider's refusal does: e2e/redaction.spec.ts checks none of it shows.
  defineHandler({
    kind: 'test.leak',
    versions: [1],
    schema: z.looseObject({ customer: z.object({ email: z.string() }), accessToken: z.string() }),
    redact: ['customer.email'],
    timeoutMs: 10_000,
    async handle({ payload }) {
      const echo = JSON.stringify(payload);
      const cause = new Error(
        `provider said 422 for ${payload.customer.email} (token ${payload.accessToken}): ${echo}`,
      );
      const error = new PermanentError(`provider refused ${payload.customer.email}: ${echo}`, { cause });
      error.stack = `PermanentError: ${error.message}\n    at send (/srv/${payload.accessToken}/${payload.customer.email}.js:1:1)`;
      throw error;
    },
  }),
];
