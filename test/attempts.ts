/**
 * Attempts for the worker's service tests: real jobs, enqueued and claimed on the test
 * database, wrapped as the producer would wrap them, with handlers that do nothing.
 */
import pino from 'pino';
import { z } from 'zod';
import { claim, enqueue, type Executor } from '../db/queue/index.ts';
import { Attempt, leaseDeadlineFrom } from '../workers/attempt.ts';
import { defineHandler, type Handler } from '../workers/handler.ts';
import { uniqueQueue } from './factories.ts';

export const silentLogger = pino({ level: 'silent' });

/** A handler of `kind` that returns at once. */
export function idleHandler(kind: string, timeoutMs = 1000): Handler {
  return defineHandler({ kind, versions: [1], schema: z.object({}), timeoutMs, handle: async () => {} });
}

/** `count` jobs of `handler`'s kind on a queue of their own, claimed in one claim, as attempts. */
export async function claimedAttempts(
  db: Executor,
  count: number,
  options: { handler?: Handler; leaseSeconds?: number } = {},
): Promise<Attempt[]> {
  const { handler, leaseSeconds = 30 } = options;
  const queue = uniqueQueue('attempts');
  for (let i = 0; i < count; i++) await enqueue(db, { queue, kind: handler?.kind ?? 'noop' });
  const jobs = await claim(db, { queues: [queue], workerId: 'service-test', limit: count, leaseSeconds });
  if (jobs.length !== count) throw new Error(`claimed ${jobs.length} of ${count} jobs`);
  const deadline = leaseDeadlineFrom(performance.now(), leaseSeconds);
  return jobs.map((job) => new Attempt(job, handler, deadline, silentLogger));
}
