/**
 * What the benchmark needs from each queue it compares. Every system runs on its own fresh
 * database of the same server; timed parts never include connecting or installing.
 */
/** `floor`: Leasehold's own claim and acknowledgement statements in a bare loop (systems/floor.ts). */
export type SystemName = 'leasehold' | 'pg-boss' | 'graphile-worker' | 'bare-sql' | 'floor';
/** The modes every queue has. */
export type CommonMode = 'drain' | 'listen' | 'poll';
/**
 * Plus modes of one system only (`listen-async-claims`: Leasehold's LISTEN pickup with
 * `--async-claims`; `drain-limited`: Leasehold's drain with its handler under a concurrency
 * limit of LIMITED_DRAIN_MAX; `drain-rated`: under a rate of RATED_DRAIN.max starts per
 * RATED_DRAIN.perMs ms; `drain-grouped`: its jobs in GROUPED_DRAIN.groups fair groups, each
 * under a group maximum of GROUPED_DRAIN.max; docs/flow-control.md).
 */
export type WorkerMode = CommonMode | 'listen-async-claims' | 'drain-limited' | 'drain-rated' | 'drain-grouped';

/** The concurrency limit of the drain-limited case. */
export const LIMITED_DRAIN_MAX = 50;
/** The rate of the drain-rated case: 5,000 starts in any second, every process together. */
export const RATED_DRAIN = { max: 5_000, perMs: 1_000 } as const;

/** The grouped drain's groups (each job in group `g<seq mod groups>`) and each group's maximum. */
export const GROUPED_DRAIN = { groups: 1_000, max: 2 } as const;

/** The queue name every case uses. */
export const QUEUE = 'bench';

export interface Enqueuer {
  /** Adds one job (its own transaction) whose payload carries `seq`. */
  send(seq: number): Promise<void>;
  /** Adds one job per `seqs` entry in one statement and transaction (the bursty pickup case). */
  sendMany(seqs: number[]): Promise<void>;
  close(): Promise<void>;
}

export interface RunningWorker {
  /** Stops claiming and lets in-flight work settle. */
  stop(): Promise<void>;
}

export interface BenchSystem {
  name: SystemName;
  /** The settings used, stated in the output; a system runs the modes it has settings for. */
  settings: Record<CommonMode | 'enqueue', string> & Partial<Record<WorkerMode, string>>;
  /** Installs the system's schema into an empty database. */
  install(url: string): Promise<void>;
  /** A sender over `connections` pooled connections; `wake` asks for LISTEN/NOTIFY wake-ups. */
  enqueuer(url: string, connections: number, wake: boolean): Promise<Enqueuer>;
  /** Adds one job per `seqs` entry in one bulk call (at most 100,000; the runner splits). */
  enqueueBulk(url: string, seqs: number[]): Promise<void>;
  /**
   * Removes the finished jobs as the system's own retention does, at once (the lifecycle case);
   * resolves once none is left (graphile-worker deletes a job as it completes: nothing to do).
   */
  retain(url: string): Promise<void>;
  /** Counts the job rows still stored as `n` (after `retain`: 0). */
  storedSql: string;
  /** Counts the jobs not yet settled as `n` (for the drain: the run ends at 0). */
  unsettledSql: string;
  /** Runs in a worker process: `onStart(seq)` per handler start, `onHandled(n)` as handlers finish. */
  startWorker(url: string, mode: WorkerMode, hooks: WorkerHooks): Promise<RunningWorker>;
  /**
   * The heartbeat-heavy case: a worker whose handlers all wait `holdMs`, `concurrency` at once,
   * renewing their claims as the system does (absent: the system does not heartbeat).
   */
  hold?: {
    settings: string;
    start(url: string, options: HoldOptions, hooks: WorkerHooks): Promise<RunningWorker>;
    /** The tables a heartbeat updates: their updated rows (pg_stat_user_tables) count the beats. */
    beatTablesSql: string;
  };
  /** Which modes the system can run; a missing one is reported as n/a with the reason. */
  unsupported?: Partial<Record<WorkerMode | 'enqueue-wake-off' | 'hold', string>>;
}

export interface HoldOptions {
  concurrency: number;
  holdMs: number;
  /** The lease (Leasehold) or heartbeat timeout (pg-boss) the beats keep alive. */
  leaseSeconds: number;
  /** How often a beat is due, s: a third of the lease, as Leasehold beats. */
  beatSeconds: number;
  /** Jobs per claim (Leasehold's --batch-size): 1 for one-job claims; absent: the system's batch. */
  claimBatch?: number;
}

export interface WorkerHooks {
  onStart(seq: number): void;
  onHandled(count: number): void;
}
