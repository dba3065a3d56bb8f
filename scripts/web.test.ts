/**
 * `npm run web` checks the dashboard's settings before it starts anything: a half-configured
 * single sign-on stops it with the dashboard's sentence (exit code 2), never a server whose
 * first request fails. No database is reached: the check comes first. A DATABASE_URL is
 * checked, not migrated: the dashboard's login is not one that may change the schema.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { emptyDatabase, hasLeaseholdSchema } from '../test/db.ts';
import { PROJECT_DIR } from '../cli/database-select.ts';

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
        NEXTAUTH_SECRET: 'lh-test-9f3Kq2LxVb7Wm4Tz8Hc1Rj6Ny5Pd0Gs',
        NEXTAUTH_URL: 'https://ops.example.com',
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

  it('refuses to start without NEXTAUTH_URL, or with plain http to a host that is not this machine', () => {
    const unset = web({ NEXTAUTH_URL: '' });
    expect(unset.status).toBe(2);
    expect(unset.stderr).toContain("[leasehold] refusing to start: set NEXTAUTH_URL to the dashboard's public URL");
    const plain = web({ NEXTAUTH_URL: 'http://ops.example.com' });
    expect(plain.status).toBe(2);
    expect(plain.stderr).toContain('NEXTAUTH_URL must be https://');
  });

  it('refuses to start with a LEASEHOLD_METRICS_TOKEN too short to be one', () => {
    const run = web({ LEASEHOLD_METRICS_TOKEN: 'short-token' });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(
      '[leasehold] refusing to start: LEASEHOLD_METRICS_TOKEN must be at least 32 random characters',
    );
  });

  it('refuses to start with built-in users off and no single sign-on', () => {
    const run = web({ LEASEHOLD_BUILTIN_USERS: 'false' });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('LEASEHOLD_BUILTIN_USERS=false leaves no way to sign in');
  });

  it('does not migrate a DATABASE_URL with the dashboard’s login: it says to migrate, and creates nothing', async () => {
    const empty = await emptyDatabase('leasehold_web_nomigrate');
    try {
      const run = web({ DATABASE_URL: empty.url });
      expect(run.status).toBe(2);
      expect(run.stderr).toMatch(/refusing to start: the database DATABASE_URL names has no schema leasehold/);
      expect(await hasLeaseholdSchema(empty.url)).toBe(false);
    } finally {
      await empty.drop();
    }
  });
});
