import type { SubState } from '../lib/dto.ts';

/** Exhaustive: a new state breaks the build until it has a label and a colour. */
const LOOK: Record<SubState, { label: string; className: string }> = {
  ready: { label: 'ready', className: 'badge ready' },
  scheduled: { label: 'scheduled', className: 'badge scheduled' },
  retrying: { label: 'retrying', className: 'badge retrying' },
  running: { label: 'running', className: 'badge running' },
  lease_expired: { label: 'lease expired', className: 'badge expired' },
  done: { label: 'done', className: 'badge done' },
  dead: { label: 'dead', className: 'badge dead' },
  cancelled: { label: 'cancelled', className: 'badge cancelled' },
};

export function StateBadge({ state }: { state: SubState }) {
  const look = LOOK[state];
  return (
    <span className={look.className} data-state={state}>
      {look.label}
    </span>
  );
}
