import { getJobs } from '../../../lib/dal/index.ts';
import { respond } from '../../../lib/http.ts';

export const dynamic = 'force-dynamic';

/** Any role: the job list as the Jobs page shows it, by the same URL parameters (filters, sort, `after`, `limit`). */
export function GET(request: Request) {
  return respond(() => getJobs(Object.fromEntries(new URL(request.url).searchParams)));
}
