/**
 * The audit row of a CSV export of a job search (docs/dashboard.md, "Search"), through the
 * SECURITY DEFINER leasehold.record_jobs_export (drizzle/0028): the dashboard's role writes no
 * audit row of its own. Recorded before the file is sent, so no export leaves unaudited.
 */
import { sql } from 'drizzle-orm';
import { run, type Executor } from '../queue/executor.ts';

/** The most rows one export may hold (the function refuses more). */
export const MAX_EXPORT_ROWS = 10_000;

/** Records an export: who, the search (a JSON object of at most 4 kB), how many rows, why. The audit row's id. */
export async function recordJobsExport(
  executor: Executor,
  entry: { actor: string; filter: Record<string, string>; rows: number; reason?: string | undefined },
): Promise<number> {
  const [row] = await run<{ id: string }>(
    executor,
    sql`SELECT leasehold.record_jobs_export(${entry.actor}, ${JSON.stringify(entry.filter)}::jsonb, ${entry.rows}::int,
                                            ${entry.reason ?? null}::text) AS id`,
  );
  return Number(row!.id);
}
