import { setQueuePaused } from '../../../../../lib/dal/index.ts';
import { bodylessWrite } from '../../../../../lib/http.ts';

export async function POST(request: Request, context: { params: Promise<{ queue: string }> }) {
  const { queue } = await context.params;
  return bodylessWrite(request, 'setQueuePaused', () => setQueuePaused({ queue }, false));
}
