/**
 * Prometheus text: depth by queue and state, oldest ready age, dead jobs by class. Behind a
 * bearer token (LEASEHOLD_METRICS_TOKEN, checked in the DAL); without one configured the
 * endpoint is off.
 */
import { getMetrics } from '../../../lib/dal/index.ts';
import { AuthError } from '../../../lib/errors.ts';
import { metricsText } from '../../../lib/metrics-text.ts';

export const dynamic = 'force-dynamic';

export async function GET(request: Request) {
  try {
    const metrics = await getMetrics(request.headers.get('authorization'));
    return new Response(metricsText(metrics), { headers: { 'content-type': 'text/plain; version=0.0.4' } });
  } catch (error) {
    if (error instanceof AuthError) {
      // 404 (off) and 401 (wrong or missing token), as plain text for curl and scrapers.
      const headers: Record<string, string> = error.status === 401 ? { 'www-authenticate': 'Bearer' } : {};
      return new Response(`${error.message}\n`, { status: error.status, headers });
    }
    console.error('[metrics] failed', error);
    return new Response('metrics unavailable: database error\n', { status: 503 });
  }
}
