/**
 * Prometheus text: depth by queue and state, oldest ready age, dead jobs by class. Behind a
 * bearer token (LEASEHOLD_METRICS_TOKEN); without one configured the endpoint is off.
 */
import { timingSafeEqual } from 'node:crypto';
import { backlog, deadByClass } from '../../../db/queries/overview';
import { database } from '../../../lib/db';
import { webEnv } from '../../../lib/env';

export const dynamic = 'force-dynamic';

const label = (value: string) => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

export async function GET(request: Request) {
  const token = webEnv().metricsToken;
  if (!token) return new Response('metrics are off: set LEASEHOLD_METRICS_TOKEN\n', { status: 404 });
  const given = (request.headers.get('authorization') ?? '').replace(/^Bearer\s+/i, '');
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  if (a.length !== b.length || !timingSafeEqual(a, b)) {
    return new Response('unauthorized\n', { status: 401, headers: { 'www-authenticate': 'Bearer' } });
  }
  try {
    const [queues, dead] = await Promise.all([backlog(database()), deadByClass(database())]);
    const lines = [
      '# HELP leasehold_queue_jobs Jobs by queue and (sub-)state.',
      '# TYPE leasehold_queue_jobs gauge',
      ...queues.flatMap((q) =>
        (['ready', 'scheduled', 'retrying', 'running', 'leaseExpired', 'dead', 'cancelled'] as const).map(
          (state) =>
            `leasehold_queue_jobs{queue="${label(q.queue)}",state="${state === 'leaseExpired' ? 'lease_expired' : state}"} ${q[state]}`,
        ),
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
      '# HELP leasehold_dead_jobs Dead jobs by queue and failure class.',
      '# TYPE leasehold_dead_jobs gauge',
      ...dead.map(
        (d) => `leasehold_dead_jobs{queue="${label(d.queue)}",failure_class="${label(d.failureClass)}"} ${d.count}`,
      ),
    ];
    return new Response(`${lines.join('\n')}\n`, { headers: { 'content-type': 'text/plain; version=0.0.4' } });
  } catch (error) {
    console.error('[metrics] failed', error);
    return new Response('metrics unavailable: database error\n', { status: 503 });
  }
}
