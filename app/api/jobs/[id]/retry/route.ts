import { retryJob } from '../../../../../lib/dal/index.ts';
import { jsonWrite } from '../../../../../lib/http.ts';

export async function POST(request: Request, context: { params: Promise<{ id: string }> }) {
  const { id } = await context.params;
  return jsonWrite(request, 'retryJob', (body) => retryJob({ ...(body as object), id }));
}
