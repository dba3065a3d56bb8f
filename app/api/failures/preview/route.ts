import { previewFailureGroup } from '../../../../lib/dal/index.ts';
import { jsonBody, respond } from '../../../../lib/http.ts';

export function POST(request: Request) {
  return respond(request, async () => previewFailureGroup(await jsonBody(request)));
}
