import { setLimitValues } from '../../../lib/dal/index.ts';
import { jsonWrite } from '../../../lib/http.ts';

/**
 * Admin: sets or clears a limit's run-time maximum and rate
 * (`{ scope, name, max?, rate?, reason? }`: `max` a whole number, `rate` `N/INTERVAL` such as
 * `100/1s`, each empty or null to clear it, absent to leave it).
 */
export function POST(request: Request) {
  return jsonWrite(request, 'setLimitValues', setLimitValues);
}
