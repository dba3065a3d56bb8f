import { setQueuePaused } from '../../../../../lib/dal';
import { respond } from '../../../../../lib/http';

export async function POST(request: Request, context: { params: Promise<{ queue: string }> }) {
  const { queue } = await context.params;
  return respond(request, () => setQueuePaused({ queue }, true));
}
