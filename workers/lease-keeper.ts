/**
 * The lease keeper: renews the leases of every running attempt at a third of the lease, and
 * stops attempts that must not go on — a heartbeat the queue refused (lease lost: expired,
 * reaped, cancelled), no heartbeat through before the lease surely ended, or a handler past
 * its timeout (one sweep for all attempts instead of a timer each).
 *
 * A heartbeat is one write for the whole worker: it renews the worker lease
 * (`leasehold.worker_leases`), which covers every claim this worker made since that lease
 * started, and reads (no write) whether each attempt's job still runs under its token. Only an
 * attempt whose claim is not covered (claimed before the worker lease started, or detached
 * because an attempt of that claim was given up unsettled) is renewed per job, as every
 * attempt was before (db/queue/transitions/settle.ts says when which applies).
 *
 * Invariants:
 * - a heartbeat never waits on another transaction's job row lock (the per-job statement skips
 *   locked rows and reports them `row_locked`: not renewed this round, not lost), so one
 *   foreign lock cannot let every other lease run out;
 * - each round has its own deadline (heartbeatRoundMs, well below the beat), so a half-open
 *   connection cannot hang the loop; the worker lease is renewed only while more than that
 *   deadline of it is left, so a renewal that comes back late never revives a lease that ended;
 * - before a claim is detached (an attempt of it given up unsettled: its job may still be
 *   running under the token, and nothing would end it while the worker lease lives), the other
 *   attempts of that claim are renewed per job, so they do not lose the lease with it;
 * - the lease-deadline check runs on the sweep's timer, not after the heartbeat's await: when
 *   no heartbeat gets through, handlers are stopped once their lease has surely ended, however
 *   long the statement hangs;
 * - an attempt whose handler is over keeps being renewed until its settlement commits, stopped
 *   or not: the local deadline is a safe guess for a handler still running, but for a finished
 *   one only the database's answer counts (a completed job must not run again because its
 *   acknowledgement waited behind a starved event loop);
 * - local deadlines are local monotonic time (performance.now() before the statement was sent,
 *   plus the lease left in database time), never the DB's timestamps against the worker's clock.
 *
 * It runs from the worker's start until after the last release at shutdown: heartbeats go on
 * through the grace period, so a handler finishing then is not reaped and run twice.
 */
import type { Logger } from 'pino';
import { LeaseholdError } from '../db/errors.ts';
import { heartbeatManyIfLeaseHeld, LIVE_WORKER_SECONDS, workerHeartbeat, type Executor } from '../db/queue/index.ts';
import { type Attempt, AttemptAborted, leaseDeadlineFrom, leaseLost } from './attempt.ts';
import type { Failpoints } from './failpoints.ts';
import type { HandlerRegistry } from './handler.ts';
import { Loops } from './timing.ts';

export interface LeaseKeeperDeps {
  db: Executor;
  /** The worker's id: its worker lease's key. */
  workerId: string;
  registry: HandlerRegistry;
  logger: Logger;
  failpoints?: Failpoints | undefined;
}

export class LeaseKeeper {
  private readonly loops: Loops;
  private heartbeatDb: Executor;
  /** Rounds in a row that renewed nothing (failed or timed out), for the log. */
  private failedRounds = 0;
  /** Claims (tokens) with an attempt given up unsettled: detached at the next heartbeat. */
  private readonly toDetach = new Set<string>();
  /** Until when (performance.now()) heartbeats look for claims lost after a failed claim. */
  private reconcileUntil = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly leaseSeconds: number,
    /** The attempts in flight (owned by the producer; read, never changed here). */
    private readonly attempts: ReadonlySet<Attempt>,
    private readonly deps: LeaseKeeperDeps,
  ) {
    this.loops = new Loops(deps.logger);
    this.heartbeatDb = deps.db;
  }

  /**
   * Starts the heartbeat and the sweep. `heartbeatDb`, when given, is what heartbeats run on (the
   * worker gives its own small pool whose client-side query timeout drops a connection that
   * stops answering); by default they run on `deps.db`.
   */
  start(heartbeatDb?: Executor): void {
    if (heartbeatDb) this.heartbeatDb = heartbeatDb;
    this.loops.every(heartbeatEveryMs(this.leaseSeconds), () => this.heartbeatAll(), 'heartbeat');
    this.loops.every(this.timeoutSweepMs(), () => this.sweepTimeouts(), 'timeout sweep');
  }

  /** Stops both loops; resolves once a heartbeat in flight has returned. */
  stop(): Promise<void> {
    return this.loops.stop();
  }

  /** How often overruns are looked for: a tenth of the shortest handler timeout, 5–100 ms. */
  timeoutSweepMs(): number {
    const { registry } = this.deps;
    const timeouts = registry.kinds().map((kind) => registry.get(kind)?.timeoutMs ?? Number.POSITIVE_INFINITY);
    return Math.min(100, Math.max(5, Math.min(...timeouts) / 10));
  }

  /**
   * Stops every handler past its timeout, and every attempt whose lease has surely ended
   * without a heartbeat getting through (the reaper may already have handed its job to another
   * worker). On its own timer: a heartbeat that hangs does not hold this up.
   */
  sweepTimeouts(): void {
    const now = performance.now();
    for (const entry of this.attempts) {
      if (entry.stopped) continue;
      // A handler that is over runs nothing a stop could end: its lease is kept until its
      // settlement commits, and the database, not this guess, says whether it still holds.
      if (entry.endedAt > 0) continue;
      if (now >= entry.leaseDeadline) {
        entry.stop(new AttemptAborted('lease_lost', 'no heartbeat got through before the lease ended'));
        // timeoutAt is finite only while a handler runs, so the entry has one.
      } else if (now >= entry.timeoutAt && entry.handler) {
        entry.stop(
          new AttemptAborted('timeout', `${entry.job.kind} did not finish within ${entry.handler.timeoutMs} ms`),
        );
      }
    }
  }

  /**
   * An attempt of this worker ended without a settlement that applied (refused, failed or
   * dropped): its job may still be running under its token, which the worker lease would keep
   * covering while the worker lives. Its claim is detached at the next heartbeat, after which
   * the job's own deadline decides (the reaper ends it then).
   */
  gaveUp(leaseToken: string): void {
    this.toDetach.add(leaseToken);
  }

  /**
   * A claim of this worker failed: it may have committed with its answer lost, its jobs running
   * under a claim this worker does not know, which the worker lease would cover while the worker
   * lives. For two leases from now, each heartbeat detaches this worker's claims whose own lease
   * passed and that none of its attempts holds (workerHeartbeatStatement, `reconcile`); their
   * jobs' own deadlines then decide, and the reaper ends them.
   */
  claimFailed(): void {
    this.reconcileUntil = Math.max(this.reconcileUntil, performance.now() + 2 * this.leaseSeconds * 1000);
  }

  /** Renews the worker lease and every running attempt's lease, within heartbeatRoundMs. */
  async heartbeatAll(): Promise<void> {
    // Not past its timeout: a wedged handler the sweep could not stop yet keeps no lease alive
    // (the sweep stops it, and its failure goes out at once). A handler that is over keeps its
    // lease until its settlement commits, even if it was stopped (a late local deadline under a
    // starved event loop): nothing of it runs any more, and the database says whether the lease
    // still holds, so a finished job is not run again because its acknowledgement waited.
    const entries = [...this.attempts].filter((e) => (!e.stopped || e.endedAt > 0) && performance.now() < e.timeoutAt);
    // Before the statement is sent: the lease it grants starts no earlier than this.
    const sent = performance.now();
    this.deps.failpoints?.hit('in_heartbeat');
    const roundMs = heartbeatRoundMs(this.leaseSeconds);
    try {
      await withDeadline(roundMs, this.beat(entries, sent, roundMs));
      this.failedRounds = 0;
    } catch (error) {
      this.failedRounds += 1;
      this.deps.logger.warn(
        { err: error, jobs: entries.length, roundsFailed: this.failedRounds },
        'heartbeat failed; retrying at the next beat',
      );
      // Stop at once what has surely ended (the sweep would, within its next round).
      this.sweepTimeouts();
    }
  }

  /** One round: the worker lease (and what it covers), then per job what it does not cover. */
  private async beat(entries: Attempt[], sent: number, roundMs: number): Promise<void> {
    const detach = [...this.toDetach];
    // The other attempts of a claim about to be detached keep their lease on their own rows.
    const leaving = new Set(entries.filter((e) => this.toDetach.has(e.job.leaseToken)));
    if (leaving.size > 0) await this.beatPerJob([...leaving], sent);
    // Every attempt held, stopped or past its timeout too: only a claim none of them came from is lost.
    const reconcile =
      sent < this.reconcileUntil ? { known: [...new Set([...this.attempts].map((e) => e.job.leaseToken))] } : undefined;
    const beat = await workerHeartbeat(this.heartbeatDb, {
      workerId: this.deps.workerId,
      leaseSeconds: this.leaseSeconds,
      marginSeconds: roundMs / 1000,
      liveSeconds: LIVE_WORKER_SECONDS,
      leases: entries.map((e) => e.job),
      detach,
      reconcile,
    });
    for (const token of detach) this.toDetach.delete(token);
    if (beat.lostClaims > 0) {
      this.deps.logger.warn(
        { claims: beat.lostClaims },
        'detached claims whose answer never reached this worker (a claim failed after it committed); the reaper ends their jobs',
      );
    }
    const perJob: Attempt[] = [];
    beat.attempts.forEach((attempt, i) => {
      const entry = entries[i]!;
      if (!attempt.running) entry.stop(leaseLost());
      else if (attempt.covered && beat.renewed) {
        entry.leaseDeadline = Math.max(entry.leaseDeadline, leaseDeadlineFrom(sent, beat.leaseRemainingMs / 1000));
      } else if (!leaving.has(entry)) perJob.push(entry);
    });
    if (perJob.length > 0) await this.beatPerJob(perJob, sent);
  }

  /** Renews each attempt's own lease (its job row), as every attempt was before worker leases. */
  private async beatPerJob(entries: Attempt[], sent: number): Promise<void> {
    const outcomes = await heartbeatManyIfLeaseHeld(
      this.heartbeatDb,
      entries.map((e) => e.job),
      { leaseSeconds: this.leaseSeconds },
    );
    let skipped = 0;
    outcomes.forEach((outcome, i) => {
      const entry = entries[i]!;
      if (outcome.applied) {
        entry.job.leaseUntil = outcome.leaseUntil;
        entry.leaseDeadline = Math.max(entry.leaseDeadline, leaseDeadlineFrom(sent, outcome.leaseRemainingMs / 1000));
      } else if (outcome.reason === 'row_locked') skipped += 1;
      else entry.stop(leaseLost());
    });
    if (skipped > 0) {
      this.deps.logger.warn(
        { jobs: skipped },
        'heartbeat skipped rows locked by another transaction: not renewed this round, retried at the next beat',
      );
    }
  }
}

/** A beat every third of the lease (at least 250 ms). */
export function heartbeatEveryMs(leaseSeconds: number): number {
  return Math.max(250, (leaseSeconds * 1000) / 3);
}

/**
 * How long one heartbeat round may take before it counts as failed: half a beat (a sixth of
 * the lease; 5 s at the default 30 s lease), at least 1 s. Two more rounds still fit in the
 * lease after one that timed out.
 */
export function heartbeatRoundMs(leaseSeconds: number): number {
  return Math.max(1000, heartbeatEveryMs(leaseSeconds) / 2);
}

/** A heartbeat round that took longer than its deadline (the statement may still be in flight). */
export class HeartbeatTimeout extends LeaseholdError {
  readonly code = 'heartbeat_timeout';

  constructor(readonly ms: number) {
    super(`the heartbeat did not return within ${ms} ms`);
    this.name = 'HeartbeatTimeout';
  }
}

/** `work`, or a HeartbeatTimeout after `ms`; a late result or failure of `work` is dropped. */
function withDeadline<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new HeartbeatTimeout(ms)), ms);
  });
  work.catch(() => {}); // a failure after the deadline has nobody to tell
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}
