import { getOverview } from '../../../lib/dal';
import { respond } from '../../../lib/http';

export const dynamic = 'force-dynamic';

export function GET(request: Request) {
  return respond(request, getOverview);
}
