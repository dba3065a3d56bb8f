'use client';
import type { JobLiveDTO } from '../lib/dto.ts';
import { useJobLive } from './job-live.tsx';
import { POLL } from './queries.ts';
import { Time } from './time.tsx';

/**
 * A job's progress, as its handler last reported it (`ctx.progress`): a bar (a native
 * `<progress>`, role progressbar) with the percentage, the message and when it was written.
 * The server renders it with the page; while the job runs it follows the page's live query
 * (components/job-live.tsx: GET /api/jobs/[id]/progress every POLL.jobProgress ms, not while
 * the tab is hidden), as do the state, the attempts and the result. Its message is text: React
 * escapes it, the server scrubbed it.
 */
export function JobProgress({ id, initial }: { id: string; initial: JobLiveDTO }) {
  const { data, error } = useJobLive(id, initial);
  const running = data.state === 'running';
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
