import type { ReactNode } from 'react';
import { LimitEditor } from '../../../components/limit-editor.tsx';
import { PageError } from '../../../components/page-error.tsx';
import { TableScroll } from '../../../components/table-scroll.tsx';
import { Time } from '../../../components/time.tsx';
import { getLimits } from '../../../lib/dal/index.ts';
import type { LimitDTO } from '../../../lib/dto.ts';
import { load } from '../../../lib/page.ts';

const none = '—';
const count = (n: number) => n.toLocaleString('en');
const value = (v: number | string | null) => (v === null ? none : typeof v === 'number' ? count(v) : v);
/** Who set the run-time values, and when; none while only the declaration applies. */
function setBy(l: LimitDTO): ReactNode {
  if (l.set.max === null && l.set.rate === null) return none;
  if (l.setAt === null) return l.setBy ?? none;
  return l.setBy ? (
    <>
      {l.setBy}, <Time at={l.setAt} />
    </>
  ) : (
    <Time at={l.setAt} />
  );
}

/** Starts in the rate's current window, and when the next may start while the window is full. */
function started(l: LimitDTO): ReactNode {
  if (l.enforced.rate === null) return none;
  if (l.nextStartAt === null) return count(l.started);
  return (
    <>
      {count(l.started)} (full; next start <Time at={l.nextStartAt} />)
    </>
  );
}

function paused(l: LimitDTO): ReactNode {
  if (l.pausedUntil === null) return none;
  return (
    <>
      <Time at={l.pausedUntil} />
      {l.pausedReason ? ` (${l.pausedReason})` : ''}
    </>
  );
}

export default async function LimitsPage() {
  const loaded = await load(() => getLimits());
  const canSet = loaded.ok && loaded.value.can.set;
  const columns = canSet ? 14 : 13;
  return (
    <>
      <h1>Limits</h1>
      <p className="muted">
        How many attempts of a queue, a kind or a named resource may hold a lease at once (maximum), and how many may
        start in any interval (rate), across every worker. The handlers declare them, a worker its queue limits; an
        admin may set a run-time value, which wins over the declaration until cleared (recorded in the audit log). A job
        that waits for a limit says so on its page and in the job list.
      </p>
      {!loaded.ok ? (
        <PageError message={loaded.message} />
      ) : (
        <TableScroll label="Limits">
          <table data-testid="limits-table">
            <thead>
              <tr>
                <th>limit</th>
                <th className="num">declared max</th>
                <th>declared rate</th>
                <th className="num">run-time max</th>
                <th>run-time rate</th>
                <th>set by</th>
                <th className="num">enforced max</th>
                <th>enforced rate</th>
                <th className="num">running</th>
                <th className="num">waiting</th>
                <th>started in the rate’s window</th>
                <th>paused until</th>
                <th>counts</th>
                {canSet && <th>change</th>}
              </tr>
            </thead>
            <tbody>
              {loaded.value.limits.map((l) => (
                <tr key={l.key} data-testid={`limit-${l.key}`}>
                  <td className="mono">{l.key}</td>
                  <td className="num">{value(l.declared.max)}</td>
                  <td>{value(l.declared.rate)}</td>
                  <td className="num">{value(l.set.max)}</td>
                  <td>{value(l.set.rate)}</td>
                  <td data-testid="set-by">{setBy(l)}</td>
                  <td className="num" data-testid="enforced-max">
                    {value(l.enforced.max)}
                  </td>
                  <td data-testid="enforced-rate">{value(l.enforced.rate)}</td>
                  <td className="num" data-testid="running">
                    {count(l.running)}
                  </td>
                  <td className="num" data-testid="waiting">
                    {l.waitingCapped ? `at least ${count(l.waiting)}` : count(l.waiting)}
                  </td>
                  <td>{started(l)}</td>
                  <td data-testid="paused-until">{paused(l)}</td>
                  <td>{l.scope === 'queue' ? `every kind of queue ${l.name}` : l.kinds.join(', ') || none}</td>
                  {canSet && (
                    <td>
                      <LimitEditor limit={l} />
                    </td>
                  )}
                </tr>
              ))}
              {loaded.value.limits.length === 0 && (
                <tr>
                  <td colSpan={columns}>
                    No limits yet: a handler declares one (limit: {'{ max }'}, {'{ rate }'} or {'{ resource, max }'}),
                    or a worker its queue limits, and it shows here once such a worker has started.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
        </TableScroll>
      )}
    </>
  );
}
