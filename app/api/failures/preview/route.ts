import { previewFailureGroup } from '../../../../lib/dal/index.ts';
import { jsonWrite } from '../../../../lib/http.ts';

export function POST(request: Request) {
  return jsonWrite(request, 'previewFailureGroup', previewFailureGroup);
}
