import 'server-only';
/** The audit log, newest first, by keyset. */
import { auditListSchema, listAudit } from '../../db/queries/jobs.ts';
import { database } from '../db.ts';
import type { AuditDTO } from '../dto.ts';
import { dropEmpty } from '../search-params.ts';
import { parse } from './input.ts';
import { auditDto, scrubAuditDto } from './mappers.ts';
import { scrubsForIds } from './scrub.ts';
import { authorize } from './policy.ts';

/** How many jobs' payloads one audit page scrubs reasons with, at most. */
export const AUDIT_SCRUB_JOBS = 200;

export async function getAudit(
  searchParams: Record<string, string | undefined>,
): Promise<{ entries: AuditDTO[]; next: number | null }> {
  await authorize('getAudit');
  const query = parse(auditListSchema, dropEmpty(searchParams), 'filter');
  const { entries, next } = await listAudit(database(), query);
  // A reason can quote the payload of a job it is about: scrubbed by those jobs' payloads (the
  // first AUDIT_SCRUB_JOBS ids of the page, so a page of bulk rows loads a bounded number of
  // payloads), and by the secret-looking pairs for every row.
  const ids = [...new Set(entries.flatMap((e) => e.jobIds))].slice(0, AUDIT_SCRUB_JOBS);
  const scrubs = await scrubsForIds(database(), ids);
  return {
    entries: entries.map((e) =>
      scrubAuditDto(
        auditDto(e),
        e.jobIds.flatMap((id) => scrubs.get(id) ?? []),
      ),
    ),
    next,
  };
}
