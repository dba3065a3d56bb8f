import { setQueuePaused } from '../../../../../lib/dal/index.ts';
import { jsonWrite, withParams } from '../../../../../lib/http.ts';

/** The confirm dialog's body: an optional reason for the audit log. */
export async function POST(request: Request, context: { params: Promise<{ queue: string }> }) {
  const { queue } = await context.params;
  return jsonWrite(request, 'setQueuePaused', (body) => setQueuePaused(withParams(body, { queue }), false));
}
