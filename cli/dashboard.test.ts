/**
 * `leasehold dashboard` before Next.js starts: it refuses a database it cannot serve with a
 * sentence on stderr (exit 2) and builds nothing; the base path is checked, remembered in the
 * build marker, and a build for another path is built again. Next.js itself is not started here
 * (e2e/base-path.spec.ts builds and serves one).
 */
import { mkdirSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { emptyDatabase, hasLeaseholdSchema } from '../test/db.ts';
import { cli, ROOT, tempProject } from '../test/cli.ts';
import { useRoleDatabase } from '../test/roles.ts';
import {
  dashboardHostname,
  MARKER,
  nextAuthUrlFor,
  normalizeBasePath,
  readMarker,
  rebuildReason,
} from './dashboard.ts';

const r = useRoleDatabase();
const SECRET = { NEXTAUTH_SECRET: 'lh-test-9f3Kq2LxVb7Wm4Tz8Hc1Rj6Ny5Pd0Gs', NEXTAUTH_URL: 'https://ops.example.com' };

describe('leasehold dashboard on a database it cannot serve', () => {
  it('a login without leasehold_dashboard: exit 2, the grant it lacks and the GRANT to run, nothing built', async () => {
    const cwd = tempProject();
    const run = await cli(['dashboard'], { cwd, env: { DATABASE_URL: r.urls.producer, ...SECRET } });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      new RegExp(`the login ${r.logins.producer} cannot do what the dashboard needs in schema leasehold: it lacks `),
    );
    expect(run.stderr).toContain('SELECT on leasehold.audit_log');
    expect(run.stderr).toContain(`GRANT leasehold_dashboard TO ${r.logins.producer};`);
    expect(existsSync(path.join(cwd, '.leasehold'))).toBe(false);
  });

  it('no schema leasehold: exit 2, run leasehold migrate, and no DDL run', async () => {
    const empty = await emptyDatabase('leasehold_dash_cli');
    try {
      const cwd = tempProject();
      const run = await cli(['dashboard'], { cwd, env: { DATABASE_URL: empty.url, ...SECRET } });
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/has no schema leasehold: run `leasehold migrate` first/);
      expect(await hasLeaseholdSchema(empty.url)).toBe(false);
    } finally {
      await empty.drop();
    }
  });

  it('half-configured single sign-on: exit 2 with the missing settings named, before any build', async () => {
    const cwd = tempProject();
    const run = await cli(['dashboard'], {
      cwd,
      env: { DATABASE_URL: r.urls.dashboard, ...SECRET, LEASEHOLD_OIDC_ISSUER: 'https://login.example.com' },
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/LEASEHOLD_OIDC_CLIENT_ID/);
    expect(run.stderr).toMatch(/LEASEHOLD_OIDC_CLIENT_SECRET/);
    expect(existsSync(path.join(cwd, '.leasehold'))).toBe(false);
  });

  it('no NEXTAUTH_URL, or plain http to another host: exit 2 with the URL to set, before any build', async () => {
    const cwd = tempProject();
    const unset = await cli(['dashboard'], {
      cwd,
      env: { DATABASE_URL: r.urls.dashboard, NEXTAUTH_SECRET: SECRET.NEXTAUTH_SECRET },
    });
    expect(unset.code).toBe(2);
    expect(unset.stderr).toMatch(/set NEXTAUTH_URL to the dashboard's public URL/);
    const plain = await cli(['dashboard'], {
      cwd,
      env: { DATABASE_URL: r.urls.dashboard, ...SECRET, NEXTAUTH_URL: 'http://ops.example.com' },
    });
    expect(plain.code).toBe(2);
    expect(plain.stderr).toMatch(/NEXTAUTH_URL must be https:\/\//);
    expect(existsSync(path.join(cwd, '.leasehold'))).toBe(false);
  });

  it('a LEASEHOLD_METRICS_TOKEN too short to be one: exit 2 with the sentence, before the database or any build', async () => {
    const cwd = tempProject();
    const run = await cli(['dashboard'], {
      cwd,
      env: { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', ...SECRET, LEASEHOLD_METRICS_TOKEN: 'short-token' },
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/LEASEHOLD_METRICS_TOKEN must be at least 32 random characters/);
    expect(existsSync(path.join(cwd, '.leasehold'))).toBe(false);
  });

  it('the dashboard’s own login gets past the database to the packages check', async () => {
    const cwd = tempProject();
    const run = await cli(['dashboard'], { cwd, env: { DATABASE_URL: r.urls.dashboard, ...SECRET } });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/the dashboard needs packages your project does not have/);
    expect(run.stderr).not.toMatch(/warning/);
  });
});

describe('the address it listens on', () => {
  it('is 127.0.0.1 unless --hostname or LEASEHOLD_DASHBOARD_HOSTNAME says another (the flag wins)', () => {
    expect(dashboardHostname(undefined, {})).toBe('127.0.0.1');
    expect(dashboardHostname(undefined, { LEASEHOLD_DASHBOARD_HOSTNAME: '0.0.0.0' })).toBe('0.0.0.0');
    expect(dashboardHostname('::1', { LEASEHOLD_DASHBOARD_HOSTNAME: '0.0.0.0' })).toBe('::1');
    expect(() => dashboardHostname('', {})).toThrow(/--hostname needs an address/);
  });
});

describe('the base path', () => {
  it('is a URL path: / and a trailing slash are normalized, anything else refused', () => {
    expect(normalizeBasePath('/leasehold')).toBe('/leasehold');
    expect(normalizeBasePath('/ops/leasehold/')).toBe('/ops/leasehold');
    expect(normalizeBasePath('/')).toBe('');
    expect(normalizeBasePath('')).toBe('');
    for (const bad of ['leasehold', '/a b', '/x?y=1', '/x#y', '//x'])
      expect(() => normalizeBasePath(bad), bad).toThrow(/--base-path must be a URL path such as \/leasehold/);
  });

  it('needs NEXTAUTH_URL with the path and /api/auth; the public URL alone is completed', () => {
    expect(nextAuthUrlFor('https://ops.example.com/leasehold/api/auth', '/leasehold')).toBe(
      'https://ops.example.com/leasehold/api/auth',
    );
    expect(nextAuthUrlFor('https://ops.example.com/leasehold/', '/leasehold')).toBe(
      'https://ops.example.com/leasehold/api/auth',
    );
    expect(nextAuthUrlFor('http://127.0.0.1:3000', '')).toBe('http://127.0.0.1:3000/api/auth');
    expect(nextAuthUrlFor(undefined, '')).toBeUndefined();
    expect(() => nextAuthUrlFor(undefined, '/leasehold')).toThrow(
      /NEXTAUTH_URL must be set under a base path: .*https:\/\/ops\.example\.com\/leasehold\/api\/auth/,
    );
    expect(() => nextAuthUrlFor('https://ops.example.com/api/auth', '/leasehold')).toThrow(
      /the dashboard is built for the base path \/leasehold: set it to https:\/\/ops\.example\.com\/leasehold\/api\/auth/,
    );
  });

  it('the build marker remembers it: the same path serves the build, another path or the root rebuilds', () => {
    const dir = tempProject('leasehold-marker-');
    mkdirSync(path.join(dir, '.next'), { recursive: true });
    writeFileSync(path.join(dir, MARKER), JSON.stringify({ version: '9.9.9', basePath: '/leasehold' }));
    // After the sources' last change, as a build is.
    writeFileSync(path.join(dir, '.next', 'BUILD_ID'), 'x');
    const marker = readMarker(dir);
    expect(marker).toMatchObject({ version: '9.9.9', basePath: '/leasehold' });
    expect(rebuildReason(marker, dir, ROOT, '9.9.9', '/leasehold')).toBeNull();
    expect(rebuildReason(marker, dir, ROOT, '9.9.9', '/ops')).toBe('the build there is for the base path /leasehold');
    expect(rebuildReason(marker, dir, ROOT, '9.9.9', '')).toBe('the build there is for the base path /leasehold');
    expect(rebuildReason(marker, dir, ROOT, '9.9.10', '/leasehold')).toBe('the build there is for leasehold 9.9.9');
    // A marker from before base paths: a root build.
    writeFileSync(path.join(dir, MARKER), JSON.stringify({ version: '9.9.9' }));
    expect(rebuildReason(readMarker(dir), dir, ROOT, '9.9.9', '/leasehold')).toBe(
      'the build there is for the root path',
    );
  });

  it('leasehold dashboard refuses a bad --base-path, a base path without NEXTAUTH_URL, and an unknown argument (exit 2)', async () => {
    const cwd = tempProject();
    const env = { DATABASE_URL: r.urls.dashboard, NEXTAUTH_SECRET: SECRET.NEXTAUTH_SECRET };
    const bad = await cli(['dashboard', 'build', '--base-path', 'leasehold'], { cwd, env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--base-path must be a URL path such as \/leasehold/);
    const noUrl = await cli(['dashboard', '--base-path', '/leasehold'], { cwd, env });
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr).toMatch(/NEXTAUTH_URL must be set under a base path/);
    const unknown = await cli(['dashboard', 'serve'], { cwd, env });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/leasehold dashboard takes no argument but build, not "serve"/);
    expect(existsSync(path.join(cwd, '.leasehold'))).toBe(false);
  });
});
