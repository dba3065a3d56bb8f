/**
 * scripts/test-deps.sh, which `npm test` and .ci/run run first: with everything there it says
 * nothing; with a package missing and no way to install it, it stops at once naming the one
 * command that installs what is missing.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_DIR } from '../cli/database-select.ts';

const SCRIPT = path.join(PROJECT_DIR, 'scripts', 'test-deps.sh');

function deps(env: Record<string, string>) {
  return spawnSync('bash', [SCRIPT], {
    env: { PATH: process.env.PATH ?? '', LEASEHOLD_TEST_DEPS_INSTALL: 'never', ...env } as unknown as NodeJS.ProcessEnv,
    encoding: 'utf8',
    timeout: 30_000,
  });
}

describe('scripts/test-deps.sh', () => {
  it('passes quietly when Chromium, PgBouncer, faketime and promtool are there', () => {
    const run = deps({ CHROMIUM_PATH: '/bin/sh', PGBOUNCER: '/bin/sh', FAKETIME: '/bin/sh', PROMTOOL: '/bin/sh' });
    expect(run.status).toBe(0);
    expect(run.stdout + run.stderr).toBe('');
  });

  it('stops at once with the one apt-get command for what is missing', () => {
    const run = deps({
      CHROMIUM_PATH: '/nonexistent/chromium',
      PGBOUNCER: '/bin/sh',
      FAKETIME: '/nonexistent/faketime',
      PROMTOOL: '/bin/sh',
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain("npm test needs Debian's chromium faketime");
    expect(run.stderr).toContain(
      "Install them as root:  sudo sh -c 'apt-get update && apt-get install -y chromium faketime'",
    );
  });

  it("names Debian's prometheus package when promtool is missing", () => {
    const run = deps({
      CHROMIUM_PATH: '/bin/sh',
      PGBOUNCER: '/bin/sh',
      FAKETIME: '/bin/sh',
      PROMTOOL: '/nonexistent/promtool',
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain("npm test needs Debian's prometheus (");
    expect(run.stderr).toContain("Install them as root:  sudo sh -c 'apt-get update && apt-get install -y prometheus'");
  });

  it('is what npm test runs first and what .ci/run calls instead of a list of its own', () => {
    const pkg = JSON.parse(readFileSync(path.join(PROJECT_DIR, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts.test).toMatch(/^bash scripts\/test-deps\.sh && /);
    const ci = readFileSync(path.join(PROJECT_DIR, '.ci', 'run'), 'utf8');
    expect(ci).toMatch(/^bash scripts\/test-deps\.sh$/m);
    expect(ci).not.toMatch(/apt-get install/);
  });
});
