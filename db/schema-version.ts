/**
 * Which schema this code is written for, and whether the database's schema suits it.
 *
 * Schema changes go expand, then contract: an expanding migration (a new column, a new table)
 * raises the schema version and stays compatible with the code before it, so that code keeps
 * running while the new code rolls out; a contracting one (dropping what old code reads) then
 * declares that code older than N no longer works. Migration headers say it
 * (`-- leasehold:schema-version N`, `-- leasehold:compatible-from M`, db/migrate/files.ts) and the
 * runner records both in each journal row, so a database tells any code, even code older than
 * its newest migration, whether that code may run on it.
 *
 * A schema at version X, compatible from M, suits code at version C that works with schemas
 * from SUPPORTED_SCHEMA.min on when M <= C (the schema has not dropped what C reads) and
 * X >= SUPPORTED_SCHEMA.min (the schema has what C needs).
 */
import { sql } from 'drizzle-orm';
import { JOURNAL_TABLE, journalName } from './migrate/journal.ts';
import { LeaseholdSchemaError, NO_SCHEMA_SENTENCE } from './queue/errors.ts';
import { run, type Executor } from './queue/executor.ts';

/** The schema version this code is written for: its migrations reach it (npm run db:check). */
export const SCHEMA_VERSION = 23;

/**
 * The schema versions this code runs against: from `min` (the oldest that has everything it
 * reads) to `max` (the newest it knows). A newer schema suits it too when that schema says it
 * is compatible from this code's version or earlier.
 * From 6 on: receipt() claims its key in receipt_claims (migration 0008); from 7 on: the
 * dashboard reads the admin-added redaction rules in kind_redactions (migration 0009); from 8 on:
 * the dashboard throttles sign-ins and checks session versions (migration 0010); from 9 on:
 * maintenance locks its task's row in maintenance_locks, retention removes old audit rows
 * through remove_old_audit and sign-ins are audited through record_sign_in (migration 0011); from
 * 10 on: heartbeats renew the worker lease in worker_leases, and the guards and readers take a
 * job's effective deadline from it (migration 0015). Version 11 (migration 0016) moved the
 * ready-row triggers' readers to the kind index; this code needs nothing of it (its own
 * statements read the kind index on version 10 too), so the minimum stayed 10. Version 12
 * (migration 0017) checks the fixed columns of a job in a trigger instead of CHECK constraints;
 * the rows this code writes meet them either way. From 13 on: a worker records the code
 * version it runs (workers.code_version) and declares its handlers' concurrency limits (limits,
 * limit_claims: migration 0018); from 14 on: it declares rates and the kinds of each limit,
 * and its limited claims read the rate log (limit_starts, migration 0019); from 15 on: it claims grouped jobs (grouped_ready_jobs,
 * ready_groups: migration 0020) and enqueues with a group key; from 16 on: its grouped claims
 * lock and count their queues' group limits (group_limits, group_claims, lock_group_limits:
 * migration 0021); from 17 on: it declares its schedules and enqueues their ticks (schedules,
 * schedule_ticks and their functions: migration 0022); from 18 on: uniqueness, tags and a job's
 * own settings (migration 0023); from 19 on: results and progress (migration 0025); from 20 on:
 * a worker records the oldest schema its code reads (workers.schema_from) and the dashboard reads
 * the run-time alert thresholds (queue_alerts: migration 0026); from 21 on: the maintenance loop
 * records each queue's history and the dashboard charts it (queue_minutes, queue_hours: migration
 * 0027); version 22 (migration 0028) adds searchable paths and re-runs' origin; from 23 on: the
 * dashboard's support actions call their functions (run now, reschedule, priority, re-run, purge
 * of dead jobs: migration 0029), so the minimum is 23.
 */
export const SUPPORTED_SCHEMA = { min: 23, max: SCHEMA_VERSION } as const;

export type SchemaCompatibility =
  | { ok: true; schemaVersion: number; compatibleFrom: number }
  | { ok: false; reason: string };

const JOURNAL = journalName(JOURNAL_TABLE);

/**
 * Whether code at `codeVersion`, which needs a schema of at least `minSchema`, may run on the
 * database `executor` reaches. Read-only; two statements.
 */
export async function schemaCompatibility(
  executor: Executor,
  codeVersion: number = SCHEMA_VERSION,
  minSchema: number = SUPPORTED_SCHEMA.min,
): Promise<SchemaCompatibility> {
  const [present] = await run<{ journal: boolean }>(
    executor,
    sql`SELECT to_regclass(${JOURNAL}) IS NOT NULL AS journal`,
  );
  if (!present?.journal) {
    return {
      ok: false,
      reason: NO_SCHEMA_SENTENCE,
    };
  }
  const [row] = await run<{ version: number | null; compatible_from: number | null }>(
    executor,
    sql.raw(`SELECT max(schema_version) AS version, max(compatible_from) AS compatible_from FROM ${JOURNAL}`),
  );
  const version = row?.version ?? null;
  const from = row?.compatible_from ?? null;
  if (version === null || from === null) {
    return {
      ok: false,
      reason: `Leasehold: no migration is applied yet (${JOURNAL} is empty): run the migrations (npx leasehold migrate).`,
    };
  }
  if (from > codeVersion) {
    return {
      ok: false,
      reason:
        `Leasehold: this code is too old for the database: the schema is at version ${version} and needs ` +
        `code of schema version ${from} or later, and this code is at ${codeVersion}. Deploy the newer ` +
        'version of Leasehold (the one that migrated the database).',
    };
  }
  if (version < minSchema) {
    return {
      ok: false,
      reason:
        `Leasehold: the database is too old for this code: the schema is at version ${version}, and this ` +
        `code needs version ${minSchema} or later. Run the migrations (npx leasehold migrate) first.`,
    };
  }
  return { ok: true, schemaVersion: version, compatibleFrom: from };
}

/** Throws the reason when this code may not run on the database (a worker's start). */
export async function refuseIncompatibleSchema(executor: Executor): Promise<void> {
  const verdict = await schemaCompatibility(executor);
  if (!verdict.ok) throw new LeaseholdSchemaError(verdict.reason);
}
