import { removeKindSearchPath } from '../../../../../lib/dal/index.ts';
import { jsonWrite } from '../../../../../lib/http.ts';

/** Admin: removes a searchable path an admin added (`{ kind, path, reason? }`); a declared one is refused. */
export function POST(request: Request) {
  return jsonWrite(request, 'removeKindSearchPath', removeKindSearchPath);
}
