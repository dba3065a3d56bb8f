'use client';
import { useQuery } from '@tanstack/react-query';
import { useRouter } from 'next/navigation';
import { useEffect } from 'react';
import type { JobLiveDTO } from '../lib/dto.ts';
import { fetchJobLive, POLL, queryKeys } from './queries.ts';
import { Time } from './time.tsx';

const isRunning = (live: JobLiveDTO | undefined) => live?.state === 'running';

/**
 * A job's progress, as its handler last reported it (`ctx.progress`): a bar (a native
 * `<progress>`, role progressbar) with the percentage, the message and when it was written.
 * The server renders it with the page; while the job runs it polls GET /api/jobs/[id]/progress
 * every POLL.jobProgress ms (not while the tab is hidden), and when the job's state moves on it
 * refreshes the page once, so the result, the attempts and the actions follow. A job that does
 * not run is not polled. Its message is text: React escapes it, the server scrubbed it.
 */
export function JobProgress({ id, initial }: { id: string; initial: JobLiveDTO }) {
  const router = useRouter();
  const { data, error } = useQuery({
    // Per render of the page: a refresh brings a new snapshot, and the poll starts from it.
    queryKey: queryKeys.jobLive(id, initial.readAt),
    queryFn: () => fetchJobLive(id),
    initialData: initial,
    staleTime: POLL.jobProgress,
    refetchOnWindowFocus: (query) => isRunning(query.state.data),
    refetchInterval: (query) => (isRunning(query.state.data) ? POLL.jobProgress : false),
  });
  useEffect(() => {
    if (data.state !== initial.state) router.refresh();
  }, [data.state, initial.state, router]);
  const running = isRunning(data);
  const p = data.progress;
  return (
    <>
      <h2 id="job-progress-heading">Progress</h2>
      {p ? (
        <div className="progress" data-testid="job-progress">
          <p className="progress-line">
            <progress aria-labelledby="job-progress-heading" max={100} value={p.percent}>
              {p.percent} %
            </progress>{' '}
            <span data-testid="progress-percent">{p.percent} %</span>
            {p.message !== null && (
              <>
                {' · '}
                <span data-testid="progress-message">{p.message}</span>
              </>
            )}
          </p>
          <p className="muted">
            Updated <Time at={p.updatedAt} />
            {p.attempt === data.attempts ? ` by attempt ${p.attempt}` : ` by attempt ${p.attempt}, an earlier one`}
            {running ? ` · refreshes every ${POLL.jobProgress / 1000} s while the job runs` : ''}
          </p>
        </div>
      ) : (
        <p className="muted" data-testid="job-progress">
          {running ? 'No progress reported yet.' : 'No progress reported.'}
        </p>
      )}
      {error && running && (
        <p className="error" role="alert">
          Could not refresh the progress: {error.message}
        </p>
      )}
    </>
  );
}
