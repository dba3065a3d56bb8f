import { KindRedaction } from '../../../components/kind-redaction.tsx';
import { TableScroll } from '../../../components/table-scroll.tsx';
import { Time } from '../../../components/time.tsx';
import { PageError } from '../../../components/page-error.tsx';
import { getKinds } from '../../../lib/dal/index.ts';
import { load } from '../../../lib/page.ts';

export default async function KindsPage() {
  const loaded = await load(() => getKinds());
  return (
    <>
      <h1>Kinds</h1>
      <p className="muted">
        What the workers run, as each recorded it at start. Viewers and operators see masked: the paths the workers
        declared (which the dashboard cannot unmask), the paths an admin added for a kind (every version of it), the
        configured defaults and the usual secret keys. A kind version not listed here shows its payloads hidden whole.
      </p>
      {loaded.ok && (
        <p data-testid="default-paths">
          Configured for every kind (LEASEHOLD_REDACT_PATHS): {loaded.value.defaultPaths.join(', ') || 'none'}
        </p>
      )}
      {!loaded.ok ? (
        <PageError message={loaded.message} />
      ) : (
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
                <th>last seen</th>
              </tr>
            </thead>
            <tbody>
              {loaded.value.kinds.map((k) => (
                <tr key={`${k.kind}-${k.version}`} data-testid={`kind-${k.kind}-v${k.version}`}>
                  <td className="mono">{k.kind}</td>
                  <td className="num">{k.version}</td>
                  <td>{k.displayName}</td>
                  <td>{k.defaultQueue}</td>
                  <td>{k.rerunSafe ? 'yes' : 'no'}</td>
                  <td data-testid="declared-paths">{k.redactedPaths.join(', ') || '—'}</td>
                  <td data-testid="added-paths">
                    {loaded.value.can.editRedaction ? (
                      <KindRedaction kind={k.kind} version={k.version} added={k.addedPaths} />
                    ) : (
                      k.addedPaths.join(', ') || '—'
                    )}
                  </td>
                  <td>
                    <Time at={k.lastSeenAt} />
                  </td>
                </tr>
              ))}
              {loaded.value.kinds.length === 0 && (
                <tr>
                  <td colSpan={8}>No worker has registered a kind yet.</td>
                </tr>
              )}
            </tbody>
          </table>
        </TableScroll>
      )}
    </>
  );
}
