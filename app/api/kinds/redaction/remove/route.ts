import { removeKindRedaction } from '../../../../../lib/dal/index.ts';
import { jsonWrite } from '../../../../../lib/http.ts';

/** Admin: removes a path an admin added (`{ kind, path, reason? }`); a worker-declared one is refused. */
export function POST(request: Request) {
  return jsonWrite(request, 'removeKindRedaction', removeKindRedaction);
}
