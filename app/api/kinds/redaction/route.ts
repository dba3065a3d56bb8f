import { addKindRedaction } from '../../../../lib/dal/index.ts';
import { jsonBody, respond } from '../../../../lib/http.ts';

/** Admin: adds a redacted path to a kind (`{ kind, path, reason? }`). */
export function POST(request: Request) {
  return respond(request, async () => addKindRedaction(await jsonBody(request)));
}
