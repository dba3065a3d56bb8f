import { retryJob } from '../../../../../lib/dal/index.ts';
import { jsonBody, respond } from '../../../../../lib/http.ts';

export async function POST(request: Request, context: { params: Promise<{ id: string }> }) {
  const { id } = await context.params;
  return respond(request, async () => retryJob({ ...((await jsonBody(request)) as object), id }));
}
