import 'server-only';
/**
 * Single sign-on through one OpenID Connect provider (next-auth's generic OAuth provider in
 * OIDC mode: discovery, PKCE and state, the ID token's signature checked against the issuer's
 * keys). The role comes from one claim of the ID token; a person whose token has no claim that
 * names a role is refused at sign-in, never let in as a viewer by default, and so is one whose
 * email the provider does not say it verified (`email_verified`, unless configured as not sent).
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

/** The longest audit name kept (db/sign-in.ts cuts there): the suffix is never cut off. */
const ACTOR_MAX = 254;

/**
 * Who the audit log says acted: the email claim, else the preferred username, else the
 * subject, each followed by ` (sso: <issuer host>)`. The suffix keeps it apart from every
 * built-in user (whose audit name is their bare email), so an SSO user who calls themselves
 * `admin@example.com` at the provider is never recorded as the built-in admin; the name is cut
 * before the suffix is.
 */
export function actorFromClaims(claims: Record<string, unknown>, issuer: string): string | null {
  const text = (key: string) => {
    const v = claims[key];
    return typeof v === 'string' && v.trim() ? v.trim() : null;
  };
  const name = text('email')?.toLowerCase() ?? text('preferred_username') ?? text('sub');
  if (!name) return null;
  const suffix = ` (sso: ${new URL(issuer).host})`;
  return `${name.slice(0, Math.max(1, ACTOR_MAX - suffix.length))}${suffix}`;
}

/**
 * The key of a single sign-on identity's session version (leasehold.session_versions.actor):
 * issuer and subject, the pair OpenID Connect makes unique, never the e-mail (which a user may
 * change at the provider, or set to a built-in user's). Built-in users are keyed by their email,
 * which cannot contain a space: this key always does, so the two never meet.
 */
export function ssoSessionKey(issuer: string, subject: string): string {
  return `sso ${issuer} ${subject}`;
}

/**
 * Whether the ID token vouches for its email claim: `email_verified` true (some providers send
 * the string "true"). A token without an email claim has nothing to vouch for. A provider
 * configured as not sending the claim (LEASEHOLD_OIDC_EMAIL_VERIFIED=not-sent) may leave it out,
 * but one that says false is refused there too.
 */
export function emailVerified(claims: Record<string, unknown>, oidc: Pick<OidcEnv, 'emailVerified'>): boolean {
  if (typeof claims.email !== 'string' || !claims.email.trim()) return true;
  const said = claims.email_verified;
  if (said === true || said === 'true') return true;
  return said === undefined && oidc.emailVerified === 'not-sent';
}

/** Why a single sign-on is refused in the signIn callback (lib/auth.ts); the login page's code. */
export type SsoRefusal = 'AccessDenied' | 'EmailUnverified';

/** What the provider's profile step hands to the signIn and jwt callbacks. */
export interface OidcUser {
  id: string;
  email: string | null;
  name: string | null;
  /** Null: refused in the signIn callback. */
  role: Role | null;
  actor: string | null;
  /** The configured issuer, and the session-version key of it and the subject. */
  issuer: string;
  sessionKey: string | null;
  /** Set: refused in the signIn callback, with that code (no role; an unverified email). */
  refusal: SsoRefusal | null;
}

/** The identity an ID token's verified claims describe, and whether it may sign in. */
export function oidcUser(claims: Record<string, unknown>, oidc: OidcEnv): OidcUser {
  const email = typeof claims.email === 'string' ? claims.email.toLowerCase() : null;
  const subject = typeof claims.sub === 'string' && claims.sub ? claims.sub : null;
  const role = roleFromClaims(claims, oidc);
  const actor = actorFromClaims(claims, oidc.issuer);
  return {
    id: String(claims.sub),
    email,
    name: typeof claims.name === 'string' ? claims.name : email,
    role,
    actor,
    issuer: oidc.issuer,
    sessionKey: subject ? ssoSessionKey(oidc.issuer, subject) : null,
    refusal: !emailVerified(claims, oidc)
      ? 'EmailUnverified'
      : role === null || actor === null || subject === null
        ? 'AccessDenied'
        : null,
  };
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
      return oidcUser(claims, oidc);
    },
  };
}
