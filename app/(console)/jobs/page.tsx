import Link from 'next/link';
import { TableScroll } from '../../../components/table-scroll.tsx';
import { Time } from '../../../components/time.tsx';
import { BulkActions } from '../../../components/bulk-actions.tsx';
import { JobTags } from '../../../components/job-tags.tsx';
import { JobExport } from '../../../components/job-export.tsx';
import { NewJobsMarker } from '../../../components/new-jobs.tsx';
import { PageError } from '../../../components/page-error.tsx';
import { StateBadge } from '../../../components/state-badge.tsx';
import { getJobs } from '../../../lib/dal/index.ts';
import { FAILURE_CLASSES, type JobDTO, LIST_STATES } from '../../../lib/dto.ts';
import { load } from '../../../lib/page.ts';
import { dropEmpty } from '../../../lib/search-params.ts';
import { withBasePath } from '../../../components/base-path.ts';

type Params = Record<string, string | string[] | undefined>;

/** A job's state badge, and under it why a ready job waits (a limit, a paused queue), in words. */
function StateCell({ job }: { job: JobDTO }) {
  return (
    <td>
      <StateBadge state={job.subState} />
      {job.waiting.map((why) => (
        <div key={why} className="waiting" data-testid="waiting-reason">
          {why}
        </div>
      ))}
    </td>
  );
}

/**
 * The filter form: its values are the page's URL parameters (a GET, so a filter, a payload
 * search included, is a link to share).
 */
function JobFilters({ params }: { params: Record<string, string> }) {
  return (
    <form className="filters" method="get">
      <label>
        State
        <select name="state" defaultValue={params.state ?? ''}>
          <option value="">any</option>
          {LIST_STATES.map((s) => (
            <option key={s} value={s}>
              {s.replace('_', ' ')}
            </option>
          ))}
        </select>
      </label>
      <label>
        Queue <input name="queue" defaultValue={params.queue ?? ''} />
      </label>
      <label>
        Kind <input name="kind" defaultValue={params.kind ?? ''} />
      </label>
      <label>
        Tag <input name="tag" defaultValue={params.tag ?? ''} />
      </label>
      <label>
        Failure class
        <select name="failureClass" defaultValue={params.failureClass ?? ''}>
          <option value="">any</option>
          {FAILURE_CLASSES.map((c) => (
            <option key={c} value={c}>
              {c}
            </option>
          ))}
        </select>
      </label>
      <label>
        Job id or idempotency key <input name="search" defaultValue={params.search ?? ''} size={38} />
      </label>
      <label>
        Payload path <input name="path" defaultValue={params.path ?? ''} placeholder="orderId" />
      </label>
      <label>
        equals <input name="value" defaultValue={params.value ?? ''} maxLength={512} />
      </label>
      <label>
        Created from (UTC) <input name="from" defaultValue={params.from ?? ''} placeholder="2026-05-01T09:00" />
      </label>
      <label>
        to (UTC) <input name="to" defaultValue={params.to ?? ''} placeholder="2026-05-01T18:00" />
      </label>
      <label>
        Sort
        <select name="sort" defaultValue={params.sort ?? 'newest'}>
          <option value="newest">newest first</option>
          <option value="oldest">oldest first</option>
        </select>
      </label>
      <button type="submit">Filter</button>
      <Link href="/jobs">clear</Link>
    </form>
  );
}

export default async function JobsPage({ searchParams }: { searchParams: Promise<Params> }) {
  const params = dropEmpty(await searchParams);
  // When the list was read: the new-jobs marker's cursor when it shows no job.
  const since = Date.now();
  const loaded = await load(() => getJobs(params));
  const { after: _after, ...filterParams } = params;
  const { sort: _sort, limit: _limit, ...filter } = filterParams;
  return (
    <>
      <h1>Jobs</h1>
      <JobFilters params={params} />
      {!loaded.ok ? (
        <PageError message={loaded.message} />
      ) : (
        <>
          {loaded.value.can.bulk && <BulkActions source={{ kind: 'filter', filter }} actions={['retry', 'cancel']} />}
          {loaded.value.can.export && <JobExport filter={params.sort ? { ...filter, sort: params.sort } : filter} />}
          {/* New jobs land on the first page of newest first: only there is the marker offered
              (a payload search lists by created time: none). */}
          {!params.after && (params.sort ?? 'newest') === 'newest' && params.path === undefined && (
            <NewJobsMarker
              key={loaded.value.newest ?? since}
              filter={filter}
              cursor={loaded.value.newest === null ? { since: String(since) } : { newerThan: loaded.value.newest }}
            />
          )}
          <TableScroll label="Jobs">
            <table data-testid="jobs-table">
              <thead>
                <tr>
                  <th>id</th>
                  <th>state</th>
                  <th>queue</th>
                  <th>kind</th>
                  <th>tags</th>
                  <th className="num">attempts</th>
                  <th>failure class</th>
                  <th>created</th>
                  <th>run at</th>
                </tr>
              </thead>
              <tbody>
                {loaded.value.jobs.map((j) => (
                  <tr key={j.id}>
                    <td className="mono">
                      <a href={withBasePath(`/jobs/${j.id}`)}>{j.id}</a>
                    </td>
                    <StateCell job={j} />
                    <td>{j.queue}</td>
                    <td>
                      {j.kind} v{j.kindVersion}
                    </td>
                    <td>
                      <JobTags tags={j.tags} />
                    </td>
                    <td className="num" title={j.attemptLine}>
                      {j.budget.charged}/{j.budget.cap} {j.budget.source}
                      {j.budget.released > 0 ? ` +${j.budget.released} uncharged` : ''}
                    </td>
                    <td>{j.failureClass ?? ''}</td>
                    <td>
                      <Time at={j.createdAt} />
                    </td>
                    <td>
                      <Time at={j.runAt} />
                    </td>
                  </tr>
                ))}
                {loaded.value.jobs.length === 0 && (
                  <tr>
                    <td colSpan={9}>No jobs match.</td>
                  </tr>
                )}
              </tbody>
            </table>
          </TableScroll>
          {loaded.value.next && (
            <p className="pager">
              <a
                href={withBasePath(
                  `/jobs?${new URLSearchParams({ ...filterParams, after: loaded.value.next }).toString()}`,
                )}
              >
                Next page →
              </a>
            </p>
          )}
        </>
      )}
    </>
  );
}
