import { BulkActions, BulkResults } from '../../../components/bulk-actions.tsx';
import { TableScroll } from '../../../components/table-scroll.tsx';
import { Time } from '../../../components/time.tsx';
import { PageError } from '../../../components/page-error.tsx';
import { getFailureGroups } from '../../../lib/dal/index.ts';
import { load } from '../../../lib/page.ts';
import { dayLabel } from '../../../lib/time-format.ts';
import { withBasePath } from '../../../components/base-path.ts';

export default async function FailuresPage() {
  const loaded = await load(getFailureGroups);
  if (!loaded.ok) return <PageError message={loaded.message} />;
  const { groups, can } = loaded.value;
  return (
    <>
      <h1>Failures</h1>
      <p className="muted">
        The latest 10,000 dead jobs of the last 7 days, grouped by failure class and error (numbers and ids folded).
        “Retry this group” takes every dead job of the group in those 7 days, up to 1,000.
      </p>
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
