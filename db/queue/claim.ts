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
 *
 * A claim loop's lower bound (ClaimBound, kept in the claimer's own ClaimOptionsCache when it
 * asks for one: the worker's producer does): each walk of a queue, or of an arm (queue, kind,
 * version), starts strictly after the last key (claim_at, id) this claimer took from it, so a
 * held horizon's dead index entries behind it are never read again (docs/performance.md). Jobs
 * made ready behind the bound (a higher priority, a retry, a job whose run_at came due) are
 * found when the walk starts from the head again: after a claim that came back short (the walk
 * reached the end), at least every `restartMs` (1 s) since the last start from the head, and
 * when the claimer says so (the worker, on a wake-up for the queue), but never sooner than
 * HEAD_WALK_GAP times the last walk from the head took after it. The price is in
 * docs/contract.md §5: such a job may wait up to `restartMs` (or that gap) more. A claim without a cache, or
 * with a cache without a bound, runs today's texts, byte for byte.
 */
import { randomUUID } from 'node:crypto';
import type { SQL } from 'drizzle-orm';
import { z } from 'zod';
import { autocommits, inPoolTransaction, ownPool, runText, sqlText, toDate, type Executor } from './executor.ts';
import { mapClaimedJob, type BoundedClaimColumnsRow, type ClaimedJob } from './job.ts';
import { LeaseholdInputError } from './errors.ts';
import { claimText, groupedClaimText, limitedClaimText, type ClaimShape } from './transitions.ts';
import { lockGroupLimits } from './group-limits.ts';
import { limitKeySchema, lockLimits, MAX_CLAIM_LIMITS } from './limits.ts';
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
  /**
   * The concurrency limits the jobs of this claim count toward (`queue:NAME`, `kind:NAME`,
   * `resource:NAME`; db/queue/limits.ts): the claim takes no more than they leave, and its
   * lease rows name them. A limited claim is a transaction of its own (it locks the limits'
   * rows, then claims) unless the executor is already one.
   */
  limits: z.array(limitKeySchema).min(1).max(MAX_CLAIM_LIMITS).optional(),
  /**
   * Claim grouped jobs (a group key given at enqueue) instead of ungrouped ones: the groups of
   * each queue and kind version in turns, least recently served first (docs/flow-control.md,
   * "Fair groups"; transitions/claim-grouped.ts). A claim takes one or the other, never both.
   */
  grouped: z.boolean().default(false),
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
  const parsed = cache ? cache.parse(options) : parseClaimOptions(options);
  // A grouped claim looks for its queues' group limits (locking them) unless its claimer saw
  // none a moment ago: then its statement, which leaves limited queues out, is all it runs.
  const probe = isGrouped(parsed.shape) && (cache?.groupLimitsDue() ?? true);
  const pool = parsed.limits || probe ? ownPool(executor) : null;
  if (pool) return inPoolTransaction(pool, (tx) => claimParsed(tx, parsed, cache, { own: true, probe }));
  return claimParsed(executor, parsed, cache, { own: false, probe });
}

/**
 * claim() once its options are parsed; a limited or grouped claim's executor is its transaction
 * (`own`: one claim() began for itself, whose commit the claim may make asynchronous).
 */
async function claimParsed(
  executor: Executor,
  parsed: ParsedClaimOptions,
  cache: ClaimOptionsCache | undefined,
  how: { own: boolean; probe: boolean },
): Promise<ClaimedJob[]> {
  if (parsed.limits) await lockLimits(executor, parsed.limits);
  // A grouped claim locks its queues' group limits first (the queues that have some).
  const locked = how.probe ? await lockGroupLimits(executor, parsed.queues) : [];
  if (how.probe) cache?.groupLimitsSeen(locked.length > 0);
  const { text, params, name, leaseToken, workerId, walk } = claimQuery(parsed, executor, cache, {
    own: how.own,
    locked,
  });
  // claim_key is there only in the bounded texts (those of a claim with a walk).
  const rows = await runText<BoundedClaimColumnsRow>(executor, text, params, name);
  walk?.finish(rows);
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
export function claimStatement(options: ClaimOptions, cache?: ClaimOptionsCache): SQL {
  // With a bounded cache: the text its next claim would run, the bound left as it is.
  const { text, params } = claimQuery(cache ? cache.parse(options) : parseClaimOptions(options), undefined, cache, {
    own: false,
    locked: [],
  });
  return sqlText(text, params);
}

const NAMES: Record<ClaimShape, string> = {
  one: 'leasehold_claim_one_queue',
  many: 'leasehold_claim',
  kind: 'leasehold_claim_one_kind',
  kinds: 'leasehold_claim_kinds',
};

type Texts = Record<'flush' | 'noFlush', { text: string; name: string }>;

/**
 * The texts and their statement names, by shape, by whether the walk starts after a bound
 * (`after`, the bounded texts: `…_after`) and by whether the commit waits for its flush.
 */
const SHAPES = Object.fromEntries(
  (Object.keys(NAMES) as ClaimShape[]).map((shape) => {
    const texts = (after: boolean): Texts => {
      const name = after ? `${NAMES[shape]}_after` : NAMES[shape];
      return {
        flush: { text: claimText(shape, true, after), name },
        noFlush: { text: claimText(shape, false, after), name: `${name}_async` },
      };
    };
    return [shape, { head: texts(false), after: texts(true) }];
  }),
) as Record<ClaimShape, Record<'head' | 'after', Texts>>;

type ParsedClaimOptions = {
  shape: ClaimShape | GroupedShape;
  /** The parameters before and after the four of every shape ($2–$5). */
  head: unknown;
  tail: unknown[];
  /** The walks, in the order of the shape's parameters: a queue each (any kind) or an arm each. */
  walks: Walk[];
  workerId: string;
  limit: number;
  leaseSeconds: number;
  asyncCommit: boolean;
  /** The limit keys, sorted and distinct (a limited claim), or undefined. */
  limits: string[] | undefined;
  /** The queues, distinct. */
  queues: string[];
};

/** The grouped claim's shapes: with the worker's arms, or every arm of the queues (no `kinds`). */
type GroupedShape = 'grouped' | 'groupedAny';

/** A grouped shape's texts, by whether a queue of the claim has group limits (`limited`). */
function groupedTexts(arms: 'given' | 'any', base: string): Record<'plain' | 'limited', Texts> {
  const texts = (limited: boolean): Texts => {
    const name = limited ? `${base}_group_limited` : base;
    return {
      flush: { text: groupedClaimText(arms, true, limited), name },
      noFlush: { text: groupedClaimText(arms, false, limited), name: `${name}_async` },
    };
  };
  return { plain: texts(false), limited: texts(true) };
}

const GROUPED: Record<GroupedShape, Record<'plain' | 'limited', Texts>> = {
  grouped: groupedTexts('given', 'leasehold_claim_grouped'),
  groupedAny: groupedTexts('any', 'leasehold_claim_grouped_any'),
};

const isGrouped = (shape: ClaimShape | GroupedShape): shape is GroupedShape => shape in GROUPED;

function parseClaimOptions(options: ClaimOptions): ParsedClaimOptions {
  const { queues, workerId, limit, leaseSeconds, asyncCommit, kinds, limits, grouped } = parseInput(
    'claim',
    claimOptionsSchema,
    options,
  );
  const wanted = [...new Set(queues)];
  const common = {
    workerId,
    limit,
    leaseSeconds,
    asyncCommit,
    limits: limits ? [...new Set(limits)].sort() : undefined,
    queues: wanted,
  };
  if (!kinds && grouped) return { ...common, shape: 'groupedAny', head: wanted, tail: [], walks: [] };
  if (!kinds) {
    const one = wanted.length === 1;
    const walks = wanted.map((queue) => ({ queue, key: queue }));
    return { ...common, shape: one ? 'one' : 'many', head: one ? wanted[0] : wanted, tail: [], walks };
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
  if (grouped) {
    const tail = [arms.map((a) => a.kind), arms.map((a) => a.version)];
    return { ...common, shape: 'grouped', head: arms.map((a) => a.queue), tail, walks: [] };
  }
  const walks = arms.map((a) => ({ queue: a.queue, key: armKey(a.queue, a.kind, a.version) }));
  if (arms.length === 1) {
    const [arm] = arms as [{ queue: string; kind: string; version: number }];
    return { ...common, shape: 'kind', head: arm.queue, tail: [arm.kind, arm.version], walks };
  }
  return {
    ...common,
    shape: 'kinds',
    head: arms.map((a) => a.queue),
    tail: [arms.map((a) => a.kind), arms.map((a) => a.version)],
    walks,
  };
}

/** One walk of a claim: a queue (any kind) or an arm (queue, kind, version), and its bound's key. */
type Walk = { queue: string; key: string };

const armKey = (queue: string, kind: string, version: number) => `${queue}\u0000${kind}\u0000${version}`;

/** A key of the claim order, (claim_at as text, id): the bounded texts' walks start after one. */
type ClaimKey = { at: string; id: string };

/** Before every key: the start of a walk from the head, in the bounded texts. */
const HEAD: ClaimKey = { at: '-infinity', id: '00000000-0000-0000-0000-000000000000' };

/**
 * A grouped claimer whose queues had no group limits looks again at least this often (ms): a
 * queue's first group limit reaches its grouped jobs within this, and its jobs wait meanwhile.
 */
export const GROUP_LIMITS_RECHECK_MS = 1000;

/** Walks start from the head at least this often (ms): docs/contract.md §5's added term. */
export const CLAIM_RESTART_MS = 1000;

/**
 * A claimer's walks from the head are spaced by at least this many times the last one's
 * duration (whatever asks for them: the restart interval, a wake-up, a short claim), so they
 * take at most a tenth of its time. A walk from the head is a few milliseconds, which this
 * never delays; under a held horizon it reads every index entry of the rows claimed since the
 * horizon was taken, and it grows with them (docs/performance.md, "Steady backlog"): then the
 * restarts space out instead of taking every claim's place.
 */
export const HEAD_WALK_GAP = 9;

export interface ClaimBoundOptions {
  /** Start every walk from the head at least this often (ms; default CLAIM_RESTART_MS). */
  restartMs?: number;
  /** A monotonic clock in ms (tests pass their own; default performance.now). */
  now?: () => number;
}

/**
 * One claim's use of the bound. A bounded claimer always runs the bounded texts (they return
 * the keys taken); a walk from the head starts after HEAD.
 */
interface BoundedWalk {
  /** The parameters after the shape's own: the keys its walks start after. */
  params: unknown[];
  /** Records the last key taken per walk, or forgets them all when the claim came back short. */
  finish(rows: readonly BoundedClaimColumnsRow[]): void;
}

/**
 * A claim loop's lower bound: per walk (a queue, or an arm of the kind shapes), the last key
 * (claim_at, id) this claimer took and when that walk last started from the head. Kept by one
 * claimer (a worker's producer, through its ClaimOptionsCache), never shared: another claimer's
 * keys say nothing about what this one has passed. Module notes: the header.
 *
 * Why the largest key taken is a safe start: every ready row of the walk before it was taken by
 * this claim or an earlier one of the chain, was locked by another claim (SKIP LOCKED), or was
 * made ready after the walk passed its place; only the last two are left behind, and the next
 * start from the head finds them. The statement says which key is each walk's largest (the
 * bounded texts' `claim_key`); the claimer keeps it as text and sends it back.
 */
class ClaimBound {
  private readonly walks = new Map<string, ClaimKey & { queue: string; since: number }>();
  /** Raised each time resets are done: a claim in flight across that must not bring its keys back. */
  private resets = 0;
  /** Resets asked for and not yet done (`null`: every walk): done once a walk from the head may start. */
  private readonly pending = new Set<string | null>();
  /** The last claim that walked from the head: when it came back, and how long it took (ms). */
  private lastHead = { endedAt: Number.NEGATIVE_INFINITY, ms: 0 };

  constructor(
    private readonly restartMs: number,
    private readonly now: () => number,
  ) {}

  /**
   * Forgets the keys of `queue`'s walks (of every walk without it): they start from the head,
   * at once, or once the last walk from the head is HEAD_WALK_GAP of its durations behind.
   */
  reset(queue?: string): void {
    this.pending.add(queue ?? null);
  }

  /** Whether a walk from the head may start at `at` (HEAD_WALK_GAP). */
  private headAllowed(at: number): boolean {
    return at - this.lastHead.endedAt >= HEAD_WALK_GAP * this.lastHead.ms;
  }

  private applyResets(): void {
    this.resets += 1;
    if (this.pending.has(null)) this.walks.clear();
    else for (const [key, walk] of this.walks) if (this.pending.has(walk.queue)) this.walks.delete(key);
    this.pending.clear();
  }

  /** Where the next claim's walks start, and what it records when it comes back. */
  plan(parsed: ParsedClaimOptions): BoundedWalk {
    const at = this.now();
    const headAllowed = this.headAllowed(at);
    if (headAllowed && this.pending.size > 0) this.applyResets();
    const resets = this.resets;
    // Per walk: the key it starts after (with the time its chain started from the head), or null.
    const starts = parsed.walks.map(({ key }) => {
      const walk = this.walks.get(key);
      return walk && (at - walk.since < this.restartMs || !headAllowed) ? walk : null;
    });
    const fromHead = starts.some((start) => start === null);
    const keys = starts.map((start) => start ?? HEAD);
    const single = parsed.shape === 'one' || parsed.shape === 'kind';
    return {
      params: single ? [keys[0]!.at, keys[0]!.id] : [keys.map((k) => k.at), keys.map((k) => k.id)],
      finish: (rows) => {
        if (fromHead) {
          const endedAt = this.now();
          this.lastHead = { endedAt, ms: endedAt - at };
        }
        if (rows.length < parsed.limit) {
          // The walks reached their ends: the next one starts from the head, whatever it passed.
          this.reset();
          return;
        }
        if (this.resets !== resets) return; // resets done while this claim ran: from the head next time
        // One row per walk has its last key: the only walk's, or (several) the walk of the job's row.
        const last = new Map<string, ClaimKey>();
        for (const row of rows) {
          if (row.claim_key === null) continue;
          const walk =
            parsed.walks.length === 1
              ? parsed.walks[0]!.key
              : parsed.shape === 'kinds'
                ? armKey(row.queue, row.kind, row.kind_version)
                : row.queue;
          last.set(walk, { at: row.claim_key, id: row.id });
        }
        parsed.walks.forEach((walk, i) => {
          const taken = last.get(walk.key);
          if (taken) this.walks.set(walk.key, { ...taken, queue: walk.queue, since: starts[i]?.since ?? at });
        });
      },
    };
  }
}

/**
 * The options a caller last claimed with, as given (queues copied) and as parsed. A worker
 * claims with the same ones every time; it keeps one of these (its own, not the process's) so
 * the same options again are not parsed again.
 *
 * With `bound` it also keeps the claimer's lower bound (ClaimBound; the header says what it
 * changes): its claims run the bounded texts, and `restartFromHead` sends a queue's walks back
 * to the head.
 */
export class ClaimOptionsCache {
  private last: { given: ClaimOptions & { queues: string[] }; parsed: ParsedClaimOptions } | null = null;
  /** @internal */
  readonly bound: ClaimBound | null;

  constructor(options: { bound?: boolean | ClaimBoundOptions } = {}) {
    const { bound } = options;
    const settings = typeof bound === 'object' ? bound : {};
    this.clock = settings.now ?? (() => performance.now());
    this.bound = bound
      ? new ClaimBound(settings.restartMs ?? CLAIM_RESTART_MS, settings.now ?? (() => performance.now()))
      : null;
  }

  /** When this claimer's grouped claims last found no group limits on their queues (ms; -∞: never). */
  private unlimitedSince = Number.NEGATIVE_INFINITY;
  private limitedSeen = false;
  private readonly clock: () => number;

  /**
   * Whether the next grouped claim must look for group limits (and lock them): always while its
   * queues have some, else once every GROUP_LIMITS_RECHECK_MS. Meanwhile its text leaves out
   * any queue that has group limits (transitions/claim-grouped.ts), so a limit set since is never
   * passed, only waited for (its queue's grouped jobs wait for the next look).
   */
  groupLimitsDue(): boolean {
    return this.clock() - this.unlimitedSince >= GROUP_LIMITS_RECHECK_MS;
  }

  /** Records what a grouped claim's look found. */
  groupLimitsSeen(limited: boolean): void {
    this.unlimitedSince = limited ? Number.NEGATIVE_INFINITY : this.clock();
    this.limitedSeen = limited;
  }

  /** Whether this claimer's last look found group limits on its queues. */
  get groupLimited(): boolean {
    return this.limitedSeen;
  }

  /**
   * The next claim's walks of `queue` (of every queue without it) start from the head: a job
   * may have been made ready behind the bound (the worker calls it on a wake-up). Without a
   * bound, nothing to do.
   */
  restartFromHead(queue?: string): void {
    this.bound?.reset(queue);
  }

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
      options.limits === last.given.limits &&
      options.grouped === last.given.grouped &&
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
  parsed: ParsedClaimOptions,
  executor: Executor | undefined,
  cache: ClaimOptionsCache | undefined,
  how: { own: boolean; locked: readonly string[] },
): {
  text: string;
  params: unknown[];
  name: string;
  leaseToken: string;
  workerId: string;
  walk: BoundedWalk | undefined;
} {
  const { shape, head, tail, workerId, limit, leaseSeconds, asyncCommit } = parsed;
  // The grouped claim walks from each group's head: a group's ready rows are few to each claim.
  const walk = isGrouped(shape) ? undefined : cache?.bound?.plan(parsed);
  const leaseToken = randomUUID();
  // Only a statement that is its own transaction may decide how that transaction commits.
  const flush = !asyncCommit || (executor !== undefined && !autocommits(executor) && !how.own);
  const chosen = (
    isGrouped(shape)
      ? GROUPED[shape][how.locked.length > 0 ? 'limited' : 'plain']
      : SHAPES[shape][walk ? 'after' : 'head']
  )[flush ? 'flush' : 'noFlush'];
  // A grouped claim with group limits: the queues it locked, last of its own (LOCKED_PARAM).
  const locked = how.locked.length > 0 ? [[...how.locked]] : [];
  const params = [head, limit, leaseToken, leaseSeconds, workerId, ...tail, ...(walk?.params ?? []), ...locked];
  if (!parsed.limits) return { ...chosen, params, leaseToken, workerId, walk };
  // A limited claim: the same text with its limit capped and its lease rows naming the limits.
  const text = limitedText(chosen.text, params.length + 1);
  return { text, params: [...params, parsed.limits], name: `${chosen.name}_limited`, leaseToken, workerId, walk };
}

const LIMITED_TEXTS = new Map<string, string>();

/** limitedClaimText, once per text (a worker runs the same few). */
function limitedText(text: string, keysParam: number): string {
  let limited = LIMITED_TEXTS.get(text);
  if (limited === undefined) {
    limited = limitedClaimText(text, keysParam);
    LIMITED_TEXTS.set(text, limited);
  }
  return limited;
}
