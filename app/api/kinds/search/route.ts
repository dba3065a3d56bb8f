import { addKindSearchPath } from '../../../../lib/dal/index.ts';
import { jsonWrite } from '../../../../lib/http.ts';

/** Admin: makes a payload path searchable in a kind (`{ kind, path, reason? }`). */
export function POST(request: Request) {
  return jsonWrite(request, 'addKindSearchPath', addKindSearchPath);
}
