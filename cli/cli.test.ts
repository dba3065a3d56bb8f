/**
 * The CLI's surface: --help and --version of every command, the database policy (a missing or
 * wrong DATABASE_URL stops start-up with a sentence naming it, and no embedded server starts),
 * and .env from the working directory under the environment.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../test/db.ts';
import { cli, ROOT, tempProject } from '../test/cli.ts';

const t = useTestDatabase({ max: 2 });
const VERSION = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const COMMANDS = ['migrate', 'workers', 'dashboard', 'enqueue', 'jobs', 'users'];
const SECRET = { NEXTAUTH_SECRET: 'lh-test-9f3Kq2LxVb7Wm4Tz8Hc1Rj6Ny5Pd0Gs', NEXTAUTH_URL: 'https://ops.example.com' };

describe('leasehold --help and --version', () => {
  it('prints the package version and the Node.js version, alone and after every command', async () => {
    for (const args of [['--version'], ...COMMANDS.map((c) => [c, '--version'])]) {
      const run = await cli(args);
      expect(run.code, args.join(' ')).toBe(0);
      expect(run.stdout.trim()).toBe(`leasehold ${VERSION} (Node.js ${process.version})`);
    }
  });

  it('prints each command’s usage for --help, and the list of commands for leasehold --help', async () => {
    const top = await cli(['--help']);
    expect(top.code).toBe(0);
    for (const c of COMMANDS) expect(top.stdout).toMatch(new RegExp(`^  ${c} `, 'm'));
    for (const c of COMMANDS) {
      const run = await cli([c, '--help']);
      expect(run.code, c).toBe(0);
      expect(run.stdout).toMatch(new RegExp(`^usage: leasehold ${c}`));
    }
    const workers = await cli(['workers', '--help']);
    expect(workers.stdout).toMatch(/--concurrency <value>\s+LEASEHOLD_CONCURRENCY\s+default 10/);
  });

  it('refuses an unknown command or flag with exit code 2, naming it', async () => {
    const unknown = await cli(['frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/no command "frobnicate"; the commands are migrate, workers/);
    const flag = await cli(['jobs', '--colour'], { env: { DATABASE_URL: t.url } });
    expect(flag.code).toBe(2);
    expect(flag.stderr).toMatch(/Unknown option '--colour'.*leasehold jobs --help/);
  });
});

describe('the database policy', () => {
  const invocations: [string, string[], Record<string, string>][] = [
    ['migrate', ['migrate'], {}],
    ['migrate --print-sql', ['migrate', '--print-sql'], {}],
    ['workers', ['workers', '--handlers', 'handlers.mjs'], {}],
    ['dashboard', ['dashboard'], SECRET],
    ['enqueue', ['enqueue', 'default', 'demo.kind', '{}'], {}],
    ['jobs', ['jobs'], {}],
    ['users list', ['users', 'list'], {}],
    ['users add', ['users', 'add', 'ops@example.com', '--role', 'admin'], {}],
  ];

  it('stops every command without DATABASE_URL, naming it, and starts no embedded server', async () => {
    for (const [name, args, env] of invocations) {
      const cwd = tempProject();
      const run = await cli(args, { cwd, env });
      expect(run.code, name).toBe(2);
      expect(run.stderr, name).toMatch(/DATABASE_URL is not set: set it \(in the environment or in \.env\)/);
      expect(run.stderr, name).toMatch(/or pass --embedded/);
      expect(existsSync(path.join(cwd, '.leasehold')), name).toBe(false);
    }
  });

  it('stops npm run db:migrate, npm run user:add and npm run workers without DATABASE_URL too', async () => {
    const cwd = tempProject();
    const scripts: [string, string[]][] = [
      ['scripts/migrate.ts', []],
      ['scripts/user-add.ts', ['--email', 'ops@example.com', '--role', 'admin']],
      ['scripts/workers.ts', []],
    ];
    for (const [script, args] of scripts) {
      const run = await cli(args, { cwd, script: path.join(ROOT, script) });
      expect(run.code, script).toBe(2);
      expect(run.stderr, script).toMatch(/DATABASE_URL is not set/);
    }
    expect(existsSync(path.join(cwd, '.leasehold'))).toBe(false);
  });

  it('names DATABASE_URL when it is not a postgres:// URL (exit 2), hiding its password', async () => {
    const notUrl = await cli(['jobs'], { env: { DATABASE_URL: 'localhost:5432/app' } });
    expect(notUrl.code).toBe(2);
    expect(notUrl.stderr).toMatch(/DATABASE_URL .*(not a URL|must start with postgres:\/\/)/);
    const mysql = await cli(['users', 'list'], { env: { DATABASE_URL: 'mysql://app:hunter2@db/app' } });
    expect(mysql.code).toBe(2);
    expect(mysql.stderr).toMatch(
      /DATABASE_URL must start with postgres:\/\/ or postgresql:\/\/ \(mysql:\/\/app:\*\*\*@db\/app starts with mysql:\)/,
    );
    expect(mysql.stderr).not.toMatch(/hunter2/);
  });

  it('names DATABASE_URL when its server cannot be reached (exit 1), hiding its password', async () => {
    const run = await cli(['enqueue', 'default', 'demo.kind', '{}'], {
      env: { DATABASE_URL: 'postgres://app:hunter2@127.0.0.1:1/app' },
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /could not connect to the database DATABASE_URL names \(postgres:\/\/app:\*\*\*@127\.0\.0\.1:1\/app\): .*ECONNREFUSED/,
    );
    expect(run.stderr).not.toMatch(/hunter2/);
  });
});

describe('.env in the working directory', () => {
  it('supplies DATABASE_URL when the environment has none', async () => {
    const cwd = tempProject();
    writeFileSync(path.join(cwd, '.env'), `# the project's settings\nDATABASE_URL=${t.url}\n`);
    const run = await cli(['jobs', '--queue', 'from-dotenv'], { cwd });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe('no jobs match');
  });

  it('yields to the environment: a variable set there keeps its value', async () => {
    const cwd = tempProject();
    writeFileSync(path.join(cwd, '.env'), `DATABASE_URL=${t.url}\n`);
    const run = await cli(['jobs'], { cwd, env: { DATABASE_URL: 'postgres://app@127.0.0.1:1/from-environment' } });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/127\.0\.0\.1:1\/from-environment/);
  });

  it('is not needed: without one the command runs on the environment', async () => {
    const cwd = tempProject();
    const run = await cli(['jobs'], { cwd, env: { DATABASE_URL: t.url } });
    expect(run.code).toBe(0);
  });
});

describe('leasehold dashboard', () => {
  it('refuses to start without NEXTAUTH_SECRET, naming it', async () => {
    const cwd = tempProject();
    const run = await cli(['dashboard'], { cwd, env: { DATABASE_URL: t.url, NEXTAUTH_SECRET: 'short' } });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/NEXTAUTH_SECRET must be set to a random string of at least 32 characters/);
    expect(existsSync(path.join(cwd, '.leasehold'))).toBe(false);
  });

  it('names the packages to install when the project has no Next.js, and builds nothing', async () => {
    const cwd = tempProject();
    const run = await cli(['dashboard'], { cwd, env: { DATABASE_URL: t.url, ...SECRET } });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /the dashboard needs packages your project does not have: next, react, react-dom, next-auth, .*Install them: npm install next react/,
    );
    expect(existsSync(path.join(cwd, '.leasehold', 'dashboard', 'app'))).toBe(false);
  });
});
