import { previewBulk } from '../../../../lib/dal/index.ts';
import { jsonBody, respond } from '../../../../lib/http.ts';

export function POST(request: Request) {
  return respond(request, async () => previewBulk(await jsonBody(request)));
}
