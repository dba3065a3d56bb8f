/**
 * What the browser gets: plain, serialisable shapes. Row types never leave db/ and lib/.
 */
import type { QueueBacklog } from '../db/queries/overview';
import type { FailureClass, JobState, Role } from '../db/schema';

export type SubState = JobState | 'scheduled' | 'retrying' | 'lease_expired';

export interface JobDTO {
  id: string;
  queue: string;
  kind: string;
  kindVersion: number;
  state: JobState;
  subState: SubState;
  priority: number;
  attempts: number;
  maxAttempts: number;
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
}

export interface AttemptDTO {
  attempt: number;
  workerId: string | null;
  startedAt: string;
  endedAt: string;
  outcome: string;
  failureClass: string | null;
  error: string | null;
  durationMs: number;
}

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

export interface JobDetailDTO {
  job: JobDTO;
  payload: unknown;
  redactedPaths: string[];
  attempts: AttemptDTO[];
  audit: AuditDTO[];
  retryPlan: string;
  can: { retry: boolean; cancel: boolean; reveal: boolean };
}

/** Per-queue backlog: already a plain, serialisable shape in the read model. */
export type QueueDTO = QueueBacklog;

export interface OverviewDTO {
  generatedAt: string;
  queues: QueueDTO[];
  attempts: { attempts: number; jobs: number }[];
  failureClasses: { lastHour: { failureClass: string; count: number }[]; lastDay: { failureClass: string; count: number }[] };
  throughput: { minute: string; completed: number; failed: number }[];
  workers: { id: string; host: string; pid: number; queues: string[]; concurrency: number; startedAt: string; lastSeenAt: string }[];
  can: { pause: boolean };
}

export interface FailureGroupDTO {
  failureClass: string;
  fingerprint: string;
  queue: string;
  kind: string;
  count: number;
  lastSeen: string | null;
  example: string;
  trend: { day: string; count: number }[];
}

export interface BulkPreviewDTO {
  action: 'retry' | 'cancel';
  matched: number;
  overCap: boolean;
  cap: number;
  jobs: { id: string; leaseToken: string | null; state: string }[];
}

/** What an action tells the person who pressed the button. */
export interface ActionResultDTO {
  ok: boolean;
  message: string;
}

export interface ViewerDTO {
  email: string;
  role: Role;
}
