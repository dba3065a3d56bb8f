/**
 * Prometheus text exposition (format 0.0.4) of the metrics DTO: depth by queue and (sub-)state,
 * completions in the last hour, oldest ready age, paused flags, jobs waiting for a kind no live
 * worker runs, dead jobs by class, the NOTIFY queue's usage. The names,
 * order and label spelling are what scrapers and dashboards already query: change none lightly.
 */
import type { MetricsDTO, QueueDTO } from './dto.ts';

const label = (value: string) => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

/** The backlog's sub-state counts, by their metric label. */
const STATE_LABELS = [
  ['ready', 'ready'],
  ['scheduled', 'scheduled'],
  ['retrying', 'retrying'],
  ['running', 'running'],
  ['leaseExpired', 'lease_expired'],
  ['dead', 'dead'],
  ['cancelled', 'cancelled'],
] as const satisfies readonly (readonly [keyof QueueDTO, string])[];

export function metricsText({ queues, dead, notifyQueueUsage }: MetricsDTO): string {
  const lines = [
    '# HELP leasehold_queue_jobs Jobs by queue and (sub-)state.',
    '# TYPE leasehold_queue_jobs gauge',
    ...queues.flatMap((q) =>
      STATE_LABELS.map(([key, state]) => `leasehold_queue_jobs{queue="${label(q.queue)}",state="${state}"} ${q[key]}`),
    ),
    '# HELP leasehold_queue_done_last_hour Jobs completed in the last hour.',
    '# TYPE leasehold_queue_done_last_hour gauge',
    ...queues.map((q) => `leasehold_queue_done_last_hour{queue="${label(q.queue)}"} ${q.doneLastHour}`),
    '# HELP leasehold_queue_oldest_ready_age_seconds Age of the oldest due ready job (queue lag).',
    '# TYPE leasehold_queue_oldest_ready_age_seconds gauge',
    ...queues.map(
      (q) => `leasehold_queue_oldest_ready_age_seconds{queue="${label(q.queue)}"} ${q.oldestReadyAgeSeconds ?? 0}`,
    ),
    '# HELP leasehold_queue_paused Whether the queue is paused.',
    '# TYPE leasehold_queue_paused gauge',
    ...queues.map((q) => `leasehold_queue_paused{queue="${label(q.queue)}"} ${q.paused ? 1 : 0}`),
    '# HELP leasehold_queue_jobs_waiting_for_kind Ready jobs whose kind version no live worker runs.',
    '# TYPE leasehold_queue_jobs_waiting_for_kind gauge',
    ...queues.map((q) => `leasehold_queue_jobs_waiting_for_kind{queue="${label(q.queue)}"} ${q.waitingForKind}`),
    '# HELP leasehold_dead_jobs Dead jobs by queue and failure class.',
    '# TYPE leasehold_dead_jobs gauge',
    ...dead.map(
      (d) => `leasehold_dead_jobs{queue="${label(d.queue)}",failure_class="${label(d.failureClass)}"} ${d.count}`,
    ),
    '# HELP leasehold_notify_queue_usage Share of the server’s NOTIFY queue in use (0 to 1); at 0.5 or more enqueues send no wake-ups.',
    '# TYPE leasehold_notify_queue_usage gauge',
    `leasehold_notify_queue_usage ${notifyQueueUsage}`,
  ];
  return `${lines.join('\n')}\n`;
}
