import { getNewJobCount } from '../../../../lib/dal/index.ts';
import { respond } from '../../../../lib/http.ts';

export const dynamic = 'force-dynamic';

/**
 * Any role: how many jobs matching the list's filter are newer than `newerThan` (its newest
 * row), up to 100: the Jobs page's "n new jobs" marker polls it.
 */
export function GET(request: Request) {
  return respond(() => getNewJobCount(Object.fromEntries(new URL(request.url).searchParams)));
}
