import { getOverview } from '../../../lib/dal/index.ts';
import { respond } from '../../../lib/http.ts';

export const dynamic = 'force-dynamic';

export function GET() {
  return respond(getOverview);
}
