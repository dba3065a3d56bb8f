'use client';
import { useQuery } from '@tanstack/react-query';
import { useRouter } from 'next/navigation';
import { fetchNewJobs, poll, POLL, queryKeys } from './queries.ts';

/**
 * The job list's "n new jobs" marker: rows do not jump while someone reads them; instead the
 * list polls how many jobs matching its filter are newer than its newest row (GET /api/jobs/new
 * every POLL.newJobs ms, not while the tab is hidden) and offers them. A click renders the list
 * again on the server (no reload), which brings a new newest row and the count back to 0.
 * `filter`: the list's filter as URL parameters; `cursor`: its newest row, or when it was read
 * (it shows none).
 */
export function NewJobsMarker(props: {
  filter: Record<string, string>;
  cursor: { newerThan: string } | { since: string };
}) {
  const router = useRouter();
  const query = new URLSearchParams({ ...props.filter, ...props.cursor }).toString();
  const { data } = useQuery({
    queryKey: queryKeys.newJobs(query),
    queryFn: () => fetchNewJobs(query),
    initialData: { count: 0, more: false },
    staleTime: POLL.newJobs,
    refetchInterval: poll(POLL.newJobs),
  });
  const n = data.count;
  return (
    <div className="new-jobs" role="status">
      {n > 0 && (
        <button type="button" data-testid="new-jobs" onClick={() => router.refresh()}>
          {n}
          {data.more ? '+' : ''} new job{n === 1 && !data.more ? '' : 's'}
        </button>
      )}
    </div>
  );
}
