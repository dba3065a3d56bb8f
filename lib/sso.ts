import 'server-only';
/**
 * Single sign-on through one OpenID Connect provider (next-auth's generic OAuth provider in
 * OIDC mode: discovery, PKCE and state, the ID token's signature checked against the issuer's
 * keys). The role comes from one claim of the ID token; a person whose token has no claim that
 * names a role is refused at sign-in, never let in as a viewer by default.
 */
import type { OAuthConfig } from 'next-auth/providers/oauth';
import { ROLES, type Role } from '../db/schema.ts';
import type { OidcEnv } from './settings.ts';

/** The provider id: the callback URL is /api/auth/callback/oidc. */
export const OIDC_PROVIDER_ID = 'oidc';

const RANK: Record<Role, number> = { viewer: 1, operator: 2, admin: 3 };
const isRole = (value: string): value is Role => (ROLES as readonly string[]).includes(value);

/**
 * The role `claims` grant: the configured claim's value (a string, or an array such as
 * groups), each value mapped through `roleMap` when there is one (values it does not list count
 * for nothing) or taken as a role's name when there is none. Several: the highest. None: null.
 */
export function roleFromClaims(
  claims: Record<string, unknown>,
  oidc: Pick<OidcEnv, 'roleClaim' | 'roleMap'>,
): Role | null {
  const raw = claims[oidc.roleClaim];
  const values = (Array.isArray(raw) ? raw : [raw]).filter((v): v is string => typeof v === 'string');
  let best: Role | null = null;
  for (const value of values) {
    const role = oidc.roleMap ? (Object.hasOwn(oidc.roleMap, value) ? oidc.roleMap[value]! : null) : value;
    if (role !== null && isRole(role) && (best === null || RANK[role] > RANK[best])) best = role;
  }
  return best;
}

/**
 * Who the audit log says acted: the email claim, else the preferred username, else the
 * subject qualified by the issuer (subjects are unique per issuer only).
 */
export function actorFromClaims(claims: Record<string, unknown>, issuer: string): string | null {
  const text = (key: string) => {
    const v = claims[key];
    return typeof v === 'string' && v.trim() ? v.trim().slice(0, 254) : null;
  };
  const sub = text('sub');
  return text('email')?.toLowerCase() ?? text('preferred_username') ?? (sub ? `${sub}@${new URL(issuer).host}` : null);
}

/** What the provider's profile step hands to the signIn and jwt callbacks. */
export interface OidcUser {
  id: string;
  email: string | null;
  name: string | null;
  /** Null: refused in the signIn callback. */
  role: Role | null;
  actor: string | null;
}

export function oidcProvider(oidc: OidcEnv): OAuthConfig<Record<string, unknown>> {
  return {
    id: OIDC_PROVIDER_ID,
    name: oidc.name,
    type: 'oauth',
    wellKnown: `${oidc.issuer}/.well-known/openid-configuration`,
    // The claims come from the verified ID token, not from the userinfo endpoint.
    idToken: true,
    checks: ['pkce', 'state'],
    clientId: oidc.clientId,
    clientSecret: oidc.clientSecret,
    authorization: { params: { scope: oidc.scope } },
    profile(claims): OidcUser {
      const email = typeof claims.email === 'string' ? claims.email.toLowerCase() : null;
      return {
        id: String(claims.sub),
        email,
        name: typeof claims.name === 'string' ? claims.name : email,
        role: roleFromClaims(claims, oidc),
        actor: actorFromClaims(claims, oidc.issuer),
      };
    },
  };
}
