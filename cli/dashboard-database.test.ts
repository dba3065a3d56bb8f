/**
 * `leasehold dashboard` on a user's database: the start-up check (cli/dashboard-database.ts)
 * on real logins of db/roles.sql's roles. A login with only leasehold_dashboard passes, reads
 * the overview, retries with its audit row and cannot make a table; a login without the role
 * is told the grant to give; a missing schema and one outside the supported range are said.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type DbHandle } from '../db/client.ts';
import { overview } from '../db/queries/overview.ts';
import { run } from '../db/queue/executor.ts';
import { claim, enqueue, failIfLeaseHeld, retryIfTerminal } from '../db/queue/index.ts';
import { applyRoles } from '../db/roles.ts';
import { SCHEMA_VERSION, SUPPORTED_SCHEMA } from '../db/schema-version.ts';
import { emptyDatabase, testDatabase } from '../test/db.ts';
import { sqlStateOf, useRoleDatabase } from '../test/roles.ts';
import { checkDashboardDatabase } from './dashboard-database.ts';

const r = useRoleDatabase();
let dashboard: DbHandle;
let admin: DbHandle;
beforeAll(() => {
  dashboard = createDb(r.urls.dashboard, { max: 2 });
  admin = createDb(r.adminUrl, { max: 2 });
});
afterAll(async () => {
  await dashboard.close();
  await admin.close();
});

/** The check's refusal message on the database at `url`, or null when it passed. */
async function refusal(url: string): Promise<string | null> {
  const handle = createDb(url, { max: 1 });
  try {
    await checkDashboardDatabase(handle.db);
    return null;
  } catch (error) {
    expect((error as Error).name).toBe('UsageError');
    return (error as Error).message;
  } finally {
    await handle.close();
  }
}

async function deadJob(queue: string): Promise<string> {
  const { id } = await enqueue(admin.db, { queue, kind: 'dash.kind', payload: {} });
  const [job] = await claim(admin.db, { queues: [queue], workerId: 'dash-test', limit: 1 });
  await failIfLeaseHeld(admin.db, job!, { error: 'refused: 422', failureClass: 'permanent' });
  return id;
}

describe('a login with only leasehold_dashboard', () => {
  it('passes the start-up check, without a warning', async () => {
    const verdict = await checkDashboardDatabase(dashboard.db);
    expect(verdict.login).toBe(r.logins.dashboard);
    expect(verdict.schemaVersion).toBeGreaterThanOrEqual(SUPPORTED_SCHEMA.min);
    expect(verdict.warnings).toEqual([]);
  });

  it('loads the overview and retries a dead job, with the audit row', async () => {
    const queue = `dash-${randomBytes(3).toString('hex')}`;
    const id = await deadJob(queue);
    const seen = await overview(dashboard.db);
    expect(seen.queues.find((q) => q.queue === queue)).toMatchObject({ dead: 1 });
    const outcome = await retryIfTerminal(dashboard.db, { id, actor: 'ops@example.com' });
    expect(outcome).toMatchObject({ applied: true });
    const [audit] = await run<{ actor: string; action: string; job_ids: string[] }>(
      admin.db,
      sql`SELECT actor, action, job_ids::text[] AS job_ids FROM leasehold.audit_log WHERE id = ${outcome.auditId}`,
    );
    expect(audit).toEqual({ actor: 'ops@example.com', action: 'retry', job_ids: [id] });
    const [job] = await run<{ state: string }>(admin.db, sql`SELECT state FROM leasehold.jobs WHERE id = ${id}::uuid`);
    expect(job?.state).toBe('ready');
  });

  it('cannot create a table, in schema leasehold or public', async () => {
    expect(await sqlStateOf(dashboard.pool.query('CREATE TABLE leasehold.dashboard_made (id int)'))).toBe('42501');
    expect(await sqlStateOf(dashboard.pool.query('CREATE TABLE public.dashboard_made (id int)'))).toBe('42501');
    expect(await sqlStateOf(dashboard.pool.query('ALTER TABLE leasehold.jobs ADD COLUMN x int'))).toBe('42501');
  });
});

describe('a login that cannot do what the dashboard needs', () => {
  it('without any role: names USAGE on the schema and the GRANT that gives it everything', async () => {
    const login = `lh_bare_${randomBytes(4).toString('hex')}`;
    const password = randomBytes(12).toString('hex');
    const superuser = new pg.Client({ connectionString: r.adminUrl });
    await superuser.connect();
    try {
      await superuser.query(`CREATE ROLE ${login} LOGIN PASSWORD '${password}'`);
      const url = new URL(r.adminUrl);
      url.username = login;
      url.password = password;
      const message = await refusal(url.toString());
      expect(message).toMatch(
        new RegExp(
          `^the login ${login} cannot do what the dashboard needs in schema leasehold: it lacks USAGE on schema leasehold\\. Fix: grant it the dashboard's role: GRANT leasehold_dashboard TO ${login};`,
        ),
      );
      expect(message).toMatch(/psql -v ON_ERROR_STOP=1 -d "\$DATABASE_URL" -f \S*db\/roles\.sql/);
    } finally {
      await superuser.query(`DROP ROLE IF EXISTS ${login}`);
      await superuser.end();
    }
  });

  it('with another role (the producer’s): names each grant it lacks, not those it has', async () => {
    const message = await refusal(r.urls.producer);
    expect(message).toMatch(new RegExp(`^the login ${r.logins.producer} cannot do what the dashboard needs`));
    for (const lacking of [
      'SELECT on leasehold.migrations',
      'SELECT on leasehold.audit_log',
      'EXECUTE on function leasehold.operator_retry(text, text, text, uuid[])',
      'EXECUTE on function leasehold.record_sign_in(text, text, text, text, integer)',
      'INSERT on leasehold.sign_in_throttle',
    ])
      expect(message).toContain(lacking);
    // What the producer has is not listed: SELECT on jobs, USAGE on the schema.
    expect(message).not.toMatch(/SELECT on leasehold\.jobs[;.]/);
    expect(message).not.toContain('USAGE on schema');
    expect(message).toContain(`GRANT leasehold_dashboard TO ${r.logins.producer};`);
  });

  it('a member of a role that lost a grant (a migration since db/roles.sql ran): says to run it again', async () => {
    await admin.pool.query('REVOKE SELECT ON leasehold.audit_log FROM leasehold_dashboard');
    try {
      const message = await refusal(r.urls.dashboard);
      expect(message).toMatch(/it lacks SELECT on leasehold\.audit_log\. Fix: /);
      expect(message).toContain(`${r.logins.dashboard} is a member of leasehold_dashboard, so that role lacks them`);
      expect(message).toMatch(/roles\.sql again as a superuser/);
    } finally {
      await applyRoles(r.adminUrl);
    }
    expect(await refusal(r.urls.dashboard)).toBeNull();
  });

  it('a superuser passes, warned that it could change the schema', async () => {
    const verdict = await checkDashboardDatabase(admin.db);
    expect(verdict.warnings).toHaveLength(1);
    expect(verdict.warnings[0]).toMatch(
      /can change schema leasehold \(a superuser\); the dashboard needs only leasehold_dashboard/,
    );
  });
});

describe('the schema', () => {
  it('missing: says to run leasehold migrate', async () => {
    const empty = await emptyDatabase('leasehold_dash_empty');
    try {
      expect(await refusal(empty.url)).toBe(
        'the database DATABASE_URL names has no schema leasehold: run `leasehold migrate` first (as a login that may create it, not the dashboard’s), then start the dashboard',
      );
    } finally {
      await empty.drop();
    }
  });

  it('older than the supported range: says so, with the range and leasehold migrate', async () => {
    const t = await testDatabase({ max: 1 });
    try {
      await t.pool.query('UPDATE leasehold.migrations SET schema_version = LEAST(schema_version, $1)', [
        SUPPORTED_SCHEMA.min - 1,
      ]);
      const message = await refusal(t.url);
      expect(message).toMatch(
        new RegExp(
          `^the database is too old for this code: the schema is at version ${SUPPORTED_SCHEMA.min - 1}, and this code needs version ${SUPPORTED_SCHEMA.min} or later\\.`,
        ),
      );
      expect(message).toContain(
        `This dashboard runs on schema versions ${SUPPORTED_SCHEMA.min} to ${SUPPORTED_SCHEMA.max}`,
      );
      expect(message).toContain('`leasehold migrate`');
    } finally {
      await t.close();
    }
  });

  it('newer than this code may run on: says so, with the range', async () => {
    const t = await testDatabase({ max: 1 });
    try {
      await t.pool.query(
        'UPDATE leasehold.migrations SET schema_version = $1, compatible_from = $1 WHERE position = (SELECT max(position) FROM leasehold.migrations)',
        [SCHEMA_VERSION + 1],
      );
      const message = await refusal(t.url);
      expect(message).toMatch(
        new RegExp(
          `^this code is too old for the database: the schema is at version ${SCHEMA_VERSION + 1} and needs code of schema version ${SCHEMA_VERSION + 1} or later`,
        ),
      );
      expect(message).toContain(
        `This dashboard runs on schema versions ${SUPPORTED_SCHEMA.min} to ${SUPPORTED_SCHEMA.max}`,
      );
    } finally {
      await t.close();
    }
  });
});
