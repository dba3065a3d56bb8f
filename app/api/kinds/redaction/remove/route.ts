import { removeKindRedaction } from '../../../../../lib/dal/index.ts';
import { jsonBody, respond } from '../../../../../lib/http.ts';

/** Admin: removes a path an admin added (`{ kind, path, reason? }`); a worker-declared one is refused. */
export function POST(request: Request) {
  return respond(request, async () => removeKindRedaction(await jsonBody(request)));
}
