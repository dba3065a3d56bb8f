/**
 * Claim: one statement takes up to `limit` due jobs and leases them to one worker.
 *
 * Invariants:
 * - a job is handed to at most one attempt at a time: the candidate rows are locked
 *   `FOR UPDATE SKIP LOCKED` and the UPDATE only touches rows still `ready`;
 * - every claim is a new attempt (`attempts + 1`) with a fresh random lease token and a
 *   deadline in database time, committed before the handler starts;
 * - paused queues give nothing;
 * - with `kinds` (a worker passes its handlers'), only jobs of those kind versions are taken:
 *   a job of another kind or version stays `ready` for a worker that runs it, and the walk never
 *   reads it (a backlog of such jobs ahead costs the claim nothing).
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
import { LeaseholdInputError } from './errors.ts';
import { claimText, type ClaimShape } from './transitions.ts';
import { nameSchema, parseInput, textSchema } from './validate.ts';

export const MAX_CLAIM_BATCH = 1000;
/** Most (queue, kind version) pairs one claim walks: each is an index descent per claim. */
export const MAX_CLAIM_ARMS = 1000;

const claimKindSchema = z.strictObject({
  kind: nameSchema,
  versions: z.array(z.int().min(1).max(1_000_000)).min(1).max(1000),
});

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
  /**
   * Only jobs of these kinds and versions (a worker's handlers). Without it, every kind of the
   * queues (tests, tools): a worker must pass it, or it takes jobs it has no handler for.
   */
  kinds: z.array(claimKindSchema).min(1).max(10_000).optional(),
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
 *
 * @internal
 */
export function claimStatement(options: ClaimOptions): SQL {
  const { text, params } = claimQuery(options);
  return sqlText(text, params);
}

const NAMES: Record<ClaimShape, string> = {
  one: 'leasehold_claim_one_queue',
  many: 'leasehold_claim',
  kind: 'leasehold_claim_one_kind',
  kinds: 'leasehold_claim_kinds',
};

/** The texts and their statement names, by shape and by whether the commit waits for its flush. */
const SHAPES = Object.fromEntries(
  (Object.keys(NAMES) as ClaimShape[]).map((shape) => [
    shape,
    {
      flush: { text: claimText(shape, true), name: NAMES[shape] },
      noFlush: { text: claimText(shape, false), name: `${NAMES[shape]}_async` },
    },
  ]),
) as Record<ClaimShape, Record<'flush' | 'noFlush', { text: string; name: string }>>;

type ParsedClaimOptions = {
  shape: ClaimShape;
  /** The parameters before and after the four of every shape ($2–$5). */
  head: unknown;
  tail: unknown[];
  workerId: string;
  limit: number;
  leaseSeconds: number;
  asyncCommit: boolean;
};

function parseClaimOptions(options: ClaimOptions): ParsedClaimOptions {
  const { queues, workerId, limit, leaseSeconds, asyncCommit, kinds } = parseInput(
    'claim',
    claimOptionsSchema,
    options,
  );
  const wanted = [...new Set(queues)];
  const common = { workerId, limit, leaseSeconds, asyncCommit };
  if (!kinds) {
    const one = wanted.length === 1;
    return { ...common, shape: one ? 'one' : 'many', head: one ? wanted[0] : wanted, tail: [] };
  }
  // One arm per queue and kind version, in a stable order (the same options, the same text).
  const pairs = new Map<string, { kind: string; version: number }>();
  for (const { kind, versions } of kinds) {
    for (const version of versions) pairs.set(`${kind}\u0000${version}`, { kind, version });
  }
  const arms = wanted.flatMap((queue) => [...pairs.values()].map((p) => ({ queue, ...p })));
  if (arms.length > MAX_CLAIM_ARMS) {
    throw new LeaseholdInputError('claim', [
      `queues × kinds: ${wanted.length} queues × ${pairs.size} kind versions is ${arms.length} pairs; at most ${MAX_CLAIM_ARMS}`,
    ]);
  }
  if (arms.length === 1) {
    const [arm] = arms as [{ queue: string; kind: string; version: number }];
    return { ...common, shape: 'kind', head: arm.queue, tail: [arm.kind, arm.version] };
  }
  return {
    ...common,
    shape: 'kinds',
    head: arms.map((a) => a.queue),
    tail: [arms.map((a) => a.kind), arms.map((a) => a.version)],
  };
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
      // By identity: a worker passes the same (unchanged) array every time.
      options.kinds === last.given.kinds &&
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
  const { shape, head, tail, workerId, limit, leaseSeconds, asyncCommit } = cache
    ? cache.parse(options)
    : parseClaimOptions(options);
  const leaseToken = randomUUID();
  // Only a statement that is its own transaction may decide how that transaction commits.
  const flush = !asyncCommit || (executor !== undefined && !autocommits(executor));
  const { text, name } = SHAPES[shape][flush ? 'flush' : 'noFlush'];
  return { text, params: [head, limit, leaseToken, leaseSeconds, workerId, ...tail], name, leaseToken, workerId };
}
