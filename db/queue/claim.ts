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
 * Why a CTE: the locking SELECT with its LIMIT must run before the UPDATE and by itself. Put
 * as `UPDATE … WHERE id IN (SELECT … LIMIT n)` the planner may turn the subquery into a join
 * and re-evaluate it, locking or updating more rows than asked for; a CTE that locks rows is
 * always materialised once, so it is a fence.
 *
 * Why LATERAL per queue: the claim index is (queue, claim_at, id) WHERE ready. For each queue
 * asked for, the lateral subquery walks that index in claim order and stops after `limit`
 * rows, so a claim reads O(limit) index entries however many jobs wait. The outer ORDER BY
 * merges the queues' heads by the same aging key.
 *
 * Why `claim_at <= now()` as well as `run_at <= now()`: priorities are never negative, so a due
 * job always has claim_at <= run_at <= now(). The bound ends the index walk there, so jobs
 * scheduled for later are not read at all; the only not-yet-due rows the walk passes are those
 * with priority p due within p × aging_seconds, a bounded window.
 *
 * Why one lease token for the whole batch: the token only has to tell this claim's attempts
 * from every other claim's, and settlements are guarded by (job id, token), so one fresh token
 * per statement fences exactly as well as one per row, and a batch acknowledgement can name it
 * once.
 *
 * Why `j.ctid = ANY(ARRAY(SELECT ctid FROM candidate))` rather than a join or the id: the
 * candidates are locked by this statement, so nobody can move them and their row addresses
 * stay valid until the UPDATE; a TID scan reads them straight from their pages (a claim of
 * 1,000 spent 2.7 ms finding them again through the primary key, 0.5 ms by address). Joined
 * with the CTE, the planner may hash-join and scan every ready job instead. If a candidate
 * was changed by a transaction that committed after this statement's snapshot, the address
 * names a version the UPDATE does not see or that fails its recheck: the job is skipped and
 * stays ready for the next claim, never claimed twice (the row lock and the UPDATE's
 * visibility rules see to that).
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
import { autocommits, runText, sqlText, toDate, type Executor } from './executor';
import { CLAIM_COLUMNS, mapClaimedJob, qualified, type ClaimedJob } from './job';
import { nameSchema, parseInput, textSchema } from './validate';

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
export async function claim(executor: Executor, options: ClaimOptions): Promise<ClaimedJob[]> {
  // Prepared once per connection (one name per text): a claim is on the path from enqueue to
  // handler start, and planning it costs more than running it for a small batch.
  const { text, params, name, leaseToken, workerId } = claimQuery(options, executor);
  const rows = await runText(executor, text, params, name);
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

/**
 * The statement for candidates chosen by `candidates` ($1 the queue or queues, $2 the limit):
 * leases them under $3 (token) for $4 seconds to $5 (worker id). The candidates are locked
 * (while ready) until this statement's transaction ends, so the UPDATE needs no second look at
 * their state.
 */
function claimText(candidates: string, flush: boolean): string {
  return `
    WITH candidate AS (${candidates})
    UPDATE jobs j
    SET state = 'running',
        attempts = j.attempts + 1,
        lease_token = $3::uuid,
        lease_until = statement_timestamp() + make_interval(secs => $4::float8),
        worker_id = $5::text,
        started_at = statement_timestamp(),
        updated_at = statement_timestamp()
    WHERE j.ctid = ANY(ARRAY(SELECT ctid FROM candidate))${
      // An initplan, run once: SET LOCAL for this statement's own transaction (the only one it
      // is used in), read when it commits.
      flush ? '' : `\n      AND (SELECT set_config('synchronous_commit', 'off', true)) = 'off'`
    }
    RETURNING ${qualified(CLAIM_COLUMNS, 'j')}`;
}

/**
 * The two shapes as fixed texts, built once. Building the statement from a template on every
 * call cost about 0.2 ms on an idle worker (cold caches), on the path from enqueue to handler
 * start. One queue (the common case) needs no LATERAL: the walk of the claim index is the
 * whole plan, and its generic plan is as good as a custom one, so the prepared statement is
 * not planned again on every call.
 */
const ONE_QUEUE = `
      SELECT j.ctid
      FROM jobs j
      WHERE j.state = 'ready' AND j.queue = $1::text
        AND j.claim_at <= statement_timestamp() AND j.run_at <= statement_timestamp()
        AND NOT EXISTS (SELECT 1 FROM queues q WHERE q.name = $1::text AND q.paused)
      ORDER BY j.claim_at, j.id
      LIMIT $2::int
      FOR UPDATE SKIP LOCKED`;
const QUEUES = `
      SELECT c.ctid
      FROM (
        SELECT u.name FROM unnest($1::text[]) AS u(name)
        WHERE NOT EXISTS (SELECT 1 FROM queues q WHERE q.name = u.name AND q.paused)
      ) AS wanted
      CROSS JOIN LATERAL (
        SELECT j.ctid, j.id, j.claim_at
        FROM jobs j
        WHERE j.state = 'ready' AND j.queue = wanted.name
          AND j.claim_at <= statement_timestamp() AND j.run_at <= statement_timestamp()
        ORDER BY j.claim_at, j.id
        LIMIT $2::int
        FOR UPDATE SKIP LOCKED
      ) c
      ORDER BY c.claim_at, c.id
      LIMIT $2::int`;

/** The texts and their statement names, by shape and by whether the commit waits for its flush. */
const SHAPES = {
  oneQueue: {
    flush: { text: claimText(ONE_QUEUE, true), name: 'leasehold_claim_one_queue' },
    noFlush: { text: claimText(ONE_QUEUE, false), name: 'leasehold_claim_one_queue_async' },
  },
  queues: {
    flush: { text: claimText(QUEUES, true), name: 'leasehold_claim' },
    noFlush: { text: claimText(QUEUES, false), name: 'leasehold_claim_async' },
  },
};

/**
 * The options last validated, as given (queues copied) and as parsed. A worker claims with the
 * same ones every time; the same options again are not parsed again.
 */
let lastOptions: {
  given: ClaimOptions & { queues: string[] };
  parsed: { wanted: string[]; workerId: string; limit: number; leaseSeconds: number; asyncCommit: boolean };
} | null = null;

function validOptions(options: ClaimOptions) {
  const last = lastOptions;
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
  const { queues, workerId, limit, leaseSeconds, asyncCommit } = parseInput('claim', claimOptionsSchema, options);
  const parsed = { wanted: [...new Set(queues)], workerId, limit, leaseSeconds, asyncCommit };
  lastOptions = { given: { ...options, queues: [...queues] }, parsed };
  return parsed;
}

/**
 * The claim's text, its parameters and the name it is prepared under (one per text). Without an
 * executor (EXPLAIN) the text is the one a pool would run for these options.
 */
function claimQuery(
  options: ClaimOptions,
  executor?: Executor,
): { text: string; params: unknown[]; name: string; leaseToken: string; workerId: string } {
  const { wanted, workerId, limit, leaseSeconds, asyncCommit } = validOptions(options);
  const leaseToken = randomUUID();
  const tail = [limit, leaseToken, leaseSeconds, workerId];
  // Only a statement that is its own transaction may decide how that transaction commits.
  const flush = !asyncCommit || (executor !== undefined && !autocommits(executor));
  const one = wanted.length === 1;
  const { text, name } = (one ? SHAPES.oneQueue : SHAPES.queues)[flush ? 'flush' : 'noFlush'];
  return { text, params: [one ? wanted[0] : wanted, ...tail], name, leaseToken, workerId };
}
