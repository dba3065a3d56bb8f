'use client';
import { useQuery } from '@tanstack/react-query';
import type { AttemptViewDTO, JobLiveDTO } from '../lib/dto.ts';
import { JobActions } from './job-actions.tsx';
import { MaskedPayload } from './masked-payload.tsx';
import { fetchJobLive, poll, POLL, queryKeys } from './queries.ts';
import { StateBadge } from './state-badge.tsx';
import { TableScroll } from './table-scroll.tsx';
import { Time } from './time.tsx';

/** How often a job's page asks again: fast while it runs, slower while it waits, never once finished. */
export function jobPollMs(live: JobLiveDTO | undefined): number | false {
  if (!live || live.finished) return false;
  return live.state === 'running' ? POLL.jobProgress : POLL.jobWaiting;
}

/**
 * A job's live part (state, progress, ended attempts, result, last error, the viewer's actions):
 * the server renders it with the page; while the job is not finished every part of the page
 * that shows it polls GET /api/jobs/[id]/progress through this one query (one request per
 * interval for all of them), not while the tab is hidden. The page is never reloaded.
 */
export function useJobLive(id: string, initial: JobLiveDTO) {
  return useQuery({
    // Per render of the page: a refresh (after an action) brings a new snapshot, and the poll starts from it.
    queryKey: queryKeys.jobLive(id, initial.readAt),
    queryFn: () => fetchJobLive(id),
    initialData: initial,
    initialDataUpdatedAt: Date.parse(initial.readAt),
    staleTime: POLL.jobProgress,
    refetchOnWindowFocus: (query) => jobPollMs(query.state.data) !== false,
    refetchInterval: poll<JobLiveDTO>(jobPollMs),
  });
}

type LiveProps = { id: string; initial: JobLiveDTO };

export function LiveStateBadge({ id, initial }: LiveProps) {
  const { data } = useJobLive(id, initial);
  return <StateBadge state={data.subState} />;
}

export function LiveJobActions({ id, initial }: LiveProps) {
  const { data } = useJobLive(id, initial);
  return (
    <JobActions
      id={id}
      leaseToken={data.leaseToken}
      canRetry={data.can.retry}
      canCancel={data.can.cancel}
      state={data.state}
    />
  );
}

export function LiveLastError({ id, initial }: LiveProps) {
  const { data } = useJobLive(id, initial);
  if (!data.lastError) return null;
  return (
    <>
      <h2>Last error</h2>
      <pre data-testid="last-error" tabIndex={0}>
        {data.lastError}
      </pre>
    </>
  );
}

/** What the completing attempt returned, masked as the payload is; or why it was not kept; or that there is none. */
export function LiveResult({ id, initial }: LiveProps) {
  const { result, noResult } = useJobLive(id, initial).data;
  if (result && result.marker === null) {
    return (
      <MaskedPayload
        title="Result"
        payload={result.value}
        redactedPaths={result.redactedPaths}
        payloadHidden={result.hidden}
        testId="result"
        hiddenTestId="result-hidden"
      >
        <p className="muted">
          Returned by attempt {result.attempt}, stored <Time at={result.storedAt} /> ({result.bytes} bytes of JSON).
        </p>
      </MaskedPayload>
    );
  }
  return (
    <>
      <h2>Result</h2>
      {result ? (
        <p data-testid="result-marker">
          {result.marker} (attempt {result.attempt}, <Time at={result.storedAt} />)
        </p>
      ) : (
        <p className="muted" data-testid="result-none">
          {noResult}
        </p>
      )}
    </>
  );
}

export function LiveAttempts({ id, initial }: LiveProps) {
  const attempts = useJobLive(id, initial).data.attemptRows;
  return (
    <>
      <h2>Attempts</h2>
      <TableScroll label="Attempts">
        <table data-testid="attempts-table">
          <thead>
            <tr>
              <th className="num">#</th>
              <th>outcome</th>
              <th>worker</th>
              <th>started</th>
              <th>ended</th>
              <th className="num">ms</th>
              <th>class</th>
              <th>error</th>
            </tr>
          </thead>
          <tbody>
            {attempts.map((a) => (
              <AttemptRows key={`${a.attempt}-${a.startedAt}`} a={a} />
            ))}
            {attempts.length === 0 && (
              <tr>
                <td colSpan={8}>No attempt has ended yet.</td>
              </tr>
            )}
          </tbody>
        </table>
      </TableScroll>
    </>
  );
}

/** One ended attempt's row, and under it the error's detail when it has one. */
function AttemptRows({ a }: { a: AttemptViewDTO }) {
  return (
    <>
      <tr>
        <td className="num">{a.attempt}</td>
        <td data-outcome={a.outcome}>{a.outcomeText}</td>
        <td>{a.workerId ?? ''}</td>
        <td>
          <Time at={a.startedAt} />
        </td>
        <td>
          <Time at={a.endedAt} />
        </td>
        <td className="num">{a.durationMs}</td>
        <td>{a.failureClass ?? ''}</td>
        <td className="mono">{a.errorText}</td>
      </tr>
      {a.detailSummary !== null && (
        <tr>
          <td colSpan={8}>
            <details data-testid={`attempt-detail-${a.attempt}`}>
              <summary>
                Attempt {a.attempt}: {a.detailSummary}
              </summary>
              <pre tabIndex={0}>{a.detailText}</pre>
            </details>
          </td>
        </tr>
      )}
    </>
  );
}
