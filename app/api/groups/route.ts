import { setGroupMax } from '../../../lib/dal/index.ts';
import { jsonWrite } from '../../../lib/http.ts';

/**
 * Admin: sets or clears a queue's default group maximum (`{ queue, max, reason? }`) or one
 * group's own (`{ queue, group, max, reason? }`); `max` a whole number, empty or null to clear it.
 */
export function POST(request: Request) {
  return jsonWrite(request, 'setGroupMax', setGroupMax);
}
