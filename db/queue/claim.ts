/**
 * Claim: one statement takes up to `limit` due jobs and leases them to one worker.
 *
 * Invariants:
 * - a job is handed to at most one attempt at a time: the candidate rows are locked
 *   `FOR UPDATE SKIP LOCKED` and the UPDATE only touches rows still `ready`;
 * - every claim is a new attempt (`attempts + 1`) with a fresh random lease token and a
 *   deadline in database time, committed before the handler starts;
 * - paused queues give nothing.
 *
 * The statement itself, and why it is shaped as it is (a CTE fence, a walk of the narrow
 * `ready_jobs` alone, rows taken by address, a HOT update of the jobs, one lease row per
 * queue), is in transitions.ts with every other statement that moves a job.
 *
 * Why one lease token for the whole batch: the token only has to tell this claim's attempts
 * from every other claim's, and settlements are guarded by (job id, token), so one fresh token
 * per statement fences exactly as well as one per row, and a batch acknowledgement can name it
 * once.
 *
 * `asyncCommit` (off by default; the worker's `--async-claims`): a claim that is its own
 * transaction commits without waiting for its WAL flush (SET LOCAL synchronous_commit = off, as
 * an initplan of the UPDATE); inside the caller's transaction the flag is ignored. What that
 * gives and gives up, a database crash undoing the claim: docs/contract.md §4.
 *
 * Time is statement_timestamp(), not now(): the same inside a caller's transaction as outside.
 */
import { randomUUID } from 'node:crypto';
import type { SQL } from 'drizzle-orm';
import { z } from 'zod';
import { autocommits, runText, sqlText, toDate, type Executor } from './executor.ts';
import { mapClaimedJob, type ClaimColumnsRow, type ClaimedJob } from './job.ts';
import { claimText } from './transitions.ts';
import { nameSchema, parseInput, textSchema } from './validate.ts';

export const MAX_CLAIM_BATCH = 1000;

const claimOptionsSchema = z.strictObject({
  queues: z.array(nameSchema).min(1).max(100),
  workerId: textSchema(200).pipe(z.string().min(1)),
  limit: z.int().min(1).max(MAX_CLAIM_BATCH).default(1),
  leaseSeconds: z
    .number()
    .min(1)
    .max(24 * 3600)
    .default(60),
  /** Commit without waiting for the WAL flush (docs/contract.md §4); ignored in the caller's transaction. */
  asyncCommit: z.boolean().default(false),
});

export type ClaimOptions = z.input<typeof claimOptionsSchema>;

/**
 * Leases up to `limit` due jobs from `queues`. An empty result means nothing eligible and
 * unlocked right now, not that the queues are empty. Run it outside a long transaction: the
 * lease must be committed before the handler's work begins.
 */
export async function claim(
  executor: Executor,
  options: ClaimOptions,
  cache?: ClaimOptionsCache,
): Promise<ClaimedJob[]> {
  // Prepared once per connection (one name per text): a claim is on the path from enqueue to
  // handler start, and planning it costs more than running it for a small batch.
  const { text, params, name, leaseToken, workerId } = claimQuery(options, executor, cache);
  const rows = await runText<ClaimColumnsRow>(executor, text, params, name);
  if (rows.length === 0) return [];
  // One statement, one instant: every row has the same start and lease deadline.
  const instant = {
    leaseToken,
    workerId,
    startedAt: toDate(rows[0]!.started_at).getTime(),
    leaseUntil: toDate(rows[0]!.lease_until).getTime(),
  };
  return rows.map((row) => mapClaimedJob(row, instant));
}

/**
 * The claim statement itself (for EXPLAIN in tests and the benchmark): the text a pool runs for
 * these options, so with `asyncCommit` it sets synchronous_commit off wherever it is run.
 */
export function claimStatement(options: ClaimOptions): SQL {
  const { text, params } = claimQuery(options);
  return sqlText(text, params);
}

/** The texts and their statement names, by shape and by whether the commit waits for its flush. */
const SHAPES = {
  oneQueue: {
    flush: { text: claimText('one', true), name: 'leasehold_claim_one_queue' },
    noFlush: { text: claimText('one', false), name: 'leasehold_claim_one_queue_async' },
  },
  queues: {
    flush: { text: claimText('many', true), name: 'leasehold_claim' },
    noFlush: { text: claimText('many', false), name: 'leasehold_claim_async' },
  },
};

type ParsedClaimOptions = {
  wanted: string[];
  workerId: string;
  limit: number;
  leaseSeconds: number;
  asyncCommit: boolean;
};

function parseClaimOptions(options: ClaimOptions): ParsedClaimOptions {
  const { queues, workerId, limit, leaseSeconds, asyncCommit } = parseInput('claim', claimOptionsSchema, options);
  return { wanted: [...new Set(queues)], workerId, limit, leaseSeconds, asyncCommit };
}

/**
 * The options a caller last claimed with, as given (queues copied) and as parsed. A worker
 * claims with the same ones every time; it keeps one of these (its own, not the process's) so
 * the same options again are not parsed again.
 */
export class ClaimOptionsCache {
  private last: { given: ClaimOptions & { queues: string[] }; parsed: ParsedClaimOptions } | null = null;

  parse(options: ClaimOptions): ParsedClaimOptions {
    const last = this.last;
    if (
      last &&
      typeof options === 'object' &&
      options !== null &&
      options.workerId === last.given.workerId &&
      options.limit === last.given.limit &&
      options.leaseSeconds === last.given.leaseSeconds &&
      options.asyncCommit === last.given.asyncCommit &&
      Array.isArray(options.queues) &&
      options.queues.length === last.given.queues.length &&
      options.queues.every((q, i) => q === last.given.queues[i]) &&
      Object.keys(options).every((key) => Object.hasOwn(last.given, key))
    ) {
      return last.parsed;
    }
    const parsed = parseClaimOptions(options);
    this.last = { given: { ...options, queues: [...options.queues] }, parsed };
    return parsed;
  }
}

/**
 * The claim's text, its parameters and the name it is prepared under (one per text). Without an
 * executor (EXPLAIN) the text is the one a pool would run for these options.
 */
function claimQuery(
  options: ClaimOptions,
  executor?: Executor,
  cache?: ClaimOptionsCache,
): { text: string; params: unknown[]; name: string; leaseToken: string; workerId: string } {
  const { wanted, workerId, limit, leaseSeconds, asyncCommit } = cache
    ? cache.parse(options)
    : parseClaimOptions(options);
  const leaseToken = randomUUID();
  const tail = [limit, leaseToken, leaseSeconds, workerId];
  // Only a statement that is its own transaction may decide how that transaction commits.
  const flush = !asyncCommit || (executor !== undefined && !autocommits(executor));
  const one = wanted.length === 1;
  const { text, name } = (one ? SHAPES.oneQueue : SHAPES.queues)[flush ? 'flush' : 'noFlush'];
  return { text, params: [one ? wanted[0] : wanted, ...tail], name, leaseToken, workerId };
}
