'use client';
/**
 * React Query keys, fetchers and polling intervals, in one place. Polling pauses while the tab
 * is hidden (refetchIntervalInBackground stays false), and stops for good once the server
 * answered 401: the session ended (8 hours after sign-in at most), and the page says so
 * (components/session-ended.tsx) instead of polling on.
 */
import type { Query } from '@tanstack/react-query';
import type {
  ActionResultDTO,
  BulkPreviewDTO,
  FailureGroupDTO,
  HealthDTO,
  HistoryDTO,
  JobLiveDTO,
  KindsDTO,
  NewJobsDTO,
  OverviewDTO,
  QueueAlertsDTO,
  WorkersDTO,
} from '../lib/dto.ts';
import { withBasePath } from './base-path.ts';

export const POLL = {
  overview: 5_000,
  /** The Health page: the checks, what holds the horizon, the tables. */
  health: 5_000,
  /** The backlog alerts (on the Health page). */
  alerts: 5_000,
  /** The Workers page. */
  workers: 5_000,
  /** The overview's history charts over the last hour (minutes); longer ranges every minute. */
  historyHour: 15_000,
  historyLonger: 60_000,
  /** A job's progress on its page, while the job runs (the worker writes it at most once a second). */
  jobProgress: 1_500,
  /** A job's page while the job waits (ready, scheduled, retrying): its state, attempts, result. */
  jobWaiting: 5_000,
  /** The job list's "n new jobs" marker. */
  newJobs: 5_000,
  /** The Failures page. */
  failures: 15_000,
  /** The Kinds page. */
  kinds: 30_000,
} as const;

export const queryKeys = {
  overview: ['overview'] as const,
  health: ['health'] as const,
  alerts: ['alerts'] as const,
  workers: ['workers'] as const,
  history: (range: string, queue: string | null) => ['history', range, queue] as const,
  /** A job's live state and progress, per server render of its page (`readAt` names the render). */
  jobLive: (id: string, readAt: string) => ['job-live', id, readAt] as const,
  /** The jobs matching a list's filter newer than its newest row (`query`: the filter and the cursor). */
  newJobs: (query: string) => ['new-jobs', query] as const,
  failures: ['failures'] as const,
  kinds: ['kinds'] as const,
};

/**
 * An answer that was not 2xx: its status (401: the session ended) and the server's sentence. A
 * plain Error with a status, not a class of its own: the browser's fetch failure is no
 * LeaseholdError (test/errors.test.ts), and nothing outside this module catches it by type.
 */
export type HttpError = Error & { status: number };

const httpError = (status: number, message: string): HttpError =>
  Object.assign(new Error(message), { name: 'HttpError', status });

export const isSignedOut = (error: unknown) => error instanceof Error && 'status' in error && error.status === 401;

/** Whether a poll of this tab was answered 401; the banner subscribes, every poll checks it. */
let sessionEnded = false;
const listeners = new Set<() => void>();
export const sessionStore = {
  ended: () => sessionEnded,
  subscribe: (listener: () => void) => {
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
    };
  },
};
function endSession() {
  if (sessionEnded) return;
  sessionEnded = true;
  for (const listener of listeners) listener();
}

/**
 * A query's `refetchInterval`: `ms` (or what `ms` says for the query's data), false once this
 * tab's session ended (a 401 from any poll) or the query's last error was one.
 */
export function poll<T = unknown>(ms: number | ((data: T | undefined) => number | false)) {
  return (query: { state: Pick<Query<T>['state'], 'data' | 'error'> }): number | false => {
    if (sessionEnded || isSignedOut(query.state.error)) return false;
    return typeof ms === 'number' ? ms : ms(query.state.data);
  };
}

/** GETs `path` (the dashboard's own, `/api/…`: under the base path); an error is an HttpError. */
async function getJson<T>(path: string): Promise<T> {
  // A tab whose session ended asks no more: the banner links to the sign-in.
  if (sessionEnded) throw httpError(401, 'Your session has ended.');
  const response = await fetch(withBasePath(path), { cache: 'no-store' });
  const body = (await response.json().catch(() => null)) as (T & { message?: string }) | null;
  if (!response.ok) {
    if (response.status === 401) endSession();
    throw httpError(response.status, body?.message ?? `The server answered ${response.status}.`);
  }
  return body as T;
}

/** POSTs `body` to `path` (the dashboard's own, `/api/…`: under the base path). */
export async function postJson<T = ActionResultDTO>(
  path: string,
  body: unknown,
): Promise<T & { ok?: boolean; message?: string }> {
  const response = await fetch(withBasePath(path), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const parsed = (await response.json().catch(() => null)) as (T & { ok?: boolean; message?: string }) | null;
  if (!parsed)
    return { ok: false, message: `The server answered ${response.status} without a message.` } as T & {
      ok: boolean;
      message: string;
    };
  return parsed;
}

export const fetchOverview = () => getJson<OverviewDTO>('/api/overview');
export const fetchHealth = () => getJson<HealthDTO>('/api/health');
export const fetchQueueAlerts = () => getJson<QueueAlertsDTO>('/api/alerts');
export const fetchWorkers = () => getJson<WorkersDTO>('/api/workers');
export const fetchHistory = (range: string, queue: string | null) =>
  getJson<HistoryDTO>(
    `/api/history?range=${encodeURIComponent(range)}${queue ? `&queue=${encodeURIComponent(queue)}` : ''}`,
  );
export const fetchJobLive = (id: string) => getJson<JobLiveDTO>(`/api/jobs/${encodeURIComponent(id)}/progress`);
export const fetchFailures = () => getJson<{ groups: FailureGroupDTO[]; can: { retry: boolean } }>('/api/failures');
export const fetchKinds = () => getJson<KindsDTO>('/api/kinds');
/** `query`: the list's filter and `newerThan`, as URL parameters. */
export const fetchNewJobs = (query: string) => getJson<NewJobsDTO>(`/api/jobs/new?${query}`);
export const previewBulk = (body: unknown) => postJson<BulkPreviewDTO>('/api/bulk/preview', body);
export const previewGroup = (body: unknown) => postJson<BulkPreviewDTO>('/api/failures/preview', body);
export const applyBulk = (body: unknown) => postJson('/api/bulk/apply', body);

/**
 * POSTs `body` and takes the answer as a file (the CSV export): its bytes and the name its
 * Content-Disposition gives; a refusal (JSON) as its sentence.
 */
export async function postForFile(
  path: string,
  body: unknown,
  fallbackName: string,
): Promise<{ ok: true; blob: Blob; filename: string } | { ok: false; message: string }> {
  const response = await fetch(withBasePath(path), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (response.ok && !(response.headers.get('content-type') ?? '').startsWith('application/json')) {
    const named = /filename="([^"]+)"/.exec(response.headers.get('content-disposition') ?? '');
    return { ok: true, blob: await response.blob(), filename: named?.[1] ?? fallbackName };
  }
  const parsed: unknown = await response.json().catch(() => null);
  const message =
    typeof parsed === 'object' && parsed !== null && 'message' in parsed && typeof parsed.message === 'string'
      ? parsed.message
      : `The server answered ${response.status} without a message.`;
  return { ok: false, message };
}
