/**
 * The web process's settings as the environment gives them: single sign-on all or nothing, the
 * role map, built-in users switched off, the configured redaction defaults. Pure parsing.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isLoopbackHost, NOT_WEB_SETTINGS, parseWebEnv, WEB_SETTINGS } from './settings.ts';

const BASE = {
  DATABASE_URL: 'postgres://db/leasehold',
  NEXTAUTH_SECRET: 'lh-test-9f3Kq2LxVb7Wm4Tz8Hc1Rj6Ny5Pd0Gs',
  NEXTAUTH_URL: 'https://ops.example.com',
};
const OIDC = {
  LEASEHOLD_OIDC_ISSUER: 'https://login.example.com/realms/ops/',
  LEASEHOLD_OIDC_CLIENT_ID: 'leasehold',
  LEASEHOLD_OIDC_CLIENT_SECRET: 'client-secret',
};

describe('single sign-on settings', () => {
  it('is off when no LEASEHOLD_OIDC_* variable is set, or only empty ones', () => {
    expect(parseWebEnv(BASE).oidc).toBeNull();
    expect(parseWebEnv({ ...BASE, LEASEHOLD_OIDC_ISSUER: '', LEASEHOLD_OIDC_NAME: '' }).oidc).toBeNull();
  });

  it('takes the issuer, client and defaults for the rest', () => {
    expect(parseWebEnv({ ...BASE, ...OIDC }).oidc).toEqual({
      issuer: 'https://login.example.com/realms/ops',
      clientId: 'leasehold',
      clientSecret: 'client-secret',
      name: 'single sign-on',
      scope: 'openid email profile',
      roleClaim: 'leasehold_role',
      roleMap: null,
      emailVerified: 'required',
    });
  });

  it('refuses a partial configuration, naming what is missing', () => {
    expect(() => parseWebEnv({ ...BASE, LEASEHOLD_OIDC_ISSUER: OIDC.LEASEHOLD_OIDC_ISSUER })).toThrow(
      'Leasehold dashboard: single sign-on is half configured: set LEASEHOLD_OIDC_CLIENT_ID, LEASEHOLD_OIDC_CLIENT_SECRET too',
    );
    expect(() => parseWebEnv({ ...BASE, LEASEHOLD_OIDC_ROLE_CLAIM: 'groups' })).toThrow(
      /half configured: set LEASEHOLD_OIDC_ISSUER, LEASEHOLD_OIDC_CLIENT_ID, LEASEHOLD_OIDC_CLIENT_SECRET too/,
    );
  });

  it('refuses a plain http:// issuer on a host that is not this machine, as it refuses such a NEXTAUTH_URL', () => {
    expect(() =>
      parseWebEnv({ ...BASE, ...OIDC, LEASEHOLD_OIDC_ISSUER: 'http://login.example.com/realms/ops' }),
    ).toThrow(
      'Leasehold dashboard: LEASEHOLD_OIDC_ISSUER must be https:// (login.example.com is not this machine, so the client secret and ID tokens would travel in the clear); only localhost and 127.0.0.1 may use http://',
    );
    expect(() => parseWebEnv({ ...BASE, ...OIDC, LEASEHOLD_OIDC_ISSUER: 'http://10.0.0.5:8080' })).toThrow(
      /LEASEHOLD_OIDC_ISSUER must be https:\/\/ \(10\.0\.0\.5:8080 is not this machine/,
    );
    for (const loopback of ['http://127.0.0.1:9570', 'http://localhost:8080/realms/ops', 'http://[::1]:9000'])
      expect(parseWebEnv({ ...BASE, ...OIDC, LEASEHOLD_OIDC_ISSUER: loopback }).oidc?.issuer).toBe(loopback);
  });

  it('requires email_verified unless LEASEHOLD_OIDC_EMAIL_VERIFIED=not-sent says the provider does not send it', () => {
    expect(parseWebEnv({ ...BASE, ...OIDC }).oidc?.emailVerified).toBe('required');
    expect(parseWebEnv({ ...BASE, ...OIDC, LEASEHOLD_OIDC_EMAIL_VERIFIED: 'not-sent' }).oidc?.emailVerified).toBe(
      'not-sent',
    );
    expect(() => parseWebEnv({ ...BASE, ...OIDC, LEASEHOLD_OIDC_EMAIL_VERIFIED: 'no' })).toThrow(
      /LEASEHOLD_OIDC_EMAIL_VERIFIED must be required \(the default\) or not-sent/,
    );
  });

  it('refuses an issuer that is not an http(s) URL, and a scope without openid', () => {
    expect(() => parseWebEnv({ ...BASE, ...OIDC, LEASEHOLD_OIDC_ISSUER: 'login.example.com' })).toThrow(
      /LEASEHOLD_OIDC_ISSUER must be an http\(s\) URL/,
    );
    expect(() => parseWebEnv({ ...BASE, ...OIDC, LEASEHOLD_OIDC_SCOPE: 'email profile' })).toThrow(
      /LEASEHOLD_OIDC_SCOPE must include openid/,
    );
  });

  it('parses a role map of claim values to roles, and refuses one that names no role', () => {
    const env = parseWebEnv({
      ...BASE,
      ...OIDC,
      LEASEHOLD_OIDC_ROLE_CLAIM: 'groups',
      LEASEHOLD_OIDC_ROLE_MAP: 'ops-admins=admin, ops=operator,cn=support=viewer',
    });
    expect(env.oidc?.roleMap).toEqual({ 'ops-admins': 'admin', ops: 'operator', 'cn=support': 'viewer' });
    expect(() => parseWebEnv({ ...BASE, ...OIDC, LEASEHOLD_OIDC_ROLE_MAP: 'ops=root' })).toThrow(
      /LEASEHOLD_OIDC_ROLE_MAP: "root" is not a role \(expected viewer, operator, admin\)/,
    );
    expect(() => parseWebEnv({ ...BASE, ...OIDC, LEASEHOLD_OIDC_ROLE_MAP: 'admin' })).toThrow(
      /"admin" is not claim-value=role/,
    );
  });
});

describe('built-in users', () => {
  it('are on unless LEASEHOLD_BUILTIN_USERS says false', () => {
    expect(parseWebEnv(BASE).builtinUsers).toBe(true);
    expect(parseWebEnv({ ...BASE, ...OIDC, LEASEHOLD_BUILTIN_USERS: 'false' }).builtinUsers).toBe(false);
    expect(() => parseWebEnv({ ...BASE, LEASEHOLD_BUILTIN_USERS: 'nope' })).toThrow(/LEASEHOLD_BUILTIN_USERS/);
  });

  it('cannot be switched off without single sign-on: nobody could sign in', () => {
    expect(() => parseWebEnv({ ...BASE, LEASEHOLD_BUILTIN_USERS: 'false' })).toThrow(
      /LEASEHOLD_BUILTIN_USERS=false leaves no way to sign in/,
    );
  });
});

describe('configured redaction defaults', () => {
  it('reads a comma-separated list of paths, and refuses one it could not match', () => {
    expect(parseWebEnv({ ...BASE, LEASEHOLD_REDACT_PATHS: 'giftNote, to[].email,,card.number' }).redactPaths).toEqual([
      'giftNote',
      'to[].email',
      'card.number',
    ]);
    expect(parseWebEnv(BASE).redactPaths).toEqual([]);
    expect(() => parseWebEnv({ ...BASE, LEASEHOLD_REDACT_PATHS: 'ok, not a path' })).toThrow(
      /LEASEHOLD_REDACT_PATHS: expected keys joined by dots/,
    );
  });
});

describe('production settings that fail closed', () => {
  const { NEXTAUTH_URL: _url, ...noUrl } = BASE;

  it('needs NEXTAUTH_URL outside demo mode, and https unless the host is this machine', () => {
    expect(() => parseWebEnv(noUrl)).toThrow(/set NEXTAUTH_URL to the dashboard's public URL/);
    expect(() => parseWebEnv({ ...BASE, NEXTAUTH_URL: 'http://ops.example.com' })).toThrow(
      /NEXTAUTH_URL must be https:\/\/ \(ops\.example\.com is not this machine/,
    );
    expect(() => parseWebEnv({ ...BASE, NEXTAUTH_URL: 'ops.example.com' })).toThrow(/NEXTAUTH_URL is not a URL/);
    expect(() => parseWebEnv({ ...BASE, NEXTAUTH_URL: 'ftp://ops.example.com' })).toThrow(/must be an https:\/\/ URL/);
    expect(parseWebEnv(BASE).publicUrl?.href).toBe('https://ops.example.com/');
    for (const local of ['http://localhost:3000', 'http://127.0.0.1:3000/leasehold/api/auth', 'http://[::1]:3000']) {
      expect(parseWebEnv({ ...BASE, NEXTAUTH_URL: local }).publicUrl?.href).toBe(new URL(local).href);
    }
    // Demo mode runs on this machine without it.
    expect(parseWebEnv({ ...noUrl, LEASEHOLD_DEMO: 'true' }).publicUrl).toBeNull();
  });

  it('knows loopback hosts from others that merely look like them', () => {
    for (const host of ['localhost', 'dash.localhost', '127.0.0.1', '127.9.9.9', '[::1]']) {
      expect(isLoopbackHost(host)).toBe(true);
    }
    for (const host of [
      'localhost.example.com',
      '128.0.0.1',
      '10.0.0.1',
      '0.0.0.0',
      '[::ffff:7f00:1]',
      'example.com',
    ]) {
      expect(isLoopbackHost(host)).toBe(false);
    }
  });

  it('refuses a metrics token shorter than 32 characters', () => {
    expect(() => parseWebEnv({ ...BASE, LEASEHOLD_METRICS_TOKEN: '1234' })).toThrow(
      /LEASEHOLD_METRICS_TOKEN must be at least 32 random characters/,
    );
    const token = 'mt-0123456789abcdefghijklmnopqrst';
    expect(parseWebEnv({ ...BASE, LEASEHOLD_METRICS_TOKEN: token }).metricsToken).toBe(token);
  });

  it('refuses a secret or token that is a placeholder (too few different characters)', () => {
    expect(() => parseWebEnv({ ...BASE, NEXTAUTH_SECRET: 'a'.repeat(40) })).toThrow(
      /NEXTAUTH_SECRET has fewer than 10 different characters, so it is a placeholder/,
    );
    expect(() => parseWebEnv({ ...BASE, LEASEHOLD_METRICS_TOKEN: 'abcd'.repeat(10) })).toThrow(
      /LEASEHOLD_METRICS_TOKEN has fewer than 10 different characters/,
    );
  });

  it('gives demo mode a random secret per process, and refuses the old public demo secret everywhere', () => {
    const demo = { ...noUrl, NEXTAUTH_SECRET: undefined, LEASEHOLD_DEMO: 'true' };
    const one = parseWebEnv(demo).secret;
    expect(one.length).toBeGreaterThanOrEqual(32);
    expect(new Set(one).size).toBeGreaterThan(10);
    // One per process: the sign-in route and the pages read the same.
    expect(parseWebEnv(demo).secret).toBe(one);
    for (const mode of ['true', 'false']) {
      expect(() =>
        parseWebEnv({ ...BASE, LEASEHOLD_DEMO: mode, NEXTAUTH_SECRET: 'leasehold-demo-secret-not-for-production' }),
      ).toThrow(/NEXTAUTH_SECRET is the old demo secret, which is public/);
    }
  });

  it('offers the demo logins only in demo mode, and not when npm start wrote no demo users', () => {
    expect(parseWebEnv(BASE).demoLogins).toBe(false);
    expect(parseWebEnv({ ...BASE, LEASEHOLD_DEMO: 'true' }).demoLogins).toBe(true);
    expect(parseWebEnv({ ...BASE, LEASEHOLD_DEMO: 'true', LEASEHOLD_DEMO_USERS: 'false' }).demoLogins).toBe(false);
  });
});

describe('the list of web settings (WEB_SETTINGS)', () => {
  const root = path.join(import.meta.dirname, '..');
  const sources = (folder: string): string[] =>
    readdirSync(path.join(root, folder), { recursive: true, encoding: 'utf8' })
      .filter((f) => /\.tsx?$/.test(f) && !/\.test(-d)?\.tsx?$/.test(f))
      .map((f) => path.join(folder, f));
  const files = [
    ...sources('lib'),
    ...sources('app'),
    ...readdirSync(path.join(root, 'cli'))
      // Every command's but the worker command's (its variables are workers/settings.ts's).
      .filter((f) => f.endsWith('.ts') && f !== 'workers.ts' && !f.includes('.test.'))
      .map((f) => path.join('cli', f)),
    'scripts/web.ts',
    'instrumentation.ts',
    'proxy.ts',
    'next.config.ts',
  ];
  /** Upper-case variables read: `env.X`, `process.env.X`, `env['X']`. */
  const readsIn = (source: string) => [
    ...[...source.matchAll(/\benv\??\.([A-Z][A-Z0-9_]*)\b/g)].map((m) => m[1]!),
    ...[...source.matchAll(/\benv\[\s*['"`]([A-Z][A-Z0-9_]*)['"`]\s*\]/g)].map((m) => m[1]!),
  ];
  const settingsSource = readFileSync(path.join(root, 'lib', 'settings.ts'), 'utf8');
  const schemaBlock = settingsSource.slice(settingsSource.indexOf('const schema = z.object({'));
  /** What parseWebEnv reads: its schema's keys. */
  const parsed = [
    ...schemaBlock.slice(0, schemaBlock.indexOf('} satisfies')).matchAll(/^ {2}([A-Z][A-Z0-9_]*):/gm),
  ].map((m) => m[1]!);

  it('holds every variable read in lib/, app/, cli/ (not workers.ts), scripts/web.ts, instrumentation.ts, proxy.ts and next.config.ts', () => {
    const known = new Set<string>([...Object.keys(WEB_SETTINGS), ...NOT_WEB_SETTINGS]);
    const unknown = files.flatMap((file) =>
      readsIn(readFileSync(path.join(root, file), 'utf8'))
        .filter((name) => !known.has(name))
        .map((name) => `${file}: ${name}`),
    );
    expect(unknown).toEqual([]);
  });

  it('holds no variable that nothing reads', () => {
    expect(parsed.length).toBeGreaterThan(10);
    const read = new Set([...parsed, ...files.flatMap((file) => readsIn(readFileSync(path.join(root, file), 'utf8')))]);
    expect(Object.keys(WEB_SETTINGS).filter((name) => !read.has(name))).toEqual([]);
  });
});
