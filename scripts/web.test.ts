/**
 * `npm run web` checks the dashboard's settings before it starts anything: a half-configured
 * single sign-on stops it with the dashboard's sentence (exit code 2), never a server whose
 * first request fails. No database is reached: the check comes first.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_DIR } from './database.ts';

function web(env: Record<string, string>) {
  const clean = { ...process.env };
  for (const key of Object.keys(clean)) if (key.startsWith('LEASEHOLD_')) delete clean[key];
  return spawnSync(
    process.execPath,
    [path.join(PROJECT_DIR, 'node_modules', 'tsx', 'dist', 'cli.mjs'), path.join(PROJECT_DIR, 'scripts', 'web.ts')],
    {
      cwd: PROJECT_DIR,
      // Port 1 on loopback: nothing listens, so a start that got past the check would fail differently.
      env: {
        ...clean,
        DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
        NEXTAUTH_SECRET: 'x'.repeat(40),
        ...env,
      },
      encoding: 'utf8',
      timeout: 60_000,
    },
  );
}

describe('npm run web', () => {
  it('refuses to start with a partial single sign-on configuration, naming what is missing', () => {
    const run = web({ LEASEHOLD_OIDC_ISSUER: 'https://login.example.com' });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(
      '[leasehold] refusing to start: single sign-on is half configured: set LEASEHOLD_OIDC_CLIENT_ID, LEASEHOLD_OIDC_CLIENT_SECRET too',
    );
  });

  it('refuses to start with built-in users off and no single sign-on', () => {
    const run = web({ LEASEHOLD_BUILTIN_USERS: 'false' });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('LEASEHOLD_BUILTIN_USERS=false leaves no way to sign in');
  });
});
