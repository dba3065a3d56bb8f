/**
 * What `leasehold dashboard` checks of a user's database before it starts Next.js: that schema
 * leasehold is there, at a version this code runs on, and that the login DATABASE_URL names may
 * do what the dashboard does (schema v1's leasehold_dashboard role, db/roles.sql: reads plus the
 * audited writes of its operator and admin actions, no DDL). It runs no DDL itself: a user's
 * schema is migrated by `leasehold migrate`, as a login that may, never by the dashboard. Each
 * refusal is a sentence naming what is missing, at start, instead of an error on the first page.
 */
import path from 'node:path';
import { sql } from 'drizzle-orm';
import type { DbHandle } from '../db/client.ts';
import { run } from '../db/queue/executor.ts';
import { LEASEHOLD_ROLES } from '../db/roles.ts';
import { SCHEMA_VERSION, schemaCompatibility, SUPPORTED_SCHEMA } from '../db/schema-version.ts';
import { packageRoot, UsageError } from './command.ts';

type Db = DbHandle['db'];

/** One right the dashboard uses: on a table or view (all columns, or the ones listed), or a sequence. */
export interface DashboardGrant {
  privilege: 'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE' | 'USAGE' | 'EXECUTE';
  /** Schema-qualified: `leasehold.jobs`; a function with its argument types. */
  object: string;
  sequence?: boolean;
  /** A function: `object` is its signature. */
  routine?: boolean;
  columns?: readonly string[];
}

const READ = [
  'jobs',
  'ready_jobs',
  'ready_rows',
  'leases',
  'finished_rollup',
  'job_attempts',
  'dedupe_keys',
  'queues',
  'workers',
  'worker_kinds',
  'kinds',
  'audit_log',
  'users',
  'kind_redactions',
  'sign_in_throttle',
  'session_versions',
  'migrations',
  'jobs_view',
  'queue_stats',
] as const;

/**
 * What the dashboard reads and writes (db/queries, lib/dal, db/queue/operator.ts), as db/roles.sql
 * grants it to leasehold_dashboard; the role test (cli/dashboard-database.test.ts) holds the two
 * together. Schema USAGE and the journal come first: without them nothing else can be asked.
 */
export const DASHBOARD_GRANTS: readonly DashboardGrant[] = [
  { privilege: 'SELECT', object: 'leasehold.migrations' },
  ...READ.filter((t) => t !== 'migrations').map((t) => ({ privilege: 'SELECT' as const, object: `leasehold.${t}` })),
  // Every action is a SECURITY DEFINER function with its audit row (drizzle/0011); no table write.
  ...[
    'operator_retry(text, text, text, uuid[])',
    'operator_cancel(text, text, text, uuid[], uuid[])',
    'operator_set_paused(text, text, text, text)',
    // The support actions (drizzle/0029).
    'operator_run_now(text, text, uuid, text, integer, timestamptz)',
    'operator_reschedule(text, text, uuid, timestamptz, text, integer, timestamptz)',
    'operator_set_priority(text, text, uuid, integer, text, integer, timestamptz)',
    'operator_rerun(text, text, uuid, text, integer, timestamptz)',
    'operator_purge_dead(text, text, text, timestamptz, uuid[])',
    'add_redacted_path(text, text, text, text)',
    'remove_added_redacted_path(text, text, text, text)',
    'record_payload_reveal(text, uuid, text)',
    'raise_session_version(text)',
    'record_sign_in(text, text, text, text, integer)',
  ].map((f) => ({ privilege: 'EXECUTE' as const, object: `leasehold.${f}`, routine: true })),
  // Sign-in throttling (db/sign-in.ts): failed guesses counted per account and address.
  { privilege: 'INSERT', object: 'leasehold.sign_in_throttle' },
  { privilege: 'UPDATE', object: 'leasehold.sign_in_throttle' },
  { privilege: 'DELETE', object: 'leasehold.sign_in_throttle' },
];

export function describeGrant(grant: DashboardGrant): string {
  const columns = grant.columns ? ` (${grant.columns.join(', ')})` : '';
  return `${grant.privilege}${columns} on ${grant.sequence ? 'sequence ' : grant.routine ? 'function ' : ''}${grant.object}`;
}

/** The login's standing: who it is, and whether it could change schema leasehold. */
interface LoginFacts {
  login: string;
  schema: boolean;
  usage: boolean;
  superuser: boolean;
  ddl: boolean;
  roleExists: boolean;
  member: boolean;
}

async function loginFacts(db: Db): Promise<LoginFacts> {
  const role = LEASEHOLD_ROLES.dashboard;
  const [row] = await run<LoginFacts>(
    db,
    sql`
    SELECT session_user::text AS login,
           n.oid IS NOT NULL AS schema,
           n.oid IS NOT NULL AND has_schema_privilege(n.oid, 'USAGE') AS usage,
           (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) AS superuser,
           n.oid IS NOT NULL AND (has_schema_privilege(n.oid, 'CREATE') OR pg_has_role(n.nspowner, 'USAGE')) AS ddl,
           EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = ${role}) AS "roleExists",
           EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = ${role})
             AND pg_has_role(current_user, ${role}, 'MEMBER') AS member
    FROM (SELECT 1) one LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = 'leasehold'`,
  );
  if (!row) throw new Error('Leasehold CLI: the login check returned no row');
  return row;
}

/** The grants of DASHBOARD_GRANTS the connected login lacks (an object that does not exist counts as lacking). */
export async function missingDashboardGrants(db: Db): Promise<DashboardGrant[]> {
  const missing: DashboardGrant[] = [];
  for (const grant of DASHBOARD_GRANTS) {
    const [row] = await run<{ ok: boolean | null }>(
      db,
      grant.routine
        ? sql`SELECT CASE WHEN to_regprocedure(${grant.object}) IS NULL THEN false
                ELSE has_function_privilege(to_regprocedure(${grant.object}), 'EXECUTE') END AS ok`
        : grant.sequence
          ? sql`SELECT CASE WHEN to_regclass(${grant.object}) IS NULL THEN false
                ELSE has_sequence_privilege(${grant.object}, ${grant.privilege}) END AS ok`
          : grant.columns
            ? sql`SELECT CASE WHEN to_regclass(${grant.object}) IS NULL THEN false
                  ELSE bool_and(has_column_privilege(${grant.object}, c, ${grant.privilege})) END AS ok
                FROM unnest(${sql.param(grant.columns)}::text[]) AS c`
            : sql`SELECT CASE WHEN to_regclass(${grant.object}) IS NULL THEN false
                  ELSE has_table_privilege(${grant.object}, ${grant.privilege}) END AS ok`,
    );
    if (!row?.ok) missing.push(grant);
  }
  return missing;
}

const rolesScript = (cwd: string) => path.relative(cwd, path.join(packageRoot(), 'db', 'roles.sql')) || 'db/roles.sql';

/** The sentence for a login that lacks `missing`, with the grant that gives it all of them. */
function missingGrantsSentence(facts: LoginFacts, missing: string[], cwd: string): string {
  const role = LEASEHOLD_ROLES.dashboard;
  const script = `psql -v ON_ERROR_STOP=1 -d "$DATABASE_URL" -f ${rolesScript(cwd)}`;
  const fix = !facts.roleExists
    ? `the role ${role} does not exist in this cluster: as a superuser, run ${script} (it creates the role and its grants), then GRANT ${role} TO ${facts.login}`
    : facts.member
      ? `${facts.login} is a member of ${role}, so that role lacks them: run ${script} again as a superuser (after every migration that adds a table)`
      : `grant it the dashboard's role: GRANT ${role} TO ${facts.login}; (as a superuser; ${role} comes from ${script})`;
  return `the login ${facts.login} cannot do what the dashboard needs in schema leasehold: it lacks ${missing.join('; ')}. Fix: ${fix}. See docs/dashboard.md`;
}

export interface DashboardDatabaseVerdict {
  login: string;
  schemaVersion: number;
  /** Said on stderr, not refused: a login that can change the schema works, but needs not. */
  warnings: string[];
}

/**
 * Checks, read-only, that the dashboard can run on the database `db` reaches as its login;
 * throws a UsageError whose message says what is missing and how to fix it: no schema
 * leasehold (`leasehold migrate`), a schema outside SUPPORTED_SCHEMA, a grant of
 * leasehold_dashboard's that the login lacks. `cwd` makes the paths in the sentences relative.
 */
export async function checkDashboardDatabase(db: Db, cwd = process.cwd()): Promise<DashboardDatabaseVerdict> {
  const facts = await loginFacts(db);
  if (!facts.schema)
    throw new UsageError(
      'the database DATABASE_URL names has no schema leasehold: run `leasehold migrate` first (as a login that may create it, not the dashboard’s), then start the dashboard',
    );
  if (!facts.usage) throw new UsageError(missingGrantsSentence(facts, ['USAGE on schema leasehold'], cwd));
  // Every lacking grant in one sentence; the journal's first, as the version check reads it.
  const missing = await missingDashboardGrants(db);
  if (missing.includes(DASHBOARD_GRANTS[0]!)) {
    const [present] = await run<{ journal: boolean }>(
      db,
      sql`SELECT to_regclass('leasehold.migrations') IS NOT NULL AS journal`,
    );
    if (!present?.journal)
      throw new UsageError(
        'the schema leasehold in the database DATABASE_URL names has no migrations journal (leasehold.migrations): run `leasehold migrate` first',
      );
    throw new UsageError(missingGrantsSentence(facts, missing.map(describeGrant), cwd));
  }
  const verdict = await schemaCompatibility(db);
  if (!verdict.ok)
    throw new UsageError(
      `${verdict.reason.replace(/^Leasehold: /, '')} This dashboard runs on schema versions ${SUPPORTED_SCHEMA.min} to ${SUPPORTED_SCHEMA.max} (and newer ones compatible from ${SCHEMA_VERSION} or earlier); from this CLI the migrations are \`leasehold migrate\`.`,
    );
  if (missing.length > 0) throw new UsageError(missingGrantsSentence(facts, missing.map(describeGrant), cwd));
  const warnings: string[] = [];
  if (facts.superuser || facts.ddl)
    warnings.push(
      `the login ${facts.login} can change schema leasehold (${facts.superuser ? 'a superuser' : 'it may create in or owns it'}); the dashboard needs only ${LEASEHOLD_ROLES.dashboard}'s rights: a login of its own with that role (docs/dashboard.md) keeps a compromised dashboard from DDL`,
    );
  return { login: facts.login, schemaVersion: verdict.schemaVersion, warnings };
}
