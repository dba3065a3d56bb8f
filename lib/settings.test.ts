/**
 * The web process's settings as the environment gives them: single sign-on all or nothing, the
 * role map, built-in users switched off, the configured redaction defaults. Pure parsing.
 */
import { describe, expect, it } from 'vitest';
import { parseWebEnv } from './settings.ts';

const BASE = { DATABASE_URL: 'postgres://db/leasehold', NEXTAUTH_SECRET: 'x'.repeat(40) };
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
