import { setSchedulePaused } from '../../../../lib/dal/index.ts';
import { jsonWrite } from '../../../../lib/http.ts';

/** Admin: resumes a paused schedule from its next tick (`{ name, reason? }`), audited. */
export function POST(request: Request) {
  return jsonWrite(request, 'setSchedulePaused', (body) => setSchedulePaused(body, false));
}
