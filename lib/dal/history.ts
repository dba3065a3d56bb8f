import 'server-only';
/** A queue's history for the overview's charts (db/queries/history.ts; docs/dashboard.md, "History"). */
import { z } from 'zod';
import { isHistoryRange, queueHistory, type HistoryRange } from '../../db/queries/history.ts';
import { NAME_PATTERN } from '../../db/queue/validate.ts';
import { database } from '../db.ts';
import type { HistoryDTO } from '../dto.ts';
import { parse } from './input.ts';
import { authorize } from './policy.ts';
import { liveQuery } from '../live-cache.ts';

const historyInput = z.strictObject({
  range: z.custom<HistoryRange>(isHistoryRange, 'one of 1h, 24h, 7d, 90d').default('1h'),
  queue: z.string().regex(NAME_PATTERN, 'not a queue name').optional(),
});

/** Every viewer sees the same history: one cached read per range and queue (lib/live-cache.ts). */
const historyRead = liveQuery(
  'history',
  (range: HistoryRange, queue: string | null) => queueHistory(database(), range, queue),
  { maxEntries: 256 },
);

/** `range` (1h, 24h, 7d, 90d; 1h by default) of `queue`'s history, or every queue's without one. */
export async function getHistory(input: { range?: string | null; queue?: string | null }): Promise<HistoryDTO> {
  await authorize('getHistory');
  const { range, queue } = parse(
    historyInput,
    { ...(input.range ? { range: input.range } : {}), ...(input.queue ? { queue: input.queue } : {}) },
    'history',
  );
  const history = await historyRead.read(range, queue ?? null);
  return {
    generatedAt: new Date().toISOString(),
    range,
    bucketSeconds: history.bucketSeconds,
    queue: history.queue,
    points: history.points.map((p) => ({ ...p, at: p.at.toISOString() })),
  };
}
