import { setGroupPaused } from '../../../../lib/dal/index.ts';
import { jsonWrite } from '../../../../lib/http.ts';

/** Operator: pauses one group of a queue (`{ queue, group, reason? }`), audited. */
export function POST(request: Request) {
  return jsonWrite(request, 'setGroupPaused', (body) => setGroupPaused(body, true));
}
