import { getFailureGroups } from '../../../lib/dal/index.ts';
import { respond } from '../../../lib/http.ts';

export const dynamic = 'force-dynamic';

/** Any role: the failure groups (polled by the Failures page). */
export function GET() {
  return respond(() => getFailureGroups());
}
