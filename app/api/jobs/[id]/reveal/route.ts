import { revealPayload } from '../../../../../lib/dal';
import { respond } from '../../../../../lib/http';

export async function POST(request: Request, context: { params: Promise<{ id: string }> }) {
  const { id } = await context.params;
  return respond(request, () => revealPayload(id));
}
