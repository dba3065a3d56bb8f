import { addKindRedaction } from '../../../../lib/dal/index.ts';
import { jsonWrite } from '../../../../lib/http.ts';

/** Admin: adds a redacted path to a kind (`{ kind, path, reason? }`). */
export function POST(request: Request) {
  return jsonWrite(request, 'addKindRedaction', addKindRedaction);
}
