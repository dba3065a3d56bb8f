import { purgeDead } from '../../../../../lib/dal/index.ts';
import { jsonWrite, withParams } from '../../../../../lib/http.ts';

export async function POST(request: Request, context: { params: Promise<{ queue: string }> }) {
  const { queue } = await context.params;
  return jsonWrite(request, 'purgeDead', (body) => purgeDead(withParams(body, { queue })));
}
