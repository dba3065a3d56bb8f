import 'server-only';
/** The audit log, newest first, by keyset. */
import { auditListSchema, listAudit } from '../../db/queries/jobs';
import { database } from '../db';
import type { AuditDTO } from '../dto';
import { dropEmpty } from '../search-params';
import { parse } from './input';
import { auditDto } from './mappers';
import { authorize } from './policy';

export async function getAudit(
  searchParams: Record<string, string | undefined>,
): Promise<{ entries: AuditDTO[]; next: number | null }> {
  await authorize('getAudit');
  const query = parse(auditListSchema, dropEmpty(searchParams), 'filter');
  const { entries, next } = await listAudit(database(), query);
  return { entries: entries.map(auditDto), next };
}
