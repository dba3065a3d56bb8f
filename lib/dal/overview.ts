import 'server-only';
/** The overview: backlog per queue, throughput, attempts, failure classes, live workers. */
import { overview } from '../../db/queries/overview';
import { database } from '../db';
import type { OverviewDTO } from '../dto';
import { authorize, permits } from './policy';

export async function getOverview(): Promise<OverviewDTO> {
  const user = await authorize('getOverview');
  const o = await overview(database());
  return {
    generatedAt: o.generatedAt.toISOString(),
    queues: o.queues,
    attempts: o.attempts,
    failureClasses: o.failureClasses,
    throughput: o.throughput.map((t) => ({ ...t, minute: t.minute.toISOString() })),
    workers: o.workers.map((w) => ({
      ...w,
      startedAt: w.startedAt.toISOString(),
      lastSeenAt: w.lastSeenAt.toISOString(),
    })),
    can: { pause: permits(user, 'setQueuePaused') },
  };
}
