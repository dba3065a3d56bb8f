import { setScheduleCron } from '../../../lib/dal/index.ts';
import { jsonWrite } from '../../../lib/http.ts';

/**
 * Admin: changes a schedule's cron expression, time zone or both (`{ name, cron?, timezone?,
 * reason? }`), audited; the fields absent stay as they are.
 */
export function POST(request: Request) {
  return jsonWrite(request, 'setScheduleCron', setScheduleCron);
}
