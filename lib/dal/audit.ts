import 'server-only';
/** The audit log, newest first, by keyset. */
import { auditListSchema, listAudit } from '../../db/queries/jobs.ts';
import { database } from '../db.ts';
import type { AuditDTO } from '../dto.ts';
import { dropEmpty } from '../search-params.ts';
import { parse } from './input.ts';
import { auditDto } from './mappers.ts';
import { authorize } from './policy.ts';

export async function getAudit(
  searchParams: Record<string, string | undefined>,
): Promise<{ entries: AuditDTO[]; next: number | null }> {
  await authorize('getAudit');
  const query = parse(auditListSchema, dropEmpty(searchParams), 'filter');
  const { entries, next } = await listAudit(database(), query);
  return { entries: entries.map(auditDto), next };
}
