import { PageError } from '../../../components/page-error.tsx';
import { TableScroll } from '../../../components/table-scroll.tsx';
import { Time } from '../../../components/time.tsx';
import { getAudit } from '../../../lib/dal/index.ts';
import { load } from '../../../lib/page.ts';
import { dropEmpty } from '../../../lib/search-params.ts';
import { withBasePath } from '../../../components/base-path.ts';

export default async function AuditPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const params = dropEmpty(await searchParams);
  const loaded = await load(() => getAudit(params));
  return (
    <>
      <h1>Audit log</h1>
      <form className="filters" method="get">
        <label>
          Who <input name="actor" defaultValue={params.actor ?? ''} />
        </label>
        <label>
          Action <input name="action" defaultValue={params.action ?? ''} placeholder="retry, cancel, bulk_retry…" />
        </label>
        <button type="submit">Filter</button>
      </form>
      {!loaded.ok ? (
        <PageError message={loaded.message} />
      ) : (
        <>
          <TableScroll label="Audit log">
            <table data-testid="audit-table">
              <thead>
                <tr>
                  <th>when</th>
                  <th>who</th>
                  <th>action</th>
                  <th>jobs</th>
                  <th>queue</th>
                  <th className="num">requested</th>
                  <th className="num">affected</th>
                  <th>outcome</th>
                  <th>reason</th>
                </tr>
              </thead>
              <tbody>
                {loaded.value.entries.map((a) => (
                  <tr key={a.id}>
                    <td>
                      <Time at={a.at} />
                    </td>
                    <td>{a.actor}</td>
                    <td>{a.action}</td>
                    <td className="mono">
                      {a.jobIds.slice(0, 3).map((id) => (
                        <a key={id} href={withBasePath(`/jobs/${id}`)}>
                          {id.slice(0, 13)}…{' '}
                        </a>
                      ))}
                      {a.jobIds.length > 3 ? `+${a.jobIds.length - 3} more` : ''}
                    </td>
                    <td>{a.queue ?? ''}</td>
                    <td className="num">{a.requested}</td>
                    <td className="num">{a.affected}</td>
                    <td>{a.outcome}</td>
                    <td>{a.reason ?? ''}</td>
                  </tr>
                ))}
                {loaded.value.entries.length === 0 && (
                  <tr>
                    <td colSpan={9}>Nothing recorded yet.</td>
                  </tr>
                )}
              </tbody>
            </table>
          </TableScroll>
          {loaded.value.next && (
            <p className="pager">
              <a
                href={withBasePath(
                  `/audit?${new URLSearchParams({ ...params, before: String(loaded.value.next) }).toString()}`,
                )}
              >
                Older →
              </a>
            </p>
          )}
        </>
      )}
    </>
  );
}
