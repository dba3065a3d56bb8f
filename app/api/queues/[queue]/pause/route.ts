import { setQueuePaused } from '../../../../../lib/dal/index.ts';
import { respond } from '../../../../../lib/http.ts';

export async function POST(request: Request, context: { params: Promise<{ queue: string }> }) {
  const { queue } = await context.params;
  return respond(request, () => setQueuePaused({ queue }, true));
}
