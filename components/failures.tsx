'use client';
import { useQuery } from '@tanstack/react-query';
import type { FailureGroupDTO } from '../lib/dto.ts';
import { withBasePath } from './base-path.ts';
import { BulkActions, BulkResults } from './bulk-actions.tsx';
import { fetchFailures, poll, POLL, queryKeys } from './queries.ts';
import { TableScroll } from './table-scroll.tsx';
import { Time } from './time.tsx';
import { dayLabel } from '../lib/time-format.ts';

type Failures = { groups: FailureGroupDTO[]; can: { retry: boolean } };

/**
 * The Failures page's table: the server renders it; it polls GET /api/failures every
 * POLL.failures ms while the tab is visible.
 */
export function FailuresPanel({ initial }: { initial: Failures }) {
  const { data, error } = useQuery({
    queryKey: queryKeys.failures,
    queryFn: fetchFailures,
    initialData: initial,
    staleTime: POLL.failures,
    refetchInterval: poll(POLL.failures),
  });
  const { groups, can } = data;
  return (
    <>
      <p className="muted">Refreshes every {POLL.failures / 1000} s.</p>
      {error && (
        <p className="error" role="alert">
          Could not refresh the failures: {error.message}
        </p>
      )}
      <BulkResults>
        <TableScroll label="Failure groups">
          <table data-testid="failure-groups">
            <thead>
              <tr>
                <th>class</th>
                <th>error</th>
                <th>queue / kind</th>
                <th className="num">jobs</th>
                <th>per day (UTC)</th>
                <th>last seen</th>
                <th>
                  <span className="visually-hidden">actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {groups.map((g) => (
                <tr key={`${g.failureClass}:${g.fingerprint}`}>
                  <td>{g.failureClass}</td>
                  <td className="mono">{g.example.slice(0, 160)}</td>
                  <td>
                    {g.queue} / {g.kind}
                  </td>
                  <td className="num">
                    <a
                      href={withBasePath(
                        `/jobs?state=dead&queue=${encodeURIComponent(g.queue)}${g.failureClass === 'unknown' ? '' : `&failureClass=${encodeURIComponent(g.failureClass)}`}`,
                      )}
                    >
                      {g.count}
                    </a>
                  </td>
                  <td className="mono">{g.trend.map((t) => `${dayLabel(t.day, 'UTC')}: ${t.count}`).join(' · ')}</td>
                  <td>{g.lastSeen ? <Time at={g.lastSeen} /> : ''}</td>
                  <td>
                    {can.retry && (
                      <BulkActions
                        source={{ kind: 'group', failureClass: g.failureClass, fingerprint: g.fingerprint }}
                        actions={['retry']}
                      />
                    )}
                  </td>
                </tr>
              ))}
              {groups.length === 0 && (
                <tr>
                  <td colSpan={7}>No dead jobs in the last 7 days.</td>
                </tr>
              )}
            </tbody>
          </table>
        </TableScroll>
      </BulkResults>
    </>
  );
}
