import { getJobProgress } from '../../../../../lib/dal/index.ts';
import { respond } from '../../../../../lib/http.ts';

export const dynamic = 'force-dynamic';

/** Any role: the job's state and progress, which its page polls while the job runs (read-only). */
export async function GET(_request: Request, context: { params: Promise<{ id: string }> }) {
  const { id } = await context.params;
  return respond(() => getJobProgress(id));
}
