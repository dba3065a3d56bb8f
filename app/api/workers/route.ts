import { getWorkers } from '../../../lib/dal/index.ts';
import { respond } from '../../../lib/http.ts';

export const dynamic = 'force-dynamic';

/** The live workers, and the queues whose jobs wait for a kind none of them runs (polled by the Workers page). */
export function GET() {
  return respond(() => getWorkers());
}
