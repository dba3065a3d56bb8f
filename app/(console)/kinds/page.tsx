import { KindRedaction } from '../../../components/kind-redaction.tsx';
import { PageError } from '../../../components/page-error.tsx';
import { getKinds } from '../../../lib/dal/index.ts';
import { load } from '../../../lib/page.ts';

export default async function KindsPage() {
  const loaded = await load(() => getKinds());
  return (
    <>
      <h1>Kinds</h1>
      <p className="muted">
        What the workers run, as each recorded it at start. Redacted paths are masked for viewers and operators; workers
        only add paths, an admin may remove them. A kind version not listed here shows its payloads hidden whole.
      </p>
      {!loaded.ok ? (
        <PageError message={loaded.message} />
      ) : (
        <table data-testid="kinds-table">
          <thead>
            <tr>
              <th>kind</th>
              <th className="num">version</th>
              <th>name</th>
              <th>default queue</th>
              <th>re-run safe</th>
              <th>redacted paths</th>
              <th>last seen</th>
            </tr>
          </thead>
          <tbody>
            {loaded.value.kinds.map((k) => (
              <tr key={`${k.kind}-${k.version}`}>
                <td className="mono">{k.kind}</td>
                <td className="num">{k.version}</td>
                <td>{k.displayName}</td>
                <td>{k.defaultQueue}</td>
                <td>{k.rerunSafe ? 'yes' : 'no'}</td>
                <td>
                  {loaded.value.can.editRedaction ? (
                    <KindRedaction kind={k.kind} version={k.version} paths={k.redactedPaths} />
                  ) : (
                    k.redactedPaths.join(', ') || '—'
                  )}
                </td>
                <td>{new Date(k.lastSeenAt).toLocaleString()}</td>
              </tr>
            ))}
            {loaded.value.kinds.length === 0 && (
              <tr>
                <td colSpan={7}>No worker has registered a kind yet.</td>
              </tr>
            )}
          </tbody>
        </table>
      )}
    </>
  );
}
