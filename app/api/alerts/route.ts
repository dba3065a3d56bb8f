import { getQueueAlerts, setQueueAlertValue } from '../../../lib/dal/index.ts';
import { jsonWrite, respond } from '../../../lib/http.ts';

export const dynamic = 'force-dynamic';

/** Every queue's backlog alerts: threshold, where it comes from, the figure now, firing or not (polled). */
export function GET() {
  return respond(getQueueAlerts);
}

/**
 * Admin: sets or clears a queue's run-time threshold for one figure
 * (`{ queue, alert, threshold, reason? }`: `alert` oldest_ready_age_seconds, dead or
 * waiting_for_kind; `threshold` a duration such as `5m` or seconds for the age, a count for the
 * others, empty or null to clear it).
 */
export function POST(request: Request) {
  return jsonWrite(request, 'setQueueAlertValue', setQueueAlertValue);
}
