import { rerunJob } from '../../../../../lib/dal/index.ts';
import { jsonWrite, withParams } from '../../../../../lib/http.ts';

export async function POST(request: Request, context: { params: Promise<{ id: string }> }) {
  const { id } = await context.params;
  return jsonWrite(request, 'rerunJob', (body) => rerunJob(withParams(body, { id })));
}
