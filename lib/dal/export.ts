import 'server-only';
/**
 * A CSV export of a job search (docs/dashboard.md, "Search"): the Jobs page's filter, at most
 * MAX_EXPORT_ROWS jobs (more: refused, nothing recorded), each masked and scrubbed exactly as
 * the pages show it to the viewer's role (the payload by its kind version's paths, the key, tags
 * and error by the payload's masked values), recorded in the audit log before the file is made.
 */
import { z } from 'zod';
import type { Job } from '../../db/queue/index.ts';
import { jobFilterSchema, LIST_SORTS, listJobs } from '../../db/queries/jobs.ts';
import { MAX_EXPORT_ROWS, recordJobsExport } from '../../db/queries/exports.ts';
import { toCsv } from '../csv.ts';
import { database } from '../db.ts';
import { InputError } from '../errors.ts';
import { EXPORT_SEARCH_TOO_LONG, exportOverCapMessage } from '../present.ts';
import { redact } from '../redaction.ts';
import { parse, reasonSchema } from './input.ts';
import { listableTo } from './jobs.ts';
import { authorize } from './policy.ts';
import { rulesLookup, scrubFor, scrubPatterns } from './scrub.ts';
import { resolveSearch } from './search.ts';

const exportInput = z.strictObject({
  filter: jobFilterSchema.extend({ sort: z.enum(LIST_SORTS).optional() }),
  reason: reasonSchema.optional(),
});

export const EXPORT_COLUMNS = [
  'id',
  'state',
  'queue',
  'kind',
  'kind_version',
  'tags',
  'attempts',
  'failure_class',
  'created_at',
  'run_at',
  'finished_at',
  'idempotency_key',
  'last_error',
  'payload',
] as const;

/** The export's file: its name, its CSV text, how many jobs it holds and its audit row. */
export interface JobsExport {
  filename: string;
  csv: string;
  rows: number;
  auditId: number;
}

/** Operator: the jobs a search finds as CSV (at most MAX_EXPORT_ROWS), masked as the pages show them, audited first. */
export async function exportJobs(input: unknown): Promise<JobsExport> {
  const user = await authorize('exportJobs');
  const { filter, reason } = parse(exportInput, input, 'export request');
  const { search, hidden } = await resolveSearch(user, filter);
  const { jobs: found, next } = await listJobs(
    database(),
    { ...filter, sort: filter.sort ?? 'newest', limit: MAX_EXPORT_ROWS },
    search,
  );
  if (next !== null) throw new InputError(exportOverCapMessage(MAX_EXPORT_ROWS));
  const rules = rulesLookup(database());
  const rows = await Promise.all(
    found.map(async (job) => {
      const paths = await rules(job.kind, job.kindVersion);
      return { job, paths, scrub: scrubFor(job.payload, paths) };
    }),
  );
  const scrubs = new Map(rows.map((r) => [r.job.id, r.scrub]));
  const listable = listableTo(user, filter, (j: Job) => scrubs.get(j.id) ?? scrubPatterns);
  const shown = rows.filter((r) => listable(r.job) && !hidden(r.job));
  const recorded = Object.fromEntries(
    Object.entries(filter).filter((e): e is [string, string] => typeof e[1] === 'string'),
  );
  // The audit row keeps the search as JSON of at most 4 kB (record_jobs_export refuses more):
  // a search the page accepts can escape past it (512 control characters each in the search and
  // the value), said here as a sentence rather than the database's refusal.
  if (JSON.stringify(recorded).length > 4096) throw new InputError(EXPORT_SEARCH_TOO_LONG);
  const auditId = await recordJobsExport(database(), {
    actor: user.email,
    filter: recorded,
    rows: shown.length,
    reason,
  });
  const csv = toCsv(
    EXPORT_COLUMNS,
    shown.map(({ job, paths, scrub }) => [
      job.id,
      job.state,
      job.queue,
      job.kind,
      job.kindVersion,
      job.tags.map(scrub).join(' '),
      job.attempts,
      job.failureClass,
      job.createdAt.toISOString(),
      job.runAt.toISOString(),
      job.finishedAt?.toISOString() ?? null,
      job.idempotencyKey === null ? null : scrub(job.idempotencyKey),
      job.lastError === null ? null : scrub(job.lastError),
      JSON.stringify(redact(job.payload, paths).payload),
    ]),
  );
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  return { filename: `leasehold-jobs-${stamp}.csv`, csv, rows: shown.length, auditId };
}
