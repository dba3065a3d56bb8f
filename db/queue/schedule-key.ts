/**
 * A schedule tick's job key, `leasehold:schedule:<name>@<tick ISO time>` (drizzle/0022,
 * run_schedule_ticks), and the tick read back from it: what a handler's `ctx.scheduled` says.
 * Apart from db/queue/schedules.ts so that an isolated handler's thread reads it without croner.
 */

/** The prefix of a tick's idempotency key. */
export const SCHEDULE_KEY_PREFIX = 'leasehold:schedule:';

/** The schedule and tick a job was enqueued for, from its key; null for a job not from a schedule. */
export function scheduledTick(idempotencyKey: string | null): { schedule: string; tickAt: Date } | null {
  if (!idempotencyKey?.startsWith(SCHEDULE_KEY_PREFIX)) return null;
  const rest = idempotencyKey.slice(SCHEDULE_KEY_PREFIX.length);
  const at = rest.lastIndexOf('@');
  if (at <= 0) return null;
  const tickAt = new Date(rest.slice(at + 1));
  return Number.isNaN(tickAt.getTime()) ? null : { schedule: rest.slice(0, at), tickAt };
}
