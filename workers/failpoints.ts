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
 * that still holds. Nothing reaches it but a LEASEHOLD_FAILPOINTS that names it, in a worker run
 * from the repository's sources: no setting, flag or default does; the installed package does
 * not have the statement at all (GUARD_SKIPPING_CLAIM_MODULE), so its worker refuses the point;
 * and a worker that has it armed says so at error level when it starts (workers/run-process.ts).
 */
import { existsSync } from 'node:fs';
import { LeaseholdRefusal } from '../db/errors.ts';
import type { ClaimedJob, Executor } from '../db/queue/index.ts';

/** Points where the worker kills itself. */
export const CRASH_POINTS = ['after_claim', 'after_effect', 'before_ack', 'in_heartbeat', 'in_reap'] as const;
/** Points where the worker skips a guard (the harness's self-test only). */
export const GUARD_SKIPS = ['unguarded_claim'] as const;
export const FAILPOINTS = [...CRASH_POINTS, ...GUARD_SKIPS] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];
export type GuardSkip = (typeof GUARD_SKIPS)[number];
export type Failpoint = (typeof FAILPOINTS)[number];

/**
 * A LEASEHOLD_FAILPOINTS value that names an unknown point or a bad probability, or
 * `unguarded_claim` where its statement is not (an installed package).
 */
export class FailpointSpecError extends LeaseholdRefusal {
  override readonly name = 'FailpointSpecError';
  readonly code = 'invalid_failpoints';
}

/** What `unguarded_claim` runs instead of the library's claim: claimWithoutReadyGuard. */
export type GuardSkippingClaim = (
  executor: Executor,
  options: { queues: string[]; workerId: string; limit: number; leaseSeconds: number },
) => Promise<ClaimedJob[]>;

/**
 * Where the guard-skipping claim is in the repository's sources, from this file. It is loaded
 * by this address when armed, never imported, so that it is no transition the installed package
 * can reach: tsc does not follow an address into dist/ (npm run build:package), package.json's
 * `files` leave the source out, and from dist/workers/ the address names a
 * dist/db/…/unguarded-claim.ts that no build writes. test/unguarded-claim-reach.test.ts holds
 * all three.
 */
export const GUARD_SKIPPING_CLAIM_MODULE = new URL('../db/queue/transitions/unguarded-claim.ts', import.meta.url);

/** What a worker says when LEASEHOLD_FAILPOINTS names `unguarded_claim` and the module is absent. */
export const UNGUARDED_CLAIM_ABSENT =
  'failpoint unguarded_claim is not in an installed Leasehold: it breaks the queue on purpose, and only a worker ' +
  "run from Leasehold's own repository (the failure harness's self-test) can arm it";

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

/**
 * The failpoints a LEASEHOLD_FAILPOINTS value arms: parsed, and `unguarded_claim`'s statement
 * loaded from `claimModule` when the value names it. Refuses (FailpointSpecError, exit code 2)
 * when that statement is not there.
 */
export async function armFailpoints(spec: string, claimModule = GUARD_SKIPPING_CLAIM_MODULE): Promise<Failpoints> {
  const points = parseFailpoints(spec);
  if (!points.has('unguarded_claim')) return new Failpoints(points);
  if (!existsSync(claimModule)) throw new FailpointSpecError(UNGUARDED_CLAIM_ABSENT);
  const loaded: { claimWithoutReadyGuard: GuardSkippingClaim } = await import(claimModule.href);
  return new Failpoints(points, loaded.claimWithoutReadyGuard);
}

export class Failpoints {
  constructor(
    private readonly points: Map<Failpoint, number> = new Map(),
    private readonly guardSkippingClaim: GuardSkippingClaim | null = null,
  ) {
    if (points.has('unguarded_claim') && !guardSkippingClaim)
      throw new FailpointSpecError('failpoint unguarded_claim needs its statement: arm it with armFailpoints()');
  }

  /** Kills this process at `point` if armed (and the dice say so). */
  hit(point: CrashPoint): void {
    const p = this.points.get(point);
    if (p !== undefined && Math.random() < p) {
      process.stderr.write(`failpoint ${point}: SIGKILL\n`);
      process.kill(process.pid, 'SIGKILL');
    }
  }

  /**
   * The claim to run this time instead of the library's: the guard-skipping one when
   * `unguarded_claim` is armed and the dice say so, else null.
   */
  claimSkippingGuard(): GuardSkippingClaim | null {
    const p = this.points.get('unguarded_claim');
    return this.guardSkippingClaim && p !== undefined && Math.random() < p ? this.guardSkippingClaim : null;
  }

  /** The guard-skipping points armed here (workers/main.ts says so at start). */
  guardSkips(): GuardSkip[] {
    return GUARD_SKIPS.filter((g) => this.points.has(g));
  }
}
