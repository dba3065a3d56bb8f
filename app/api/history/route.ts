import type { NextRequest } from 'next/server';
import { getHistory } from '../../../lib/dal/index.ts';
import { respond } from '../../../lib/http.ts';

export const dynamic = 'force-dynamic';

/** A queue's (or every queue's) history over `range` (1h, 24h, 7d, 90d): the overview's charts. */
export function GET(request: NextRequest) {
  const params = request.nextUrl.searchParams;
  return respond(() => getHistory({ range: params.get('range'), queue: params.get('queue') }));
}
