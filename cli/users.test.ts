/** `leasehold users add|disable|list`: a disabled user is not enabled again by a repeated add. */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { run } from '../db/queue/executor.ts';
import { authenticate } from '../db/users.ts';
import { useTestDatabase } from '../test/db.ts';
import { cli } from '../test/cli.ts';

const t = useTestDatabase({ max: 2 });
const env = () => ({ DATABASE_URL: t.url });

const userRow = async (email: string) =>
  (
    await run<{ role: string; disabled: boolean; password_hash: string; updated_at: Date }>(
      t.db,
      sql`SELECT role, disabled, password_hash, updated_at FROM leasehold.users WHERE email = ${email}`,
    )
  )[0];

/** leasehold.session_versions for `email` (0 without a row): raised, every session of theirs ends. */
const sessionVersionOf = async (email: string) =>
  (
    await run<{ version: number }>(
      t.db,
      sql`SELECT coalesce((SELECT version FROM leasehold.session_versions WHERE actor = ${email}), 0) AS version`,
    )
  )[0]!.version;

describe('leasehold users', () => {
  it('adds a user with a generated password that signs in, lists them, and disables them', async () => {
    const added = await cli(['users', 'add', 'Ops@Example.com', '--role', 'operator'], { env: env() });
    expect(added.code).toBe(0);
    const password = /^created ops@example\.com \(operator\); password: (\S+)$/.exec(added.stdout.trim())?.[1];
    expect(password).toBeDefined();
    expect(await authenticate(t.db, 'ops@example.com', password!)).toMatchObject({ role: 'operator' });

    const listed = await cli(['users', 'list'], { env: env() });
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^ops@example\.com\s+operator\s+active$/m);

    expect(await sessionVersionOf('ops@example.com')).toBe(0);
    const disabled = await cli(['users', 'disable', 'ops@example.com'], { env: env() });
    expect(disabled.code).toBe(0);
    expect(disabled.stdout.trim()).toBe('disabled ops@example.com');
    // Disabling ends their sessions (lib/dal/session.ts compares the version).
    expect(await sessionVersionOf('ops@example.com')).toBe(1);
    expect(await authenticate(t.db, 'ops@example.com', password!)).toBeNull();
    expect((await cli(['users', 'list'], { env: env() })).stdout).toMatch(/^ops@example\.com\s+operator\s+disabled$/m);
    const again = await cli(['users', 'disable', 'ops@example.com'], { env: env() });
    expect(again.stdout.trim()).toBe('ops@example.com was disabled already');
    expect(await sessionVersionOf('ops@example.com')).toBe(1);
  });

  it('refuses to enable a disabled user by a repeated add, changing nothing, unless --enable', async () => {
    await cli(['users', 'add', 'gone@example.com', '--role', 'admin', '--password', 'first-password'], { env: env() });
    await cli(['users', 'disable', 'gone@example.com'], { env: env() });
    const before = await userRow('gone@example.com');
    expect(before).toMatchObject({ role: 'admin', disabled: true });

    const refused = await cli(
      ['users', 'add', 'gone@example.com', '--role', 'viewer', '--password', 'second-password'],
      {
        env: env(),
      },
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /gone@example\.com is disabled; nothing was changed\. To enable them again: leasehold users add gone@example\.com --role viewer --enable/,
    );
    expect(await userRow('gone@example.com')).toEqual(before);
    const versionBefore = await sessionVersionOf('gone@example.com');

    const enabled = await cli(
      ['users', 'add', 'gone@example.com', '--role', 'viewer', '--password', 'second-password', '--enable'],
      { env: env() },
    );
    expect(enabled.code).toBe(0);
    expect(enabled.stdout.trim()).toBe('enabled again and updated gone@example.com (viewer)');
    expect(await userRow('gone@example.com')).toMatchObject({ role: 'viewer', disabled: false });
    expect(await sessionVersionOf('gone@example.com')).toBe(versionBefore + 1);
    expect(await authenticate(t.db, 'gone@example.com', 'second-password')).toMatchObject({ role: 'viewer' });
  });

  it('updates an active user’s role and password on a repeated add', async () => {
    await cli(['users', 'add', 'lead@example.com', '--role', 'viewer', '--password', 'first-password'], { env: env() });
    const updated = await cli(['users', 'add', 'lead@example.com', '--role', 'admin', '--password', 'other-password'], {
      env: env(),
    });
    expect(updated.stdout.trim()).toBe('updated lead@example.com (admin)');
    // A new password ends the sessions signed in with the old one.
    expect(await sessionVersionOf('lead@example.com')).toBe(1);
    expect(await authenticate(t.db, 'lead@example.com', 'other-password')).toMatchObject({ role: 'admin' });
  });

  it('refuses a bad email, role or password, an unknown user and a missing action, writing nothing', async () => {
    const count = async () =>
      (await run<{ n: number }>(t.db, sql`SELECT count(*)::int AS n FROM leasehold.users`))[0]!.n;
    const before = await count();
    const cases: [string[], RegExp][] = [
      [['users', 'add', 'not-an-email', '--role', 'viewer'], /<email>: Invalid email/],
      [
        ['users', 'add', 'x@example.com', '--role', 'king'],
        /--role: Invalid option: expected one of "viewer"\|"operator"\|"admin"/,
      ],
      [
        ['users', 'add', 'x@example.com', '--role', 'viewer', '--password', 'short'],
        /--password: at least 10 characters/,
      ],
      [['users', 'add', 'x@example.com'], /users add needs --role: one of viewer, operator, admin/],
      [
        ['users', 'add', 'x@example.com', '--role', 'viewer', '--password', 'leasehold-demo'],
        /--password: that is the demo password/,
      ],
      [['users', 'disable', 'nobody@example.com'], /no user nobody@example\.com; nothing was changed/],
      [['users'], /name an action: add, disable or list/],
      [['users', 'list', '--role', 'admin'], /--role, --password and --enable go with users add/],
    ];
    for (const [args, sentence] of cases) {
      const result = await cli(args, { env: env() });
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toMatch(sentence);
    }
    expect(await count()).toBe(before);
  });
});
