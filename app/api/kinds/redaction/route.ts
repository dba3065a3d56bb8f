import { setKindRedaction } from '../../../../lib/dal';
import { jsonBody, respond } from '../../../../lib/http';

export function POST(request: Request) {
  return respond(request, async () => setKindRedaction(await jsonBody(request)));
}
