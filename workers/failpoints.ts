/**
 * Failpoints for the failure harness (`npm run chaos`): with LEASEHOLD_FAILPOINTS set, e.g.
 * `after_claim:0.05,before_ack:0.1`, the worker kills itself (SIGKILL, no cleanup) at that point
 * with that probability (default 1). Unset, each check is one Map lookup.
 *
 * Points: after_claim (leased, handler not started), after_effect (handler done, not yet
 * acknowledged), before_ack (acknowledgement about to be sent), in_heartbeat (heartbeat about
 * to be sent), in_reap (inside the reaper's transaction, before it commits).
 *
 * One point breaks a guard instead of killing the process, so that the harness can prove it
 * notices (`npx tsx chaos/run.ts --self-test`): `unguarded_claim` claims with a statement of
 * its own (claimWithoutReadyGuard, db/queue/transitions/unguarded-claim.ts; not the library's)
 * that lacks `state = 'ready'`, so it also takes jobs other attempts are running under a lease
 * that still holds. Nothing reaches it
 * but a LEASEHOLD_FAILPOINTS that names it: no setting, flag or default does, and a worker that
 * has it armed says so at error level when it starts (workers/main.ts).
 */
import { LeaseholdRefusal } from '../db/errors.ts';
// The guard-skipping claim is a transition of its own, reachable from here alone.
export { claimWithoutReadyGuard } from '../db/queue/transitions/unguarded-claim.ts';

/** Points where the worker kills itself. */
export const CRASH_POINTS = ['after_claim', 'after_effect', 'before_ack', 'in_heartbeat', 'in_reap'] as const;
/** Points where the worker skips a guard (the harness's self-test only). */
export const GUARD_SKIPS = ['unguarded_claim'] as const;
export const FAILPOINTS = [...CRASH_POINTS, ...GUARD_SKIPS] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];
export type GuardSkip = (typeof GUARD_SKIPS)[number];
export type Failpoint = (typeof FAILPOINTS)[number];

/** A LEASEHOLD_FAILPOINTS value that names an unknown point or a bad probability. */
export class FailpointSpecError extends LeaseholdRefusal {
  override readonly name = 'FailpointSpecError';
  readonly code = 'invalid_failpoints';
}

export function parseFailpoints(spec: string | undefined): Map<Failpoint, number> {
  const points = new Map<Failpoint, number>();
  for (const part of (spec ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const [name, p] = part.split(':');
    if (!FAILPOINTS.includes(name as Failpoint))
      throw new FailpointSpecError(`unknown failpoint "${name}" (known: ${FAILPOINTS.join(', ')})`);
    const probability = p === undefined ? 1 : Number(p);
    if (!(probability >= 0 && probability <= 1))
      throw new FailpointSpecError(`failpoint ${name}: probability must be 0..1, got ${p}`);
    points.set(name as Failpoint, probability);
  }
  return points;
}

export class Failpoints {
  constructor(private readonly points: Map<Failpoint, number> = new Map()) {}

  /** Kills this process at `point` if armed (and the dice say so). */
  hit(point: CrashPoint): void {
    const p = this.points.get(point);
    if (p !== undefined && Math.random() < p) {
      process.stderr.write(`failpoint ${point}: SIGKILL\n`);
      process.kill(process.pid, 'SIGKILL');
    }
  }

  /** True when this time the guard `point` names is to be skipped (armed, and the dice say so). */
  skips(point: GuardSkip): boolean {
    const p = this.points.get(point);
    return p !== undefined && Math.random() < p;
  }

  /** The guard-skipping points armed here (workers/main.ts says so at start). */
  guardSkips(): GuardSkip[] {
    return GUARD_SKIPS.filter((g) => this.points.has(g));
  }
}
