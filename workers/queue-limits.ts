/**
 * The workers' queue limits (the `queueLimits` setting, `--queue-limits`): at most `max` of a
 * queue's jobs hold a lease at once, and at most `rate.max` of them start in any `rate.perMs`
 * milliseconds, across every worker that declares it (db/queue/limits.ts, scope `queue`). A
 * worker declares its queue limits at start with its handlers' limits, and claims a limited
 * queue's jobs in claims of their own that count toward `queue:NAME` (workers/producer.ts,
 * claimGroups). This module reads them: the CLI's text (`emails=10,bulk=100/1s,imports=2+50/1m`),
 * createWorker's object, and what the worker declares of them.
 */
import { type LimitDeclaration, type LimitRate, MAX_LIMIT, MAX_RATE_INTERVAL_MS } from '../db/queue/index.ts';
import { parseRate } from '../db/queue/limit-rate.ts';
import { NAME_PATTERN } from '../db/queue/validate.ts';
import { describeValue } from './option-error.ts';

/** One queue's limit: a maximum of running attempts, a rate of starts, or both. */
export interface QueueLimit {
  max?: number | undefined;
  rate?: LimitRate | undefined;
}

/** The queue limits of a worker, by queue name. */
export type QueueLimits = Readonly<Record<string, QueueLimit>>;

const ENTRY_FORMAT = 'QUEUE=MAX, QUEUE=N/INTERVAL or QUEUE=MAX+N/INTERVAL (emails=10, bulk=100/1s, imports=2+50/1m)';

const isWhole = (text: string) => /^\d+$/.test(text) && Number(text) >= 1 && Number(text) <= MAX_LIMIT;

/**
 * `emails=10,bulk=100/1s,imports=2+50/1m` as queue limits, or the problems of its entries, one
 * sentence each, naming the entry.
 */
export function parseQueueLimitsText(text: string): { limits: Record<string, QueueLimit> } | { problems: string[] } {
  const limits: Record<string, QueueLimit> = {};
  const problems: string[] = [];
  for (const entry of text
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean)) {
    const said = JSON.stringify(entry);
    const equals = entry.indexOf('=');
    if (equals < 0) {
      problems.push(`${said}: expected ${ENTRY_FORMAT}`);
      continue;
    }
    const queue = entry.slice(0, equals).trim();
    const value = entry.slice(equals + 1).trim();
    if (!NAME_PATTERN.test(queue)) {
      problems.push(
        `${said}: ${JSON.stringify(queue)} is not a queue name (1-128 of A-Z a-z 0-9 _ . : -, starting with a letter or digit)`,
      );
      continue;
    }
    if (Object.hasOwn(limits, queue)) {
      problems.push(
        `${said}: the queue ${queue} has a limit already: give each queue one entry (MAX+N/INTERVAL for both)`,
      );
      continue;
    }
    const plus = value.indexOf('+');
    const maxText = plus >= 0 ? value.slice(0, plus) : value.includes('/') ? undefined : value;
    const rateText = plus >= 0 ? value.slice(plus + 1) : value.includes('/') ? value : undefined;
    const limit: QueueLimit = {};
    if (maxText !== undefined) {
      if (isWhole(maxText)) limit.max = Number(maxText);
      else
        problems.push(
          `${said}: the maximum must be a whole number from 1 to ${MAX_LIMIT}, not ${JSON.stringify(maxText)}`,
        );
    }
    if (rateText !== undefined) {
      const rate = parseRate(rateText, 'the rate');
      if (typeof rate === 'string') problems.push(`${said}: ${rate}`);
      else limit.rate = rate;
    }
    limits[queue] = limit;
  }
  return problems.length > 0 ? { problems } : { limits };
}

/** What is wrong with createWorker's `queueLimits` (the option's problems, each naming its path). */
export function queueLimitsOptionProblems(value: unknown): string[] {
  if (value === undefined) return [];
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return ['queueLimits: an object of queue names to { max?, rate?: { max, perMs } }, e.g. { emails: { max: 10 } }'];
  const problems: string[] = [];
  for (const [queue, limit] of Object.entries(value)) {
    const at = `queueLimits[${JSON.stringify(queue)}]`;
    if (!NAME_PATTERN.test(queue)) problems.push(`${at}: not a queue name`);
    if (typeof limit !== 'object' || limit === null || Array.isArray(limit)) {
      problems.push(`${at}: expected { max }, { rate: { max, perMs } } or both, got ${describeValue(limit)}`);
      continue;
    }
    const { max, rate, ...rest } = fields(limit);
    for (const key of Object.keys(rest)) problems.push(`${at}.${key}: not a field (max, rate)`);
    if (max === undefined && rate === undefined) problems.push(`${at}: give max, rate or both`);
    if (max !== undefined && !wholeIn(max, 1, MAX_LIMIT))
      problems.push(`${at}.max: must be a whole number from 1 to ${MAX_LIMIT}, got ${describeValue(max)}`);
    if (rate !== undefined && !isRate(rate))
      problems.push(
        `${at}.rate: must be { max, perMs }: max a whole number from 1 to ${MAX_LIMIT}, perMs from 1 to ${MAX_RATE_INTERVAL_MS} (a day), got ${describeValue(rate)}`,
      );
  }
  return problems;
}

/**
 * The queue limits naming a queue the worker does not serve, one sentence each (its claims
 * would never count toward them): `setting` names the setting as the caller knows it.
 */
export function unservedQueueLimits(
  limits: QueueLimits,
  queues: readonly string[],
  setting: { limits: string; queues: string },
): string[] {
  return Object.keys(limits)
    .filter((queue) => !queues.includes(queue))
    .map(
      (queue) =>
        `${setting.limits}: a limit for the queue ${queue}, which this worker does not serve (it serves ${queues.join(', ')}): serve it (${setting.queues}) or drop its limit`,
    );
}

/** A copy of good queue limits (queueLimitsOptionProblems found none), holding no object of the caller's. */
export function copyQueueLimits(limits: QueueLimits | undefined): Record<string, QueueLimit> {
  return Object.fromEntries(
    Object.entries(limits ?? {}).map(([queue, { max, rate }]) => [
      queue,
      {
        ...(max === undefined ? {} : { max }),
        ...(rate === undefined ? {} : { rate: { max: rate.max, perMs: rate.perMs } }),
      },
    ]),
  );
}

/** What a worker declares of its queue limits at start (declareLimits): scope `queue`, no kinds (every kind of the queue counts). */
export function queueLimitDeclarations(limits: QueueLimits | undefined): LimitDeclaration[] {
  return Object.entries(copyQueueLimits(limits)).map(
    ([name, limit]): LimitDeclaration => ({ scope: 'queue', name, ...limit }),
  );
}

/** An object's own fields, each of unknown type. */
function fields(value: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value));
}

function wholeIn(value: unknown, min: number, max: number): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
}

function isRate(value: unknown): value is LimitRate {
  if (typeof value !== 'object' || value === null) return false;
  const { max, perMs, ...rest } = fields(value);
  return Object.keys(rest).length === 0 && wholeIn(max, 1, MAX_LIMIT) && wholeIn(perMs, 1, MAX_RATE_INTERVAL_MS);
}
