import { exportJobs } from '../../../../lib/dal/index.ts';
import { fileWrite } from '../../../../lib/http.ts';

/**
 * Operator: the jobs the Jobs page's filter finds, as a CSV attachment (`{ filter, reason? }`;
 * at most 10,000 rows, masked as the pages show them, recorded in the audit log first).
 */
export function POST(request: Request) {
  return fileWrite(request, 'exportJobs', async (body) => {
    const file = await exportJobs(body);
    return { filename: file.filename, body: file.csv, type: 'text/csv; charset=utf-8' };
  });
}
