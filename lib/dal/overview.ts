import 'server-only';
/**
 * The overview (backlog per queue, attempts, failure classes, live workers) and
 * the metrics /api/metrics renders from the same read models.
 */
import { groupedQueueNames, listGroups, listLimits, listSchedules } from '../../db/queue/index.ts';
import { backlog, deadByClass, overview } from '../../db/queries/overview.ts';
import { readHealth } from '../../db/queries/health.ts';
import { database } from '../db.ts';
import type { GroupMetricsDTO, MetricsDTO, OverviewDTO } from '../dto.ts';
import { queueAlertsOf } from './health.ts';
import { liveQuery } from '../live-cache.ts';
import { authorize, authorizeMetricsToken, permits } from './policy.ts';

/** The overview's read, the same for every role (only `can` is the viewer's): shared by every tab. */
const overviewRead = liveQuery('overview', async () => {
  const o = await overview(database());
  return { o, alerts: await queueAlertsOf(o.queues) };
});

export async function getOverview(): Promise<OverviewDTO> {
  const user = await authorize('getOverview');
  const { o, alerts } = await overviewRead.read();
  return {
    generatedAt: o.generatedAt.toISOString(),
    queues: o.queues,
    attempts: o.attempts,
    failureClasses: o.failureClasses,
    workers: o.workers.map((w) => ({
      ...w,
      startedAt: w.startedAt.toISOString(),
      lastSeenAt: w.lastSeenAt.toISOString(),
    })),
    waitingForKind: o.waitingForKind,
    alerts: alerts.filter((a) => a.firing),
    can: { pause: permits(user, 'setQueuePaused') },
  };
}

/** For a scraper: `authorization` is the request's Authorization header (`Bearer <token>`). */
export async function getMetrics(authorization: string | null): Promise<MetricsDTO> {
  authorizeMetricsToken('getMetrics', authorization);
  // The health read has the NOTIFY queue's usage too: not read a second time.
  const [queues, dead, limits, schedules, health] = await Promise.all([
    backlog(database()),
    deadByClass(database()),
    listLimits(database()),
    listSchedules(database()),
    readHealth(database(), { admin: false }),
  ]);
  const holder = health.holders[0];
  return {
    queues,
    dead,
    notifyQueueUsage: health.notifyQueueUsage,
    limits: limits.map((l) => ({
      limit: l.key,
      max: l.max,
      running: l.running,
      waiting: l.waiting,
      startsLeft: l.rate === null ? null : Math.max(0, l.rate.max - l.started),
      paused: l.pausedUntil !== null,
    })),
    groups: await groupMetrics(),
    schedules: schedules.map((s) => ({
      schedule: s.name,
      lastTickAgeSeconds: s.lastTickAgeMs === null ? null : s.lastTickAgeMs / 1000,
      overdueSeconds: s.overdueMs / 1000,
      paused: s.paused,
    })),
    alerts: (await queueAlertsOf(queues)).map((a) => ({
      queue: a.queue,
      alert: a.alert,
      threshold: a.threshold,
      firing: a.firing,
    })),
    health: {
      checks: health.checks.map((c) => ({ check: c.check, state: c.state })),
      tables: health.tables.map((t) => ({
        table: t.table,
        liveTuples: t.liveTuples,
        deadTuples: t.deadTuples,
        bytes: t.tableBytes + t.indexBytes,
        bloatBytes: t.bloatBytes,
      })),
      horizonAgeSeconds: holder?.ageSeconds ?? null,
      horizonXidAge: holder ? holder.xidAge : health.activityReadable ? 0 : null,
      autovacuum: health.autovacuum,
      connections: health.connections,
    },
  };
}

/** The groups listed by name per queue in the metrics; the rest are one `other` series. */
export const GROUP_METRICS_TOP = 10;

/** Per queue with groups: its first GROUP_METRICS_TOP groups by oldest waiting job, then the rest summed. */
async function groupMetrics(): Promise<GroupMetricsDTO[]> {
  const out: GroupMetricsDTO[] = [];
  for (const queue of await groupedQueueNames(database())) {
    const listed = await listGroups(database(), { queue, top: GROUP_METRICS_TOP });
    const seconds = (ms: number | null) => (ms === null ? 0 : ms / 1000);
    for (const g of listed.groups) {
      out.push({
        queue,
        group: g.group,
        waiting: g.waiting,
        running: g.running,
        oldestWaitingSeconds: seconds(g.oldestWaitingMs),
        max: g.max,
        paused: g.paused,
      });
    }
    if (listed.other) {
      const { waiting, running, oldestWaitingMs } = listed.other;
      const oldestWaitingSeconds = seconds(oldestWaitingMs);
      out.push({ queue, group: null, waiting, running, oldestWaitingSeconds, max: null, paused: false });
    }
  }
  return out;
}
