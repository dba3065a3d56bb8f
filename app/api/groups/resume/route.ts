import { setGroupPaused } from '../../../../lib/dal/index.ts';
import { jsonWrite } from '../../../../lib/http.ts';

/** Operator: resumes a paused group of a queue (`{ queue, group, reason? }`), audited. */
export function POST(request: Request) {
  return jsonWrite(request, 'setGroupPaused', (body) => setGroupPaused(body, false));
}
