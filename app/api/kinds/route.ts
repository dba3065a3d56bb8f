import { getKinds } from '../../../lib/dal/index.ts';
import { respond } from '../../../lib/http.ts';

export const dynamic = 'force-dynamic';

/** Any role: the kinds registry and the configured redacted paths (polled by the Kinds page). */
export function GET() {
  return respond(() => getKinds());
}
