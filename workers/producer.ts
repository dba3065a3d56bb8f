/**
 * The producer: claims jobs for the worker's free slots and starts an attempt for each.
 *
 * Invariants:
 * - at most `concurrency` handlers run at once, and a claim asks only for free slots (and at
 *   most `batchSize`); a slot is freed only when its attempt's run (execution and settlement)
 *   is over and its handler's promise has settled. A stopped attempt (timeout, lease lost,
 *   shutdown) settles at once, but a handler deaf to its signal keeps its slot until it ends,
 *   or until `abandonAfterMs` after the stop: then it is counted as abandoned and its slot
 *   freed (the bound on zombies is the concurrency, not their number);
 * - one process never runs two executions of one job: a claimed job whose earlier execution
 *   still runs here (a zombie not yet abandoned) is handed straight back, `ready` again after
 *   HELD_BACK_DELAY_MS and not charged to its attempts;
 * - claims run one at a time, on the claim connection the worker gives it;
 * - a wake-up (a NOTIFY, a freed slot) is never lost: one that arrives while a claim runs
 *   starts another claim, because the running one's snapshot may predate the job;
 * - after `stop()` nothing more is claimed, and jobs whose claim was in flight then are handed
 *   straight back;
 * - its claims keep a lower bound (db/queue/claim.ts): each walks on from the last key it took,
 *   and from the head again after a short claim, every second, and on a wake-up for the queue,
 *   such walks spaced by nine times the last one's duration (HEAD_WALK_GAP);
 * - a claim that failed may have committed with its answer lost: the worker's lease keeper then
 *   detaches claims none of its attempts came from (LeaseKeeper.claimFailed);
 * - it claims only the kind versions its handlers run (claim's `kinds`): a job of another kind
 *   or version waits for a worker that runs it, rather than failing here (maintenance ends it
 *   `dead` after the grace period if none comes). A worker without handlers claims nothing;
 * - a queue with a limit (`queueLimits`) is claimed alone, in claims that count toward
 *   `queue:NAME` besides their kind's or resource's limit (claimGroups); the other queues are
 *   claimed as they are without one;
 * - each claim has a twin for grouped jobs (the same kinds and limits, `grouped`: the groups in
 *   turns, db/queue/transitions/claim-grouped.ts); the ungrouped claims go first in one round,
 *   the grouped ones in the next. Grouped claims run only where grouped jobs were found (a
 *   grouped enqueue's wake-up, the registry refresh); one that came back empty rests most of a
 *   poll interval.
 */
import type { Logger } from 'pino';
import {
  claim,
  limitWaitMs,
  type ClaimBoundOptions,
  ClaimOptionsCache,
  type ClaimedJob,
  type ClaimOptions,
  limitKey,
} from '../db/queue/index.ts';
import type { Db } from '../db/client.ts';
import { Attempt, leaseDeadlineFrom } from './attempt.ts';
import type { Failpoints } from './failpoints.ts';
import { handlerLimitKey, type HandlerRegistry } from './handler.ts';
import type { QueueLimit } from './queue-limits.ts';
import type { WorkerMetrics } from './metrics.ts';
import { backoff, sleep } from './timing.ts';

/**
 * The queues a worker serves when it is given none: its handlers' default queues, and
 * `default` (where a job goes when its producer names no queue). The claim takes only the
 * handlers' kinds, so serving `default` too never takes another kind's job.
 */
export function handlerQueues(registry: HandlerRegistry): string[] {
  return [...new Set(['default', ...registry.registrations().map((r) => r.defaultQueue)])].sort();
}

/** One claim of each round: its queues, the kind versions it takes, and the limits its jobs count toward. */
export interface ClaimGroup {
  queues: string[];
  kinds: NonNullable<ClaimOptions['kinds']>;
  limits?: string[];
}

/**
 * The claims each round makes for a registry's handlers. For the queues without a limit: one of
 * the kinds without a limit, then one per limit key (a kind's own, or a resource several kinds
 * share) with the kinds that count toward it, which takes no more than the limit leaves
 * (db/queue/limits.ts). For each queue of `queueLimits` (one the worker serves), the same claims
 * again of that queue alone, each counting toward `queue:NAME` too: the tightest of its limits
 * wins. None without handlers. Without queue limits the claims are those of before, queues and all.
 */
export function claimGroups(
  registry: HandlerRegistry,
  queues: readonly string[],
  queueLimits: Readonly<Record<string, unknown>> = {},
): ClaimGroup[] {
  const byKey = new Map<string | undefined, NonNullable<ClaimOptions['kinds']>>([[undefined, []]]);
  for (const handler of registry.handlers()) {
    const key = handlerLimitKey(handler);
    byKey.set(key, [...(byKey.get(key) ?? []), { kind: handler.kind, versions: [...handler.versions] }]);
  }
  const groups = [...byKey].filter(([, kinds]) => kinds.length > 0);
  const limited = queues.filter((q) => Object.hasOwn(queueLimits, q));
  const unlimited = limited.length === 0 ? [...queues] : queues.filter((q) => !limited.includes(q));
  const of = (groupQueues: string[], queueKey?: string): ClaimGroup[] =>
    groups.map(([key, kinds]) => {
      const limits = [...(key === undefined ? [] : [key]), ...(queueKey === undefined ? [] : [queueKey])];
      return limits.length === 0 ? { queues: groupQueues, kinds } : { queues: groupQueues, kinds, limits };
    });
  return [
    ...(unlimited.length > 0 ? of(unlimited) : []),
    ...limited.flatMap((queue) => of([queue], limitKey('queue', queue))),
  ];
}

/** One claim the loop makes each round: the same options every time, its own bound. */
interface Claimer extends ClaimGroup {
  /** When its limits last said no rate or pause withholds a start (limitWaitMs), performance.now(). */
  noWaitAt?: number | undefined;
  /**
   * It claims grouped jobs (db/queue/transitions/claim-grouped.ts), while `active`: grouped jobs
   * were found in its queues (a grouped enqueue's wake-up, or the registry refresh, which also
   * ends it when they hold none), so a worker whose queues hold no grouped job sends no grouped
   * claim. One that came back empty rests until `restUntil` (most of a poll interval; a grouped
   * wake-up ends the rest), as an ungrouped claim waits for the next poll.
   */
  grouped?: boolean | undefined;
  active?: boolean | undefined;
  restUntil?: number | undefined;
  /** Its own: the same options parsed once, and each walk after the last key it took (db/queue/claim.ts). */
  cache: ClaimOptionsCache;
}

export interface ProducerSettings {
  workerId: string;
  /** The queues to serve; empty: the handlers' (handlerQueues). */
  queues: string[];
  /**
   * Limits of queues it serves, across every worker that declares them (workers/queue-limits.ts):
   * their jobs are claimed in claims of their own that count toward `queue:NAME` (claimGroups).
   */
  queueLimits?: Readonly<Record<string, QueueLimit>> | undefined;
  concurrency: number;
  leaseSeconds: number;
  /** Most jobs one claim asks for (never more than the free slots). */
  batchSize: number;
  pollMs: number;
  /** Claims commit without waiting for their WAL flush (db/queue/claim.ts, docs/contract.md §4). */
  asyncClaims: boolean;
  /**
   * How long after its stop a handler that ignores its signal keeps its slot before it is
   * abandoned (default DEFAULT_ABANDON_AFTER_MS).
   */
  abandonAfterMs?: number | undefined;
}

/** The abandon limit unless told otherwise: 30 s after the stop. */
export const DEFAULT_ABANDON_AFTER_MS = 30_000;
/**
 * How long a job handed back because its earlier execution still runs here waits before it is
 * due again: long enough not to spin on one worker, short against the retry backoff it came from.
 */
export const HELD_BACK_DELAY_MS = 1000;

/** @internal */
export interface ProducerDeps {
  registry: HandlerRegistry;
  /**
   * Hands back jobs that never start here: their claim was in flight at stop, or (with a delay
   * and a reason) an earlier execution of the job still runs in this process.
   */
  handBack: (jobs: readonly ClaimedJob[], options?: { delayMs: number; why: string }) => Promise<void>;
  /** A claim failed: it may have committed with its answer lost (LeaseKeeper.claimFailed). */
  claimFailed?: (() => void) | undefined;
  logger: Logger;
  metrics?: WorkerMetrics | undefined;
  failpoints?: Failpoints | undefined;
  /** Runs one attempt to its settlement; its slot is freed when this resolves. */
  run: (attempt: Attempt) => Promise<void>;
  /** The claims' lower bound's restart interval and clock (tests); default 1 s, performance.now. */
  claimBound?: ClaimBoundOptions | undefined;
}

/** @internal */
export class Producer {
  /**
   * Attempts whose run (execution and settlement) is not over. Attempts, not jobs: a job's
   * attempt claimed while an earlier one still settles is here only until it is handed back.
   */
  readonly inFlight = new Set<Attempt>();
  /** Stopped attempts already settled whose handler still runs: each keeps its slot (zombies). */
  readonly stoppedRunning = new Set<Attempt>();
  /** The job ids whose handler runs in this process, and the attempt running it (one per job). */
  private readonly executing = new Map<string, Attempt>();
  /** Slots taken: attempts in flight, and zombies not yet abandoned. */
  get taken(): number {
    return this.inFlight.size + this.stoppedRunning.size;
  }
  /** The claims of each round (claimGroups), each with its options made once (its cache compares them by identity). */
  private claimers: Claimer[] = [];
  /** Kinds under a limit of their own: a finished attempt of one frees a slot a limited claim may take. */
  private limitedKinds = new Set<string>();
  /** Queues under a limit: a finished attempt of one frees a slot of that queue's claims. */
  private limitedQueues = new Set<string>();
  /** Queues under a limit with a maximum: a finished attempt of one frees a slot of its claims. */
  private maxLimitedQueues = new Set<string>();
  /** Queue limits found since the last round, applied at the top of the next (limitQueues). */
  private pendingQueueLimits: { queue: string; max: boolean }[] | null = null;
  private readonly controller = new AbortController();
  private wakeUp: (() => void) | null = null;
  private wokenMeanwhile = false;
  /** The claim loop waits with every slot taken: a finishing attempt must wake it. */
  private waitingForSlot = false;
  private loop: Promise<void> = Promise.resolve();
  private drained: (() => void) | null = null;
  lastClaimAt: Date | null = null;
  /** Claim rounds so far: their parity orders the round's claims. */
  private rounds = 0;
  /** Queues where grouped jobs were found (groupsFound): a rebuilt twin starts active there. */
  private groupedQueues: string[] = [];

  constructor(
    private readonly settings: ProducerSettings,
    private readonly deps: ProducerDeps,
  ) {
    this.groupClaims(this.ownQueueLimits());
  }

  /** Its own `queueLimits` of the queues it serves, and whether each has a maximum. */
  private ownQueueLimits(): { queue: string; max: boolean }[] {
    return Object.entries(this.settings.queueLimits ?? {}).map(([queue, l]) => ({ queue, max: l.max !== undefined }));
  }

  /** (Re)builds the claims of each round for the queues under a limit (claimGroups). */
  private groupClaims(limited: readonly { queue: string; max: boolean }[]): void {
    const { settings, deps } = this;
    const served = limited.filter((l) => settings.queues.includes(l.queue));
    this.limitedQueues = new Set(served.map((l) => l.queue));
    this.maxLimitedQueues = new Set(served.filter((l) => l.max).map((l) => l.queue));
    const queueLimits = Object.fromEntries([...this.limitedQueues].map((q) => [q, true]));
    // Each claim of ungrouped jobs, and its twin for grouped ones (the same kinds and limits).
    this.claimers = claimGroups(deps.registry, settings.queues, queueLimits).flatMap((group) => [
      { ...group, cache: new ClaimOptionsCache({ bound: deps.claimBound ?? true }) },
      {
        ...group,
        grouped: true,
        active: this.groupedQueues.some((q) => group.queues.includes(q)),
        cache: new ClaimOptionsCache(),
      },
    ]);
    // A settled attempt frees a slot of a maximum, not a start of a rate: a rate-only limit's
    // next start is waited for by its time (limitWaitMs), not claimed for at every settlement.
    this.limitedKinds = new Set(
      deps.registry
        .handlers()
        .filter((h) => h.limit?.max !== undefined)
        .map((h) => h.kind),
    );
  }

  /**
   * The queues it serves that have a limit in the database (declared by any worker, this one's
   * `queueLimits` among them: db/queue/limits.ts, limitedQueues), read at start and at each
   * registry refresh: a queue limit another worker declared holds for this one's claims too,
   * from the next round on (a round under way finishes with the claims it began with). Its own
   * `queueLimits` always stay.
   */
  limitQueues(found: readonly { queue: string; max: boolean }[]): void {
    const byQueue = new Map([...found, ...this.ownQueueLimits()].map((l) => [l.queue, l]));
    const limited = [...byQueue.values()].filter((l) => this.settings.queues.includes(l.queue));
    const text = (ls: { queue: string; max: boolean }[]) =>
      ls
        .map((l) => `${l.queue}:${l.max}`)
        .sort()
        .join('\n');
    const now = [...this.limitedQueues].map((queue) => ({ queue, max: this.maxLimitedQueues.has(queue) }));
    if (text(limited) === text(now)) return;
    this.pendingQueueLimits = limited;
    this.wake();
  }

  /**
   * Grouped jobs wait in `queues`: all of the served queues that hold any (`refresh`: the
   * registry's answer, db/queue/groups.ts, groupedQueues), or one more (a grouped enqueue's
   * wake-up). Their grouped claims run from the next round on; after a refresh, only theirs.
   */
  groupsFound(queues: readonly string[], refresh = false): void {
    this.groupedQueues = refresh ? [...queues] : [...new Set([...this.groupedQueues, ...queues])];
    let woken = false;
    for (const claimer of this.claimers) {
      if (!claimer.grouped) continue;
      const found = claimer.queues.some((q) => queues.includes(q));
      if (found && (!claimer.active || !refresh)) {
        woken = woken || !claimer.active || (claimer.restUntil ?? 0) > performance.now();
        claimer.active = true;
        claimer.restUntil = undefined;
      } else if (!found && refresh) claimer.active = false;
    }
    if (woken) this.wake();
  }

  /** Starts the claim loop on `claimDb`: claims only, one at a time. */
  start(claimDb: Db): void {
    this.loop = this.claimLoop(claimDb);
  }

  /** No more claims; resolves once a claim in flight has started (or handed back) its jobs. */
  async stop(): Promise<void> {
    this.controller.abort();
    this.wake();
    await this.loop;
  }

  /** Wakes the claim loop (a notification, a free slot, a reconnect). */
  wake(): void {
    const resolve = this.wakeUp;
    this.wakeUp = null;
    if (resolve) resolve();
    else this.wokenMeanwhile = true; // a wake-up during a claim is not lost
  }

  /**
   * The next claim walks `queue` (every queue, for `*`) from the head: a job may have been made
   * ready behind the claims' lower bound (the worker calls it on a wake-up for the queue).
   */
  restartFromHead(queue: string): void {
    for (const claimer of this.claimers) claimer.cache.restartFromHead(queue === '*' ? undefined : queue);
  }

  /** Resolves when no attempt is in flight. */
  whenDrained(): Promise<void> {
    if (this.inFlight.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const previous = this.drained;
      this.drained = () => {
        previous?.();
        resolve();
      };
    });
  }

  private waitForWake(ms: number): Promise<void> {
    if (this.wokenMeanwhile) {
      this.wokenMeanwhile = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const signal = this.controller.signal;
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        // Once this wait is over, a wake-up must land in wokenMeanwhile, not in this callback.
        if (this.wakeUp === done) this.wakeUp = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.wakeUp = done;
    });
  }

  private async claimLoop(claimDb: Db): Promise<void> {
    const { logger } = this.deps;
    const s = this.settings;
    const { signal } = this.controller;
    let failures = 0;
    while (!signal.aborted) {
      if (this.pendingQueueLimits) {
        logger.info(
          { queueLimits: this.pendingQueueLimits },
          'queue limits found: their queues are claimed under them',
        );
        this.groupClaims(this.pendingQueueLimits);
        this.pendingQueueLimits = null;
      }
      // Each round: the unlimited claim, then each limited one, while slots are free. Another
      // round at once when one of them came back full: there may be more due right now.
      let full = false;
      let failed = false;
      // The soonest a limit that withheld a start by its rate or pause leaves one again.
      let limitWait: number | null = null;
      // Ungrouped claims first in one round, grouped ones first in the next: neither kind of
      // job can take every slot from the other (docs/flow-control.md, "Fair groups").
      this.rounds += 1;
      const order =
        this.rounds % 2 === 0
          ? this.claimers
          : [...this.claimers].sort((a, b) => Number(b.grouped) - Number(a.grouped));
      for (const claimer of order) {
        const free = s.concurrency - this.taken;
        if (free <= 0 || signal.aborted) break;
        if (claimer.grouped && (!claimer.active || (claimer.restUntil ?? 0) > performance.now())) continue;
        const limit = Math.min(free, s.batchSize);
        let jobs: ClaimedJob[];
        // A wake-up from before this claim is answered by it; one that arrives while it runs
        // (a NOTIFY for a job committed after its snapshot) must start another claim.
        this.wokenMeanwhile = false;
        // Read before the claim is sent: the lease it grants (statement_timestamp() + lease)
        // starts no earlier, so a slow claim cannot push the local deadline past the DB's.
        const sent = performance.now();
        const skippingGuard =
          claimer.limits || claimer.grouped ? undefined : this.deps.failpoints?.claimSkippingGuard();
        try {
          jobs = skippingGuard
            ? await skippingGuard(claimDb, {
                queues: claimer.queues,
                workerId: s.workerId,
                limit,
                leaseSeconds: s.leaseSeconds,
              })
            : await claim(
                claimDb,
                {
                  queues: claimer.queues,
                  workerId: s.workerId,
                  limit,
                  leaseSeconds: s.leaseSeconds,
                  asyncCommit: s.asyncClaims,
                  kinds: claimer.kinds,
                  ...(claimer.limits ? { limits: claimer.limits } : {}),
                  ...(claimer.grouped ? { grouped: true } : {}),
                },
                claimer.cache,
              );
          failures = 0;
        } catch (error) {
          this.deps.claimFailed?.();
          failures += 1;
          const delay = backoff(failures);
          logger.error({ err: error, retryInMs: delay }, 'claim failed; retrying');
          await sleep(delay, signal);
          failed = true;
          break;
        }
        this.lastClaimAt = new Date();
        if (signal.aborted) {
          // Stopped while the claim was in flight: hand these straight back.
          await this.deps.handBack(jobs);
          return;
        }
        if (jobs.length > 0) this.deps.failpoints?.hit('after_claim');
        for (const job of jobs) this.begin(job, sent);
        if (jobs.length === limit) full = true;
        // A grouped claim takes a share per group: short of its limit, more may still be due.
        if (claimer.grouped) {
          if (jobs.length > 0) full = true;
          else claimer.restUntil = performance.now() + 0.75 * s.pollMs;
        }
        // A limited claim that came back short may be held by a rate or a pause, which end at a
        // known time: claim again then, not at the next poll (one more statement). A claimer
        // whose limits withheld nothing by time is not asked again within a poll interval.
        if (claimer.limits && jobs.length < limit && performance.now() - (claimer.noWaitAt ?? -Infinity) > s.pollMs) {
          const wait = await limitWaitMs(claimDb, claimer.limits).catch(() => null);
          if (wait !== null) limitWait = Math.min(limitWait ?? wait, wait);
          claimer.noWaitAt = wait === null ? performance.now() : undefined;
        }
      }
      if (failed || full) continue;
      // Polling with jitter is the correctness path; wake-ups only make it prompt. A freed slot
      // wakes the loop only if it is waiting for one: with slots free, the last claim took
      // everything due, and a claim per finished job would find nothing (docs/performance.md).
      this.waitingForSlot = this.taken >= s.concurrency;
      const poll = s.pollMs * (0.8 + Math.random() * 0.4);
      await this.waitForWake(limitWait === null ? poll : Math.min(poll, limitWait + 1));
      this.waitingForSlot = false;
    }
  }

  private begin(job: ClaimedJob, claimSent: number): void {
    const { logger, metrics, registry } = this.deps;
    const earlier = this.executing.get(job.id);
    if (earlier) {
      this.holdBack(job, earlier);
      return;
    }
    const entry = new Attempt(
      job,
      registry.get(job.kind),
      leaseDeadlineFrom(claimSent, this.settings.leaseSeconds),
      logger,
    );
    this.inFlight.add(entry);
    this.executing.set(job.id, entry);
    metrics?.inFlight.inc();
    metrics?.claimed.inc({ queue: job.queue });
    if (job.attempt === 1 && job.startedAt) {
      const due = Math.max(job.createdAt.getTime(), job.runAt.getTime());
      metrics?.startDelay.observe({ queue: job.queue }, Math.max(0, job.startedAt.getTime() - due) / 1000);
    }
    this.deps.run(entry).then(
      () => this.settled(entry),
      (error: unknown) => {
        entry.log.error({ err: error }, 'attempt ended with an unexpected error; the lease will expire');
        this.settled(entry);
      },
    );
  }

  /**
   * The job's earlier execution still runs here (its attempt stopped, its handler deaf): the
   * new attempt must not start beside it. It is handed back rather than waited for: waiting
   * would hold a second slot and a lease doing nothing, perhaps for the whole abandon limit,
   * while handed back the job may run at once on another worker; a release is not charged to
   * the job's attempts (jobs.released). It takes no slot: the zombie already holds one.
   */
  private holdBack(job: ClaimedJob, earlier: Attempt): void {
    const { logger, metrics } = this.deps;
    metrics?.heldBack.inc({ queue: job.queue, kind: job.kind });
    logger.warn(
      { jobId: job.id, attempt: job.attempt, runningAttempt: earlier.job.attempt, retryInMs: HELD_BACK_DELAY_MS },
      'an earlier execution of this job still runs here: handing the new attempt back',
    );
    const why = `attempt ${earlier.job.attempt} of this job still runs here`;
    this.deps.handBack([job], { delayMs: HELD_BACK_DELAY_MS, why }).catch((error: unknown) => {
      logger.error({ err: error, jobId: job.id }, 'could not hand back the job; the lease will expire');
    });
  }

  /** The attempt's run is over; its slot is free once its handler is too (or abandoned). */
  private settled(entry: Attempt): void {
    this.inFlight.delete(entry);
    this.deps.metrics?.inFlight.dec();
    // Its limit has a slot again (once the settlement committed): a limited claim may take it.
    if (this.limitedKinds.has(entry.job.kind) || this.maxLimitedQueues.has(entry.job.queue)) this.wake();
    // So has its group, if its queue has group limits: its grouped claimer rests no longer.
    if (entry.job.group !== null) this.groupSlotFreed(entry.job.queue);
    if (!entry.handlerRunning) {
      this.release(entry);
      return;
    }
    // Stopped, settled, and the handler still going: it keeps its slot and its job's mark.
    const { metrics } = this.deps;
    const { job } = entry;
    this.stoppedRunning.add(entry);
    metrics?.stoppedRunning.inc();
    const limit = this.settings.abandonAfterMs ?? DEFAULT_ABANDON_AFTER_MS;
    const stoppedAt = entry.stopped ? entry.stoppedAt : performance.now();
    const left = Math.max(0, stoppedAt + limit - performance.now());
    const timer = setTimeout(() => {
      if (!this.stoppedRunning.has(entry)) return;
      metrics?.abandoned.inc({ queue: job.queue, kind: job.kind });
      // entry.log carries jobId, attempt, kind, queue and traceId.
      entry.log.warn(
        { stop: entry.stopped?.reason, abandonAfterMs: limit },
        'handler still running past the abandon limit after its stop: abandoning it and freeing its slot',
      );
      this.zombieOver(entry);
    }, left);
    timer.unref?.();
    void entry.whenHandlerSettled().then(() => {
      clearTimeout(timer);
      if (this.stoppedRunning.has(entry)) this.zombieOver(entry);
    });
    this.checkDrained();
  }

  private zombieOver(entry: Attempt): void {
    this.stoppedRunning.delete(entry);
    this.deps.metrics?.stoppedRunning.dec();
    this.release(entry);
  }

  /**
   * A grouped job of `queue` settled: a grouped claimer of that queue whose last look found
   * group limits (a claim that came back empty may have found its groups full) claims again now
   * rather than after its rest. Claimers of queues without group limits rest on: an empty claim
   * there meant nothing was due.
   */
  private groupSlotFreed(queue: string): void {
    let woken = false;
    for (const claimer of this.claimers) {
      if (!claimer.grouped || !claimer.active || !claimer.cache.groupLimited || !claimer.queues.includes(queue))
        continue;
      woken = woken || (claimer.restUntil ?? 0) > performance.now();
      claimer.restUntil = undefined;
    }
    if (woken) this.wake();
  }

  /** The attempt is over here: its job's mark is gone and its slot is free. */
  private release(entry: Attempt): void {
    if (this.executing.get(entry.job.id) === entry) this.executing.delete(entry.job.id);
    this.checkDrained();
    if (this.waitingForSlot) this.wake();
  }

  private checkDrained(): void {
    if (this.inFlight.size === 0) {
      const drained = this.drained;
      this.drained = null;
      drained?.();
    }
  }
}
