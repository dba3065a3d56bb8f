/**
 * Failpoints for the failure harness (`npm run chaos`): with LEASEHOLD_FAILPOINTS set, e.g.
 * `after_claim:0.05,before_ack:0.1`, the worker kills itself (SIGKILL, no cleanup) at that point
 * with that probability (default 1). Unset, each check is one Map lookup.
 *
 * Points: after_claim (leased, handler not started), after_effect (handler done, not yet
 * acknowledged), before_ack (acknowledgement about to be sent), in_heartbeat (heartbeat about
 * to be sent), in_reap (inside the reaper's transaction, before it commits).
 */
export const FAILPOINTS = ['after_claim', 'after_effect', 'before_ack', 'in_heartbeat', 'in_reap'] as const;
export type Failpoint = (typeof FAILPOINTS)[number];

/** A LEASEHOLD_FAILPOINTS value that names an unknown point or a bad probability. */
export class FailpointSpecError extends Error {
  override readonly name = 'FailpointSpecError';
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
  hit(point: Failpoint): void {
    const p = this.points.get(point);
    if (p !== undefined && Math.random() < p) {
      process.stderr.write(`failpoint ${point}: SIGKILL\n`);
      process.kill(process.pid, 'SIGKILL');
    }
  }
}
