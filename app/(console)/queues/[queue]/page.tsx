import Link from 'next/link';
import { GroupMaxForm, GroupPause } from '../../../../components/group-controls.tsx';
import { PageError } from '../../../../components/page-error.tsx';
import { PurgeDead } from '../../../../components/purge-dead.tsx';
import { TableScroll } from '../../../../components/table-scroll.tsx';
import { getQueueGroups } from '../../../../lib/dal/index.ts';
import type { GroupDTO } from '../../../../lib/dto.ts';
import { load } from '../../../../lib/page.ts';

const none = '—';
const count = (n: number) => n.toLocaleString('en');

/** A waiting age in words: seconds, minutes or hours. */
function age(ms: number | null): string {
  if (ms === null) return none;
  const s = ms / 1000;
  if (s < 120) return `${s.toFixed(1)} s`;
  if (s < 7200) return `${(s / 60).toFixed(1)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

/** The maximum the claims enforce, and where it comes from. */
function maxText(g: GroupDTO): string {
  if (g.max === null) return none;
  return g.ownMax === null ? `${count(g.max)} (the queue's default)` : count(g.max);
}

/** Its state in words: paused, at its limit, or neither. */
function stateText(g: GroupDTO): string {
  if (g.paused) return `paused${g.pausedReason ? ` (${g.pausedReason})` : ''}`;
  if (g.max !== null && g.running >= g.max) return `at its limit of ${count(g.max)}`;
  return none;
}

export default async function QueuePage(props: { params: Promise<{ queue: string }> }) {
  const { queue } = await props.params;
  const name = decodeURIComponent(queue);
  const loaded = await load(() => getQueueGroups({ queue: name }));
  return (
    <>
      <h1>
        Queue <span className="mono">{name}</span>
      </h1>
      <p className="muted">
        The queue&apos;s fair groups (a tenant or an account each): the groups take turns, and each may have a maximum
        of jobs running at once (the queue&apos;s default, or its own) or be paused. The 50 groups whose oldest ready
        job has waited longest are listed; the rest are summed as other.{' '}
        <Link href={`/jobs?queue=${encodeURIComponent(name)}`}>The queue&apos;s jobs</Link>.
      </p>
      {!loaded.ok ? (
        <PageError message={loaded.message} />
      ) : (
        <>
          <p data-testid="default-group-max">
            Default maximum for each group: {loaded.value.defaultMax === null ? 'none' : count(loaded.value.defaultMax)}
          </p>
          <TableScroll label="Groups">
            <table data-testid="groups-table">
              <thead>
                <tr>
                  <th>group</th>
                  <th className="num">waiting</th>
                  <th className="num">running</th>
                  <th className="num">oldest waiting</th>
                  <th className="num">maximum</th>
                  <th>state</th>
                  {loaded.value.can.pause && <th>pause</th>}
                </tr>
              </thead>
              <tbody>
                {loaded.value.groups.map((g) => (
                  <tr key={g.group} data-testid={`group-${g.group}`}>
                    <td className="mono">{g.group}</td>
                    <td className="num" data-testid="waiting">
                      {count(g.waiting)}
                    </td>
                    <td className="num" data-testid="running">
                      {count(g.running)}
                    </td>
                    <td className="num">{age(g.oldestWaitingMs)}</td>
                    <td className="num" data-testid="max">
                      {maxText(g)}
                    </td>
                    <td data-testid="state">{stateText(g)}</td>
                    {loaded.value.can.pause && (
                      <td>
                        <GroupPause queue={name} group={g.group} paused={g.paused} />
                      </td>
                    )}
                  </tr>
                ))}
                {loaded.value.other && (
                  <tr data-testid="groups-other">
                    <td>other ({count(loaded.value.other.groups)} groups)</td>
                    <td className="num">{count(loaded.value.other.waiting)}</td>
                    <td className="num">{count(loaded.value.other.running)}</td>
                    <td className="num">{age(loaded.value.other.oldestWaitingMs)}</td>
                    <td className="num">{none}</td>
                    <td>{none}</td>
                    {loaded.value.can.pause && <td />}
                  </tr>
                )}
                {loaded.value.groups.length === 0 && (
                  <tr>
                    <td colSpan={loaded.value.can.pause ? 7 : 6}>
                      No groups: no job of this queue names a group (group: &apos;acme&apos; at enqueue, or the job
                      contract&apos;s group function), and no group has a limit.
                    </td>
                  </tr>
                )}
              </tbody>
            </table>
          </TableScroll>
          {loaded.value.can.setMax && <GroupMaxForm queue={name} />}
          {loaded.value.can.purgeDead && <PurgeDead queue={name} />}
        </>
      )}
    </>
  );
}
