/**
 * The worker's maintenance: its entry in the worker registry (registered at start, touched
 * every `registryIntervalMs`, re-registered if retention removed it, removed at stop), the
 * kinds it runs in the kinds registry (recorded at start, db/queue/kinds.ts) and with its
 * entry (worker_kinds: which live worker runs which kind version), and — when enabled — the
 * reaper, retention and unknown-kind rounds (the last ends `dead` the jobs whose kind version
 * no live worker has run for `unknownKindGraceMs`). Each round runs under a database-wide
 * advisory lock, so one process in the fleet does it at a time, however many enable it.
 */
import os from 'node:os';
import type { Logger } from 'pino';
import { SCHEMA_VERSION, SUPPORTED_SCHEMA } from '../db/schema-version.ts';
import {
  DEFAULT_UNKNOWN_KIND_GRACE_MS,
  deadIfKindUnrun,
  declareLimits,
  limitedQueues,
  limitKey,
  renewQueueLimits,
  deregisterWorker,
  reapExpiredLeases,
  registerKinds,
  registerWorker,
  removeExpiredHistory,
  removeOldAudit,
  removeOldReceipts,
  removeStaleWorkers,
  sweepReadyGroups,
  pruneGroupClaims,
  GROUP_SWEEP_BATCH,
  groupedQueues,
  touchWorker,
  withMaintenanceLock,
  type KindRegistration,
  type LimitDeclaration,
  type RetentionOptions,
  type WorkerInfo,
} from '../db/queue/index.ts';
import type { DrizzleDatabase } from '../db/queue/executor.ts';
import { TERMINAL_STATES } from '../db/states.ts';
import type { Failpoints } from './failpoints.ts';
import type { WorkerMetrics } from './metrics.ts';
import { Loops } from './timing.ts';
import { declareSchedules, runDueSchedules, type ScheduleDeclaration } from '../db/queue/schedules.ts';
import { HISTORY_INTERVAL_MS, recordQueueHistory } from '../db/queue/queue-history.ts';

/** Most expired leases one reap statement ends. */
const REAP_BATCH = 500;
/** Most rows of each kind one retention statement removes, unless the settings say otherwise. */
const RETENTION_BATCH = 1000;
/** Most jobs of kinds no live worker runs one statement ends. */
const UNKNOWN_KIND_BATCH = 1000;
/** Statements per round at most: a backlog is worked off over several rounds, not in one go. */
const MAX_STATEMENTS_PER_ROUND = 20;
/**
 * How often the scheduler looks for due schedules: a tick is enqueued within this long of its
 * time (plus the pass), in whichever worker gets to it first. One short statement when none is due.
 */
export const SCHEDULE_CHECK_MS = 500;

/** Whether this process runs the reaper and retention, and how often and how far back. */
export interface MaintenanceRounds {
  enabled: boolean;
  reapIntervalMs: number;
  retentionIntervalMs: number;
  staleWorkerSeconds: number;
  receiptsRetentionSeconds: number;
  retention: RetentionOptions;
  /**
   * How long a due job waits for a live worker that runs its kind version before it ends
   * `dead` (class `permanent`); default 24 h. Checked every `retentionIntervalMs`.
   */
  unknownKindGraceMs?: number | undefined;
  /** How often each queue's history is recorded (db/queue/queue-history.ts); default a minute. */
  historyIntervalMs?: number | undefined;
}

export interface MaintenanceSettings {
  workerId: string;
  queues: string[];
  concurrency: number;
  registryIntervalMs: number;
  /** Delay before a reaped job may run again (the retry policy's). */
  leaseExpiredDelayMs?: number | undefined;
  maintenance: MaintenanceRounds;
  /** Enqueue due schedules' ticks here (every SCHEDULE_CHECK_MS). */
  scheduler?: boolean | undefined;
}

export interface MaintenanceDeps {
  /** A pool: each round takes its advisory lock in a transaction of its own. */
  db: DrizzleDatabase;
  logger: Logger;
  /** What the registry entry shows as the worker's version. */
  version?: string | null | undefined;
  /** The kind versions this worker runs, recorded in the kinds registry at start. */
  kinds?: readonly KindRegistration[] | undefined;
  /** The handlers' limits and the worker's queue limits, declared at start (db/queue/limits.ts). */
  limits?: readonly LimitDeclaration[] | undefined;
  /** Told, at start and at each registry refresh, which served queues hold grouped jobs (Producer.groupsFound). */
  groupsFound?: ((queues: string[], refresh: boolean) => void) | undefined;
  /** Told, at start and at each registry refresh, which served queues have a limit (Producer.limitQueues). */
  queueLimitsFound?: ((queues: { queue: string; max: boolean }[]) => void) | undefined;
  metrics?: WorkerMetrics | undefined;
  failpoints?: Failpoints | undefined;
  /** The schedules of this worker's code, declared at start (db/queue/schedules.ts). */
  schedules?: readonly ScheduleDeclaration[] | undefined;
}

export class Maintenance {
  private readonly loops: Loops;

  constructor(
    private readonly settings: MaintenanceSettings,
    private readonly deps: MaintenanceDeps,
  ) {
    const grace = settings.maintenance.unknownKindGraceMs;
    if (grace !== undefined && !(Number.isFinite(grace) && grace >= 0 && grace <= 365 * 86_400_000)) {
      throw new Error(
        `Leasehold worker: maintenance.unknownKindGraceMs must be milliseconds from 0 to 365 days, got ${String(grace)}`,
      );
    }
    this.loops = new Loops(deps.logger);
  }

  /** The registry entry, the same at start and at re-registration. */
  private get info(): WorkerInfo {
    const s = this.settings;
    return {
      id: s.workerId,
      host: os.hostname(),
      pid: process.pid,
      queues: s.queues,
      concurrency: s.concurrency,
      version: this.deps.version ?? null,
      codeVersion: SCHEMA_VERSION,
      schemaFrom: SUPPORTED_SCHEMA.min,
      kinds: (this.deps.kinds ?? []).map((k) => ({ kind: k.kind, version: k.version })),
    };
  }

  /**
   * Registers the worker and records its kinds (an error here fails the worker's start). The
   * kinds go first: a worker listed as live has told the dashboard what its payloads hide.
   */
  async register(): Promise<void> {
    await registerKinds(this.deps.db, this.deps.kinds ?? []);
    // Before the first claim: a limited claim finds its declared maximum.
    await declareLimits(this.deps.db, this.deps.limits ?? []);
    await this.findQueueLimits();
    // Before the first pass: a schedule the code declares ticks from this start on.
    const { kept } = await declareSchedules(this.deps.db, this.deps.schedules ?? []);
    if (kept.length > 0) {
      this.deps.logger.info(
        { schedules: kept },
        `schedules changed at run time keep their run-time settings over this code's (reset them to take the code's): ${kept.join(', ')}`,
      );
    }
    await registerWorker(this.deps.db, this.info);
  }

  /**
   * Renews its own queue limits' declaration (one lapses a minute after no live worker renews
   * it), then tells the producer which of its queues hold grouped jobs and which have a limit in
   * the database (any worker's).
   */
  private async findQueueLimits(): Promise<void> {
    const own = (this.deps.limits ?? []).filter((l) => l.scope === 'queue').map((l) => limitKey('queue', l.name));
    await renewQueueLimits(this.deps.db, own);
    if (this.deps.groupsFound) this.deps.groupsFound(await groupedQueues(this.deps.db, this.settings.queues), true);
    if (!this.deps.queueLimitsFound) return;
    this.deps.queueLimitsFound(await limitedQueues(this.deps.db, this.settings.queues));
  }

  /** Starts the registry refresh and, when enabled, the reaper and retention rounds. */
  start(): void {
    const m = this.settings.maintenance;
    this.loops.every(this.settings.registryIntervalMs, () => this.refreshRegistry(), 'registry');
    if (this.settings.scheduler ?? true) this.loops.every(SCHEDULE_CHECK_MS, () => this.scheduleRound(), 'schedules');
    if (m.enabled) {
      this.loops.every(m.reapIntervalMs, () => this.reapRound(), 'reaper');
      this.loops.every(m.reapIntervalMs, () => this.groupSweepRound(), 'group sweep');
      this.loops.every(m.retentionIntervalMs, () => this.retentionRound(), 'retention');
      this.loops.every(m.retentionIntervalMs, () => this.unknownKindRound(), 'unknown kinds');
      this.loops.every(m.historyIntervalMs ?? HISTORY_INTERVAL_MS, () => this.historyRound(), 'history');
    }
  }

  /** One scheduler pass: the due schedules' ticks, enqueued (db/queue/schedules.ts). */
  async scheduleRound(): Promise<void> {
    const { ticks, unreadable } = await runDueSchedules(this.deps.db);
    for (const u of unreadable) {
      this.deps.logger.warn(u, `schedule ${u.name} cannot be read (${u.problem}); looking again in a minute`);
    }
    if (ticks.length > 0) this.deps.logger.debug({ ticks: ticks.length }, 'schedule ticks handled');
  }

  /** Stops the rounds; resolves once a round in flight is over. */
  stop(): Promise<void> {
    return this.loops.stop();
  }

  /** Removes the registry entry; a failure is logged (the entry expires on its own). */
  async deregister(): Promise<void> {
    await deregisterWorker(this.deps.db, this.settings.workerId).catch((error: unknown) =>
      this.deps.logger.warn({ err: error }, 'could not remove the worker registry entry (it will expire)'),
    );
  }

  /** Touches the entry; re-registers it (the kinds stay as recorded at start) if it was removed. */
  async refreshRegistry(): Promise<void> {
    const { db } = this.deps;
    if (!(await touchWorker(db, this.settings.workerId))) await registerWorker(db, this.info);
    await this.findQueueLimits();
  }

  /**
   * Sweeps the fair groups a claim found idle (db/queue/groups.ts): removes those left without
   * a ready job, and brings back the turn of one whose job came meanwhile; and deletes the
   * group_claims rows whose jobs all ended (db/queue/group-limits.ts).
   */
  async groupSweepRound(): Promise<void> {
    for (let round = 0; round < MAX_STATEMENTS_PER_ROUND; round++) {
      const outcome = await withMaintenanceLock(this.deps.db, 'group sweep', (tx) => sweepReadyGroups(tx));
      if (!outcome.ran) return;
      // Its own statement: the sweep's locks on idle groups are not held while it deletes.
      const pruned = await pruneGroupClaims(this.deps.db, GROUP_SWEEP_BATCH);
      if (outcome.result.looked < GROUP_SWEEP_BATCH && pruned < GROUP_SWEEP_BATCH) return;
    }
  }

  /** Reaps expired leases until fewer than a batch are left (or the round's statements are used up). */
  async reapRound(): Promise<void> {
    const { db, logger, metrics } = this.deps;
    const { leaseExpiredDelayMs } = this.settings;
    for (let round = 0; round < MAX_STATEMENTS_PER_ROUND; round++) {
      const outcome = await withMaintenanceLock(db, 'reaper', async (tx) => {
        const result = await reapExpiredLeases(tx, {
          limit: REAP_BATCH,
          ...(leaseExpiredDelayMs !== undefined ? { leaseExpiredDelayMs } : {}),
        });
        if (result.reaped > 0) this.deps.failpoints?.hit('in_reap'); // dies before the commit
        return result;
      });
      if (!outcome.ran) return;
      const { reaped, retried, dead } = outcome.result;
      if (reaped > 0) {
        metrics?.reaped.inc({ outcome: 'retried' }, retried.length);
        metrics?.reaped.inc({ outcome: 'dead' }, dead.length);
        logger.warn({ retried: retried.length, dead: dead.length }, 'reaped expired leases');
      }
      if (reaped < REAP_BATCH) return;
    }
  }

  /**
   * Ends `dead` the ready jobs whose kind version no live worker has run for the grace period,
   * a bounded batch per statement (db/queue/reap.ts, deadIfKindUnrun).
   */
  async unknownKindRound(): Promise<void> {
    const { db, logger } = this.deps;
    const m = this.settings.maintenance;
    const graceMs = m.unknownKindGraceMs ?? DEFAULT_UNKNOWN_KIND_GRACE_MS;
    for (let round = 0; round < MAX_STATEMENTS_PER_ROUND; round++) {
      const outcome = await withMaintenanceLock(db, 'unknown kinds', (tx) =>
        deadIfKindUnrun(tx, { graceMs, liveSeconds: m.staleWorkerSeconds, limit: UNKNOWN_KIND_BATCH }),
      );
      if (!outcome.ran) return;
      const { dead } = outcome.result;
      if (dead.length > 0) {
        logger.warn({ dead: dead.length, graceMs }, 'ended jobs dead: no live worker ran their kind version');
      }
      if (dead.length < UNKNOWN_KIND_BATCH) return;
    }
  }

  /**
   * Records each queue's history: recent minutes' outcomes and failed attempts, live work now,
   * the hours folded, old rows removed (db/queue/queue-history.ts). One process per database.
   */
  async historyRound(): Promise<void> {
    const outcome = await withMaintenanceLock(this.deps.db, 'history', (tx) => recordQueueHistory(tx));
    if (outcome.ran) this.deps.logger.debug(outcome.result, 'queue history recorded');
  }

  /** Removes expired history, receipts and stale registry entries in bounded batches. */
  async retentionRound(): Promise<void> {
    const { db, logger } = this.deps;
    const m = this.settings.maintenance;
    const limit = m.retention.limit ?? RETENTION_BATCH;
    for (let round = 0; round < MAX_STATEMENTS_PER_ROUND; round++) {
      const outcome = await withMaintenanceLock(db, 'retention', async (tx) => {
        const removed = await removeExpiredHistory(tx, { ...m.retention, limit });
        const receipts = await removeOldReceipts(tx, { olderThanSeconds: m.receiptsRetentionSeconds, limit });
        const workers = await removeStaleWorkers(tx, m.staleWorkerSeconds);
        const audit = await removeOldAudit(tx, { ...m.retention, limit });
        return { ...removed, receipts, workers, audit };
      });
      if (!outcome.ran) return;
      const r = outcome.result;
      if (r.jobs + r.attempts + r.dedupeKeys + r.receipts + r.workers + r.audit > 0) {
        logger.info(r, 'retention removed old rows');
      }
      // Jobs are removed up to `limit` per terminal state.
      if (Math.max(r.jobs / TERMINAL_STATES.length, r.attempts, r.dedupeKeys, r.receipts, r.audit) < limit) return;
    }
  }
}
