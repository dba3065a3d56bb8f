/** The role and the audit name a single sign-on identity gets from its ID token's claims. */
import { describe, expect, it } from 'vitest';
import { actorFromClaims, emailVerified, oidcUser, roleFromClaims, ssoSessionKey } from './sso.ts';

const plain = { roleClaim: 'leasehold_role', roleMap: null };
const mapped = { roleClaim: 'groups', roleMap: { 'ops-admins': 'admin', ops: 'operator' } as const };

describe('the role from the claim', () => {
  it('takes a role named by the claim, as a string or among an array', () => {
    expect(roleFromClaims({ leasehold_role: 'operator' }, plain)).toBe('operator');
    expect(roleFromClaims({ leasehold_role: ['viewer', 'admin'] }, plain)).toBe('admin');
  });

  it('grants nothing without the claim, or for a value that names no role', () => {
    expect(roleFromClaims({ email: 'a@example.com' }, plain)).toBeNull();
    expect(roleFromClaims({ leasehold_role: 'superuser' }, plain)).toBeNull();
    expect(roleFromClaims({ leasehold_role: 7 }, plain)).toBeNull();
    expect(roleFromClaims({ leasehold_role: [] }, plain)).toBeNull();
  });

  it('maps claim values through the role map, the highest role winning, unmapped values counting for nothing', () => {
    expect(roleFromClaims({ groups: ['staff', 'ops'] }, mapped)).toBe('operator');
    expect(roleFromClaims({ groups: ['ops', 'ops-admins'] }, mapped)).toBe('admin');
    // With a map, a role's own name is just another unmapped value.
    expect(roleFromClaims({ groups: ['admin', 'staff'] }, mapped)).toBeNull();
    expect(roleFromClaims({ groups: ['toString', '__proto__'] }, mapped)).toBeNull();
  });
});

describe('the name the audit log records', () => {
  it('is the email, else the preferred username, else the subject, each with the issuer host after it', () => {
    const issuer = 'https://login.example.com/realms/ops';
    expect(actorFromClaims({ sub: 's1', email: 'Ada@Example.com', preferred_username: 'ada' }, issuer)).toBe(
      'ada@example.com (sso: login.example.com)',
    );
    expect(actorFromClaims({ sub: 's1', preferred_username: 'ada' }, issuer)).toBe('ada (sso: login.example.com)');
    expect(actorFromClaims({ sub: 's1' }, issuer)).toBe('s1 (sso: login.example.com)');
    expect(actorFromClaims({}, issuer)).toBeNull();
  });

  it('never equals a built-in user’s (their bare email), even when the email is as long as one can be', () => {
    const issuer = 'https://login.example.com';
    const long = `${'a'.repeat(240)}@example.com`;
    const actor = actorFromClaims({ sub: 's1', email: long }, issuer)!;
    expect(actor.length).toBeLessThanOrEqual(254);
    expect(actor.endsWith(' (sso: login.example.com)')).toBe(true);
    expect(actorFromClaims({ sub: 's1', email: 'admin@example.com' }, issuer)).not.toBe('admin@example.com');
  });
});

describe('the session key', () => {
  it('is the issuer and the subject, not the email, and can never be an email (it has spaces)', () => {
    expect(ssoSessionKey('https://login.example.com', 'abc-123')).toBe('sso https://login.example.com abc-123');
    const oidc = {
      issuer: 'https://login.example.com',
      roleClaim: 'leasehold_role',
      roleMap: null,
      emailVerified: 'required',
    } as const;
    const one = oidcUser(
      { sub: 'u1', email: 'admin@example.com', email_verified: true, leasehold_role: 'viewer' },
      oidc as never,
    );
    const renamed = oidcUser(
      { sub: 'u1', email: 'other@example.com', email_verified: true, leasehold_role: 'viewer' },
      oidc as never,
    );
    expect(one.sessionKey).toBe(renamed.sessionKey);
    expect(one.sessionKey).not.toContain('admin@example.com');
  });
});

describe('the email claim', () => {
  const required = { emailVerified: 'required' } as const;
  const notSent = { emailVerified: 'not-sent' } as const;

  it('counts only when email_verified says true (a boolean, or the string some providers send)', () => {
    expect(emailVerified({ email: 'a@example.com', email_verified: true }, required)).toBe(true);
    expect(emailVerified({ email: 'a@example.com', email_verified: 'true' }, required)).toBe(true);
    expect(emailVerified({ email: 'a@example.com', email_verified: false }, required)).toBe(false);
    expect(emailVerified({ email: 'a@example.com' }, required)).toBe(false);
    // No email claim: nothing to vouch for (the audit name is the username or the subject).
    expect(emailVerified({ preferred_username: 'a' }, required)).toBe(true);
  });

  it('may come without email_verified from a provider configured as not sending it, but never with false', () => {
    expect(emailVerified({ email: 'a@example.com' }, notSent)).toBe(true);
    expect(emailVerified({ email: 'a@example.com', email_verified: false }, notSent)).toBe(false);
    expect(emailVerified({ email: 'a@example.com', email_verified: 'false' }, notSent)).toBe(false);
  });
});
