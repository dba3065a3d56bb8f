'use client';
/**
 * React Query keys, fetchers and polling intervals, in one place. Polling pauses while the tab
 * is hidden (refetchIntervalInBackground stays false).
 */
import type {
  ActionResultDTO,
  BulkPreviewDTO,
  HealthDTO,
  HistoryDTO,
  JobLiveDTO,
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
} as const;

export const queryKeys = {
  overview: ['overview'] as const,
  health: ['health'] as const,
  alerts: ['alerts'] as const,
  workers: ['workers'] as const,
  history: (range: string, queue: string | null) => ['history', range, queue] as const,
  /** A job's live state and progress, per server render of its page (`readAt` names the render). */
  jobLive: (id: string, readAt: string) => ['job-live', id, readAt] as const,
};

/** GETs `path` (the dashboard's own, `/api/…`: under the base path). */
async function getJson<T>(path: string): Promise<T> {
  const response = await fetch(withBasePath(path), { cache: 'no-store' });
  const body = (await response.json().catch(() => null)) as (T & { message?: string }) | null;
  if (!response.ok) throw new Error(body?.message ?? `The server answered ${response.status}.`);
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
export const previewBulk = (body: unknown) => postJson<BulkPreviewDTO>('/api/bulk/preview', body);
export const previewGroup = (body: unknown) => postJson<BulkPreviewDTO>('/api/failures/preview', body);
export const applyBulk = (body: unknown) => postJson('/api/bulk/apply', body);
