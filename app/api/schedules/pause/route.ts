import { setSchedulePaused } from '../../../../lib/dal/index.ts';
import { jsonWrite } from '../../../../lib/http.ts';

/** Admin: pauses a schedule (`{ name, reason? }`), audited: no tick of it is enqueued until it is resumed. */
export function POST(request: Request) {
  return jsonWrite(request, 'setSchedulePaused', (body) => setSchedulePaused(body, true));
}
