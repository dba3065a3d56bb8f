import { getHealth } from '../../../lib/dal/index.ts';
import { respond } from '../../../lib/http.ts';

export const dynamic = 'force-dynamic';

/** PostgreSQL's health as the dashboard's role reads it (polled by the Health page). */
export function GET() {
  return respond(() => getHealth());
}
