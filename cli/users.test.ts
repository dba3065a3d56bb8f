/** `leasehold users add|disable|list`: a disabled user is not enabled again by a repeated add. */
import { spawn } from 'node:child_process';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { run } from '../db/queue/executor.ts';
import { authenticate } from '../db/users.ts';
import { useTestDatabase } from '../test/db.ts';
import { cli, ROOT } from '../test/cli.ts';

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
    await cli(['users', 'add', 'gone@example.com', '--role', 'admin', '--password-stdin'], {
      env: env(),
      input: 'first-password\n',
    });
    await cli(['users', 'disable', 'gone@example.com'], { env: env() });
    const before = await userRow('gone@example.com');
    expect(before).toMatchObject({ role: 'admin', disabled: true });

    const refused = await cli(['users', 'add', 'gone@example.com', '--role', 'viewer', '--password-stdin'], {
      env: env(),
      input: 'second-password\n',
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /gone@example\.com is disabled; nothing was changed\. To enable them again: leasehold users add gone@example\.com --role viewer --enable/,
    );
    expect(await userRow('gone@example.com')).toEqual(before);
    const versionBefore = await sessionVersionOf('gone@example.com');

    const enabled = await cli(
      ['users', 'add', 'gone@example.com', '--role', 'viewer', '--password-stdin', '--enable'],
      {
        env: env(),
        input: 'second-password\n',
      },
    );
    expect(enabled.code).toBe(0);
    expect(enabled.stdout.trim()).toBe('enabled again and updated gone@example.com (viewer)');
    expect(await userRow('gone@example.com')).toMatchObject({ role: 'viewer', disabled: false });
    expect(await sessionVersionOf('gone@example.com')).toBe(versionBefore + 1);
    expect(await authenticate(t.db, 'gone@example.com', 'second-password')).toMatchObject({ role: 'viewer' });
  });

  it('updates an active user’s role and password on a repeated add', async () => {
    await cli(['users', 'add', 'lead@example.com', '--role', 'viewer', '--password-stdin'], {
      env: env(),
      input: 'first-password\n',
    });
    const updated = await cli(['users', 'add', 'lead@example.com', '--role', 'admin', '--password-stdin'], {
      env: env(),
      input: 'other-password\n',
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
    const cases: [string[], RegExp, string?][] = [
      [['users', 'add', 'not-an-email', '--role', 'viewer'], /<email>: Invalid email/],
      [
        ['users', 'add', 'x@example.com', '--role', 'king'],
        /--role: Invalid option: expected one of "viewer"\|"operator"\|"admin"/,
      ],
      [
        ['users', 'add', 'x@example.com', '--role', 'viewer', '--password-stdin'],
        /--password-stdin: at least 10 characters/,
        'short\n',
      ],
      [
        ['users', 'add', 'x@example.com', '--role', 'viewer', '--password-stdin'],
        /--password-stdin: standard input was empty/,
        '',
      ],
      [['users', 'add', 'x@example.com'], /users add needs --role: one of viewer, operator, admin/],
      [
        ['users', 'add', 'x@example.com', '--role', 'viewer', '--password-stdin'],
        /--password-stdin: that is the demo password/,
        'leasehold-demo\n',
      ],
      [['users', 'disable', 'nobody@example.com'], /no user nobody@example\.com; nothing was changed/],
      [['users'], /name an action: add, disable or list/],
      [
        ['users', 'list', '--role', 'admin'],
        /--role, --password-prompt, --password-stdin and --enable go with users add/,
      ],
      [
        ['users', 'add', 'x@example.com', '--role', 'viewer', '--password-prompt', '--password-stdin'],
        /--password-prompt and --password-stdin: choose one/,
      ],
    ];
    for (const [args, sentence, input] of cases) {
      const result = await cli(args, { env: env(), ...(input === undefined ? {} : { input }) });
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toMatch(sentence);
    }
    expect(await count()).toBe(before);
  });
});

describe('the password of leasehold users add', () => {
  it('is read from standard input with --password-stdin: its first line, without the line ending', async () => {
    const added = await cli(['users', 'add', 'piped@example.com', '--role', 'viewer', '--password-stdin'], {
      env: env(),
      input: 'piped-password-1\r\nignored second line\n',
    });
    expect(added.code).toBe(0);
    // Nothing generated, so nothing printed but the outcome.
    expect(added.stdout.trim()).toBe('created piped@example.com (viewer)');
    expect(await authenticate(t.db, 'piped@example.com', 'piped-password-1')).toMatchObject({ role: 'viewer' });
  });

  it('is refused as an argument, with a sentence naming the ways that replace it, and nothing is written', async () => {
    const refused = await cli(
      ['users', 'add', 'argv@example.com', '--role', 'viewer', '--password', 'argv-password-1'],
      {
        env: env(),
      },
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /--password no longer takes the password on the command line, where other users of this machine can read it \(ps, shell history\); nothing was changed\. Type it at a prompt with --password-prompt, or pipe it in with --password-stdin/,
    );
    expect(await userRow('argv@example.com')).toBeUndefined();
  });

  it('is asked for on the terminal with --password-prompt, twice, and never shown', async () => {
    // A real terminal: script(1) runs the command on a pseudo-terminal and relays what is typed.
    const command = `${process.execPath} --import tsx cli/main.ts users add typed@example.com --role operator --password-prompt`;
    const child = spawn('script', ['-qfec', command, '/dev/null'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        DATABASE_URL: t.url,
        TERM: 'dumb',
      } as unknown as NodeJS.ProcessEnv,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    const seen = (text: string) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no ${JSON.stringify(text)} in ${JSON.stringify(output)}`)),
          20_000,
        );
        const check = () => {
          if (!output.includes(text)) return;
          clearTimeout(timer);
          child.stdout!.off('data', check);
          resolve();
        };
        child.stdout!.on('data', check);
        check();
      });
    child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    await seen('Password for typed@example.com: ');
    child.stdin!.write('typed-password-1\r');
    await seen('The same password again: ');
    child.stdin!.write('typed-password-1\r');
    expect(await exited).toBe(0);
    child.stdin!.end();
    expect(output).toContain('created typed@example.com (operator)');
    expect(output).not.toContain('typed-password-1');
    expect(await authenticate(t.db, 'typed@example.com', 'typed-password-1')).toMatchObject({ role: 'operator' });
  }, 60_000);

  it('is not asked for without a terminal: --password-prompt then points at --password-stdin', async () => {
    const refused = await cli(['users', 'add', 'notty@example.com', '--role', 'viewer', '--password-prompt'], {
      env: env(),
      input: 'notty-password-1\n',
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /--password-prompt needs a terminal on standard input; to pipe the password in, use --password-stdin/,
    );
    expect(await userRow('notty@example.com')).toBeUndefined();
  });

  it('is explained in --help: a prompt or standard input, never an argument', async () => {
    const help = await cli(['users', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--password-prompt');
    expect(help.stdout).toContain('--password-stdin');
    expect(help.stdout).toMatch(
      /The password is never an argument \(other users of the\s+machine could read it in ps\)/,
    );
    expect(help.stdout).not.toMatch(/--password PASSWORD/);
  });
});
