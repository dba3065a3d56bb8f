'use client';
import { useQuery } from '@tanstack/react-query';
import type { KindsDTO } from '../lib/dto.ts';
import { KindRedaction } from './kind-redaction.tsx';
import { KindSearch } from './kind-search.tsx';
import { fetchKinds, poll, POLL, queryKeys } from './queries.ts';
import { TableScroll } from './table-scroll.tsx';
import { Time } from './time.tsx';

/**
 * The Kinds page's body: the configured paths and the registry. The server renders it; it
 * polls GET /api/kinds every POLL.kinds ms while the tab is visible (a worker that starts with
 * a new kind version shows up without a reload).
 */
export function KindsPanel({ initial }: { initial: KindsDTO }) {
  const { data, error } = useQuery({
    queryKey: queryKeys.kinds,
    queryFn: fetchKinds,
    initialData: initial,
    staleTime: POLL.kinds,
    refetchInterval: poll(POLL.kinds),
  });
  return (
    <>
      {error && (
        <p className="error" role="alert">
          Could not refresh the kinds: {error.message}
        </p>
      )}
      <p data-testid="default-paths">
        Configured for every kind (LEASEHOLD_REDACT_PATHS): {data.defaultPaths.join(', ') || 'none'}
      </p>
      <TableScroll label="Kinds">
        <table data-testid="kinds-table">
          <thead>
            <tr>
              <th>kind</th>
              <th className="num">version</th>
              <th>name</th>
              <th>default queue</th>
              <th>re-run safe</th>
              <th>declared by workers</th>
              <th>added by admins</th>
              <th>searchable paths</th>
              <th>last seen</th>
            </tr>
          </thead>
          <tbody>
            {data.kinds.map((k) => (
              <tr key={`${k.kind}-${k.version}`} data-testid={`kind-${k.kind}-v${k.version}`}>
                <td className="mono">{k.kind}</td>
                <td className="num">{k.version}</td>
                <td>{k.displayName}</td>
                <td>{k.defaultQueue}</td>
                <td>{k.rerunSafe ? 'yes' : 'no'}</td>
                <td data-testid="declared-paths">{k.redactedPaths.join(', ') || '—'}</td>
                <td data-testid="added-paths">
                  {data.can.editRedaction ? (
                    <KindRedaction kind={k.kind} version={k.version} added={k.addedPaths} />
                  ) : (
                    k.addedPaths.join(', ') || '—'
                  )}
                </td>
                <td data-testid="searchable-paths">
                  <KindSearch kind={k.kind} version={k.version} paths={k.searchPaths} edit={data.can.editSearch} />
                </td>
                <td>
                  <Time at={k.lastSeenAt} />
                </td>
              </tr>
            ))}
            {data.kinds.length === 0 && (
              <tr>
                <td colSpan={9}>No worker has registered a kind yet.</td>
              </tr>
            )}
          </tbody>
        </table>
      </TableScroll>
    </>
  );
}
