import { cancelJob } from '../../../../../lib/dal/index.ts';
import { jsonWrite } from '../../../../../lib/http.ts';

export async function POST(request: Request, context: { params: Promise<{ id: string }> }) {
  const { id } = await context.params;
  return jsonWrite(request, 'cancelJob', (body) => cancelJob({ ...(body as object), id }));
}
