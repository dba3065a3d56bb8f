/**
 * What the browser gets: plain, serialisable shapes. Row types never leave db/ and lib/.
 * Client components import this module, so its only values are the pure lists of
 * db/states.ts (no imports there); everything else here is a type.
 */
import type { AttemptBudget } from '../db/queue/attempt-cap.ts';
import type { AttemptRow, failureGroups } from '../db/queries/jobs.ts';
import type { KindEntry } from '../db/queries/kinds.ts';
import type { Health, HorizonHolder } from '../db/queries/health.ts';
import type { HistoryPoint, QueueHistory } from '../db/queries/history.ts';
import type { deadByClass, Overview, QueueBacklog } from '../db/queries/overview.ts';
import type { Role } from '../db/schema.ts';
import type { FailureClass, JobState, LimitScope, ListState } from '../db/states.ts';

export { FAILURE_CLASSES, LIST_STATES } from '../db/states.ts';

/** A read model as JSON carries it: every Date becomes an ISO string. */
export type Jsonified<T> = T extends Date
  ? string
  : T extends readonly (infer U)[]
    ? Jsonified<U>[]
    : T extends object
      ? { [K in keyof T]: Jsonified<T[K]> }
      : T;

/** What a badge shows and a list filters by: a sub-state of ready or running, or a terminal state (subStateOf). */
export type SubState = ListState;

export interface JobDTO {
  id: string;
  queue: string;
  kind: string;
  kindVersion: number;
  state: JobState;
  subState: SubState;
  priority: number;
  /** Attempts started, charged or not. */
  attempts: number;
  /** The job's own cap (the handler's may be lower: see `budget`). */
  maxAttempts: number;
  /** The attempts counted against the cap that applies (db/queue/attempt-cap.ts, attemptBudget). */
  budget: AttemptBudget;
  /** `budget` as the job page says it (lib/present.ts, attemptLine). */
  attemptLine: string;
  runAt: string;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  updatedAt: string;
  leaseUntil: string | null;
  /** The lease token the viewer saw: a cancel of a running job must present it. */
  leaseToken: string | null;
  workerId: string | null;
  failureClass: FailureClass | null;
  lastError: string | null;
  traceId: string | null;
  idempotencyKey: string | null;
  /** The job's tags (docs/jobs.md, "Tags"), scrubbed as the key is; empty for none. */
  tags: string[];
  /** Times the job snoozed (a handler's `snooze(ms)`), handed back without charging an attempt. */
  snoozes: number;
  /** The snoozes' total length, in milliseconds. */
  snoozedMs: number;
  /** Why a ready, due job waits, in words (a limit it counts toward, a paused queue): db/queue/limits.ts, whyWaiting. */
  waiting: string[];
}

/** An ended attempt; the lease token stays on the server. */
export type AttemptDTO = Jsonified<Omit<AttemptRow, 'leaseToken'>>;

export interface AuditDTO {
  id: number;
  at: string;
  actor: string;
  action: string;
  jobIds: string[];
  queue: string | null;
  requested: number;
  affected: number;
  outcome: string;
  reason: string | null;
}

/**
 * What the job's completing attempt returned (docs/jobs.md, "Results, progress and waiting"):
 * the value masked as the payload is (lib/redaction.ts: the kind version's paths, the configured
 * ones, the well-known secret keys; hidden whole when the version is not registered), its text
 * scrubbed of the payload's masked values (lib/dal/scrub.ts); or, when it was not kept, the
 * marker saying why.
 */
export interface JobResultDTO {
  attempt: number;
  /** The value as masking left it; null when `marker` says it was not kept. */
  value: unknown;
  /** Why the value was not kept (`not stored: …`), scrubbed; null when it was. */
  marker: string | null;
  /** The paths masked, as they occur in this value. */
  redactedPaths: string[];
  /** Why the value is hidden whole (its kind version is not registered), or null. */
  hidden: string | null;
  /** Its size as stored JSON (or as it would have been, over the cap). */
  bytes: number;
  storedAt: string;
}

/** A job's latest progress report (its handler's `ctx.progress`), its message scrubbed as error text is. */
export interface JobProgressDTO {
  /** The attempt that reported it. */
  attempt: number;
  /** From 0 to 1. */
  fraction: number;
  /** `fraction` as a whole percentage, 0 to 100. */
  percent: number;
  message: string | null;
  updatedAt: string;
}

/** An ended attempt as the job page shows it, its words (lib/present.ts) made on the server. */
export interface AttemptViewDTO extends AttemptDTO {
  outcomeText: string;
  errorText: string;
  /** The error's detail in one line and in full, or null when it has none. */
  detailSummary: string | null;
  detailText: string | null;
}

/**
 * What the job page polls while the job is not finished (GET /api/jobs/[id]/progress): its
 * state, progress, ended attempts, result and last error, and the actions the viewer may take.
 */
export interface JobLiveDTO {
  state: JobState;
  subState: SubState;
  /** done, dead or cancelled: nothing more to poll. */
  finished: boolean;
  /** Attempts started: a progress report of an earlier one is said so. */
  attempts: number;
  progress: JobProgressDTO | null;
  attemptRows: AttemptViewDTO[];
  result: JobResultDTO | null;
  /** What the page shows where there is no result. */
  noResult: string;
  /** Scrubbed as on the page. */
  lastError: string | null;
  /** Only for a viewer who may cancel (a cancel of a running job presents it). */
  leaseToken: string | null;
  /** When the job last changed: a support action sends it back with state and attempts ("as seen"). */
  updatedAt: string;
  runAt: string;
  priority: number;
  /** runNow and reschedule: a scheduled or retrying job; priority: a ready one (each as the role allows). */
  can: { retry: boolean; cancel: boolean; runNow: boolean; reschedule: boolean; priority: boolean };
  /** When the server read it (it names the snapshot a page was rendered with). */
  readAt: string;
}

/** How many jobs matching a list's filter are newer than its newest row (GET /api/jobs/new). */
export interface NewJobsDTO {
  count: number;
  /** More than `count` (the count stops at NEW_JOBS_CAP). */
  more: boolean;
}

export interface JobDetailDTO {
  job: JobDTO;
  payload: unknown;
  redactedPaths: string[];
  /** Why the payload is hidden whole (its kind version is not registered), or null. */
  payloadHidden: string | null;
  /** The stored result, or null when there is none (not completed, or its handler returned nothing). */
  result: JobResultDTO | null;
  /** What the page shows where there is no result. */
  noResult: string;
  /** The job's state and progress, which the page keeps polling while the job runs. */
  live: JobLiveDTO;
  attempts: AttemptDTO[];
  audit: AuditDTO[];
  retryPlan: string;
  /** The done job this one re-runs, and the copies re-runs made of it (docs/dashboard.md, "Re-run"). */
  reruns: { rerunOf: string | null; rerunAs: string[] };
  /** rerun: a done job of a kind version registered re-run safe, for an operator. */
  can: { retry: boolean; cancel: boolean; reveal: boolean; rerun: boolean };
}

/** A kind version as the workers registered it. */
export type KindDTO = Jsonified<KindEntry>;

export interface KindsDTO {
  kinds: KindDTO[];
  /** The configured paths masked in every kind (LEASEHOLD_REDACT_PATHS). */
  defaultPaths: string[];
  can: { editRedaction: boolean; editSearch: boolean };
}

/** A limit's maximum of running attempts and its rate of starts (`100/1s`), each null for none. */
export interface LimitValuesDTO {
  max: number | null;
  rate: string | null;
}

/** A limit as the Limits page shows it (db/queue/limits.ts, LimitStatus): rates as text, times as ISO strings. */
export interface LimitDTO {
  key: string;
  scope: LimitScope;
  name: string;
  /** What the handlers (or the workers' queue limits) declare. */
  declared: LimitValuesDTO;
  /** What an admin set at run time: each wins over its declaration until cleared. */
  set: LimitValuesDTO;
  /** What the claims enforce now: the run-time value when set, else the declaration. */
  enforced: LimitValuesDTO;
  setBy: string | null;
  setAt: string | null;
  running: number;
  /** Starts in the rate's current window (0 without a rate). */
  started: number;
  /** When the rate leaves a start again, while it leaves none now. */
  nextStartAt: string | null;
  waiting: number;
  /** `waiting` reached the count's cap: at least that many wait. */
  waitingCapped: boolean;
  pausedUntil: string | null;
  pausedReason: string | null;
  /** The kinds that count toward it (a queue's limit: empty, its every kind counts). */
  kinds: string[];
}

export interface LimitsDTO {
  limits: LimitDTO[];
  can: { set: boolean };
}

/** What holds the horizon back (db/queries/health.ts), with its sentence (`holderText`). */
export type HorizonHolderDTO = Jsonified<HorizonHolder> & { text: string };

/**
 * PostgreSQL's health as the dashboard's role reads it (db/queries/health.ts): the checks with
 * their states and sentences, the tables, the horizon's holders (a session's client address and
 * query for admins only, else null), NOTIFY, connections, autovacuum. Times as ISO strings.
 */
export type HealthDTO = Omit<Jsonified<Health>, 'holders'> & {
  holders: HorizonHolderDTO[];
  /** Whether the holding sessions' client addresses and queries are read (admins). */
  sessionDetail: boolean;
};

/** A live worker (db/queue/worker-registry.ts, listWorkers): versions, schema range, kind versions. */
export type WorkerDTO = OverviewDTO['workers'][number];

/** One interval of a queue's history (db/queries/history.ts HistoryPoint, its time as ISO text). */
export type HistoryPointDTO = Omit<HistoryPoint, 'at'> & { at: string };

/** The overview's history charts: every interval of the range, oldest first. */
export type HistoryDTO = Omit<QueueHistory, 'points'> & { generatedAt: string; points: HistoryPointDTO[] };

/** The Workers page: the live workers, and per queue the ready jobs of a kind none of them runs. */
export interface WorkersDTO {
  generatedAt: string;
  /** A worker is live while it reported within this many seconds. */
  liveWithinSeconds: number;
  workers: WorkerDTO[];
  /** Queues with ready, scheduled or retrying jobs whose kind version no live worker runs. */
  waitingForKind: { queue: string; jobs: number }[];
}

/**
 * A queue's backlog alert in force (db/queue/alerts.ts, evaluateAlerts): its threshold (seconds
 * for the age, else a count) and where it comes from, the figure now, and whether it fires.
 */
export interface QueueAlertDTO {
  queue: string;
  alert: 'oldest_ready_age_seconds' | 'dead' | 'waiting_for_kind';
  threshold: number;
  source: 'run time' | 'configuration';
  value: number;
  /** The threshold and the figure as the page says them: `5 min` for the age, `100` for a count. */
  thresholdText: string;
  valueText: string;
  firing: boolean;
  /** Set while firing: `emails: oldest ready job’s age 7 min is at or over its threshold of 5 min`. */
  sentence: string | null;
  /** Who set a run-time threshold, and when (null for a configured one). */
  setBy: string | null;
  setAt: string | null;
}

export interface QueueAlertsDTO {
  generatedAt: string;
  alerts: QueueAlertDTO[];
  /** The queues the backlog knows (with jobs or a queue row): the form offers them. */
  queues: string[];
  can: { set: boolean };
}

/** One group of a queue on its page (db/queue/group-limits.ts, listGroups). */
export interface GroupDTO {
  group: string;
  waiting: number;
  running: number;
  oldestWaitingMs: number | null;
  /** The maximum the claims enforce (its own, else the queue's default; null: none). */
  max: number | null;
  /** Its own maximum (null: the default applies). */
  ownMax: number | null;
  paused: boolean;
  pausedReason: string | null;
}

/** A queue's page: its groups, the first 50 by their oldest waiting job, the rest summed. */
export interface QueueGroupsDTO {
  queue: string;
  defaultMax: number | null;
  groups: GroupDTO[];
  other: { groups: number; waiting: number; running: number; oldestWaitingMs: number | null } | null;
  /** purgeDead: an admin's purge of the queue's old dead jobs. */
  can: { setMax: boolean; pause: boolean; purgeDead: boolean };
}

/** A schedule as the Schedules page lists it (db/queue/schedule-admin.ts, ScheduleView). */
export interface ScheduleDTO {
  name: string;
  kind: string;
  kindVersion: number;
  queue: string;
  cron: string;
  timezone: string;
  /** The first tick after the database's now (null while paused). */
  nextTickAt: string | null;
  lastTickAt: string | null;
  lastJobId: string | null;
  /** The last tick's job's state (null: no tick yet, or the job is gone). */
  lastJobState: JobState | null;
  paused: boolean;
  /** The pausing admin's words, scrubbed (lib/dal/scrub.ts). */
  pausedReason: string | null;
  /** Declared in code, or made at run time by an admin. */
  source: 'code' | 'runtime';
  /** Changed (or made) at run time: the code's declaration does not apply until a reset. */
  overridden: boolean;
}

export interface SchedulesDTO {
  schedules: ScheduleDTO[];
}

/** One tick of a schedule and what became of it (db/queue/schedule-admin.ts, recentTicks). */
export interface ScheduleTickDTO {
  tickAt: string;
  outcome: 'enqueued' | 'late' | 'overlap' | 'missed' | 'discarded';
  /** How many ticks a `missed` row passed over. */
  missedCount: number | null;
  jobId: string | null;
  /** Its job's state now (null: no job, or retention removed it). */
  jobState: JobState | null;
}

/** A schedule's page: its settings, its payload as redaction left it, its recent ticks. */
export interface ScheduleDetailDTO {
  schedule: ScheduleDTO & {
    missed: 'skip' | 'once' | 'each';
    missedEach: number | null;
    missedAfterMs: number;
    horizonMs: number;
    overlap: 'allow' | 'skip';
    jitterMs: number;
    priority: number;
    maxAttempts: number;
    declaredAt: string | null;
  };
  /** Masked as a job of its kind version is (lib/redaction.ts): MASK whole when no worker registered it. */
  payload: unknown;
  redactedPaths: string[];
  /** Why the payload is hidden whole (its kind version is not registered), or null. */
  payloadHidden: string | null;
  /** The newest first. */
  ticks: ScheduleTickDTO[];
  can: { pause: boolean; change: boolean };
}

/** Per-queue backlog: already a plain, serialisable shape in the read model. */
export type QueueDTO = QueueBacklog;

export type OverviewDTO = Jsonified<Overview> & {
  /** The backlog alerts firing now: the backlog table marks their queues. */
  alerts: QueueAlertDTO[];
  can: { pause: boolean };
};

/** What /api/metrics renders as Prometheus text (lib/metrics-text.ts); never sent to a browser. */
export interface MetricsDTO {
  queues: QueueDTO[];
  dead: Awaited<ReturnType<typeof deadByClass>>;
  /** pg_notification_queue_usage(), 0–1. */
  notifyQueueUsage: number;
  /** Each limit's figures (db/queue/limits.ts, listLimits). */
  limits: LimitMetricsDTO[];
  /** Per queue with groups, its GROUP_METRICS_TOP groups by oldest waiting job, then the rest summed (`group` null). */
  groups: GroupMetricsDTO[];
  /** Every schedule (docs/scheduling.md). */
  schedules: ScheduleMetricsDTO[];
  /** Per queue, each backlog alert's threshold in force and whether the queue is at or over it. */
  alerts: AlertMetricsDTO[];
  /** PostgreSQL's health as the dashboard's role reads it (db/queries/health.ts). */
  health: HealthMetricsDTO;
}

/** A queue's backlog alert (db/queue/alerts.ts): fires when the figure is at or over the threshold. */
export interface AlertMetricsDTO {
  queue: string;
  alert: 'oldest_ready_age_seconds' | 'dead' | 'waiting_for_kind';
  threshold: number;
  firing: boolean;
}

/** The health figures the metrics expose (db/queries/health.ts). */
export interface HealthMetricsDTO {
  /** Each check's state; a check the role cannot read is `unreadable` (no series). */
  checks: { check: string; state: 'ok' | 'warning' | 'critical' | 'unreadable' }[];
  /** Each Leasehold table: its tuples, its size with its indexes, and the estimated bloat. */
  tables: { table: string; liveTuples: number; deadTuples: number; bytes: number; bloatBytes: number }[];
  /** Seconds the transaction holding the oldest xmin has been open (null: none, or not readable). */
  horizonAgeSeconds: number | null;
  /** Transactions between the oldest xmin held and now (null: not readable). */
  horizonXidAge: number | null;
  autovacuum: boolean;
  /** Connections to the server by application name ('' for none). */
  connections: { application: string; count: number }[];
}

/** A schedule as the metrics show it. */
export interface ScheduleMetricsDTO {
  schedule: string;
  /** Seconds since its last enqueued tick (null: none yet). */
  lastTickAgeSeconds: number | null;
  /** Seconds its next due tick has waited for a worker's pass (0: none due). */
  overdueSeconds: number;
  paused: boolean;
}

/** A group (or, with `group` null, the rest of its queue's groups summed) as the metrics show it. */
export interface GroupMetricsDTO {
  queue: string;
  group: string | null;
  waiting: number;
  running: number;
  oldestWaitingSeconds: number;
  /** The maximum in force (its own, else the queue's default; null: none, and for the rest). */
  max: number | null;
  paused: boolean;
}

/** A limit as the metrics show it: what it enforces, what runs and waits under it, what its rate leaves. */
export interface LimitMetricsDTO {
  limit: string;
  max: number | null;
  running: number;
  waiting: number;
  /** Starts its rate leaves in the current window (null: no rate). */
  startsLeft: number | null;
  paused: boolean;
}

/**
 * A failure group as the page shows it: `example` scrubbed (lib/dal/scrub.ts), and `fingerprint`
 * the group's key (the md5 of the fingerprint text, which can quote a secret), which a group
 * preview accepts.
 */
export type FailureGroupDTO = Omit<
  Jsonified<Awaited<ReturnType<typeof failureGroups>>[number]>,
  'exampleJobId' | 'key'
>;

export interface BulkPreviewDTO {
  action: 'retry' | 'cancel';
  matched: number;
  overCap: boolean;
  cap: number;
  jobs: { id: string; leaseToken: string | null; state: string }[];
}

/** A purge's preview: the queue's dead jobs finished before `before`, and the frozen set (≤ cap). */
export interface PurgePreviewDTO {
  queue: string;
  before: string;
  /** Counted up to `countCap`; more than that when `moreThanCounted`. */
  matched: number;
  moreThanCounted: boolean;
  overCap: boolean;
  cap: number;
  ids: string[];
}

/** The demo's sign-in hint, shown on the login page in demo mode only. */
export interface DemoLoginsDTO {
  emails: string[];
  password: string;
}

/** What the login page offers: which ways in are switched on. */
export interface LoginOptionsDTO {
  /** The email and password form. */
  builtinUsers: boolean;
  /** The single sign-on button ("Sign in with <name>"), when configured. */
  sso: { providerId: string; name: string } | null;
  /** The demo users and their password: in demo mode only. */
  demo: DemoLoginsDTO | null;
}

/** What an action tells the person who pressed the button. */
export interface ActionResultDTO {
  ok: boolean;
  message: string;
}

/** A support action's answer: `refused` when the job was left alone (changed since seen, wrong state); `copyId`: a re-run's copy. */
export interface SupportResultDTO extends ActionResultDTO {
  refused?: true;
  copyId?: string;
}

export interface ViewerDTO {
  email: string;
  role: Role;
}

export { throttledMessage, throttledSeconds } from './sign-in-wait.ts';
