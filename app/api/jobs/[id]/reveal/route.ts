import { revealPayload } from '../../../../../lib/dal/index.ts';
import { bodylessWrite } from '../../../../../lib/http.ts';

export async function POST(request: Request, context: { params: Promise<{ id: string }> }) {
  const { id } = await context.params;
  return bodylessWrite(request, 'revealPayload', () => revealPayload(id));
}
