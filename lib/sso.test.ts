/** The role and the audit name a single sign-on identity gets from its ID token's claims. */
import { describe, expect, it } from 'vitest';
import { actorFromClaims, roleFromClaims } from './sso.ts';

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
  it('is the email, else the preferred username, else the subject at the issuer', () => {
    const issuer = 'https://login.example.com/realms/ops';
    expect(actorFromClaims({ sub: 's1', email: 'Ada@Example.com', preferred_username: 'ada' }, issuer)).toBe(
      'ada@example.com',
    );
    expect(actorFromClaims({ sub: 's1', preferred_username: 'ada' }, issuer)).toBe('ada');
    expect(actorFromClaims({ sub: 's1' }, issuer)).toBe('s1@login.example.com');
    expect(actorFromClaims({}, issuer)).toBeNull();
  });
});
