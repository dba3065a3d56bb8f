import 'server-only';
/**
 * Whether what a session says still names someone who may act, and who: asked by
 * lib/dal/session.ts on every data read (the current role with it), and by the sign-in route
 * for /api/auth/session (lib/auth.ts, checkedSessionAnswer: a session that fails is answered as
 * none). Pure of next-auth: the claims are the session callback's copy of the token's.
 *
 * - A built-in user: the users row as it is now (not disabled, its role), and the session
 *   version the token was issued under still the email's.
 * - A single sign-on user: no users row; the role the ID token gave at sign-in. The session
 *   version is keyed by issuer and subject (lib/sso.ts, ssoSessionKey), never by e-mail, so it
 *   can never be a built-in user's; a token of another issuer than the configured one, or one
 *   from before sessions were keyed that way (no key), names nobody.
 * - Either ends when its way in is switched off.
 */
import { ROLES, type Role } from '../db/schema.ts';
import { findUserByEmail, sessionVersion } from '../db/users.ts';
import { database } from './db.ts';
import { webEnv } from './env.ts';

export interface SessionUser {
  /** Who the audit log names: a built-in user's email, or a single sign-on identity's (lib/sso.ts). */
  email: string;
  role: Role;
}

/** What a session token carries besides next-auth's own claims (lib/auth.ts, the jwt callback). */
export interface SessionClaims {
  email?: unknown;
  role?: unknown;
  /** How it came in: `credentials` or `oidc` (none before `via` existed: credentials). */
  via?: unknown;
  /** Single sign-on: the audit name, `<email> (sso: <issuer host>)`. */
  actor?: unknown;
  /** Single sign-on: the issuer the identity signed in at. */
  iss?: unknown;
  /** Single sign-on: the session-version key of issuer and subject. */
  sk?: unknown;
  /** The session version at sign-in (none before versions existed: 0). */
  sv?: unknown;
}

const isRole = (role: unknown): role is Role => typeof role === 'string' && (ROLES as readonly string[]).includes(role);

/** The user the claims name now, or null when they name nobody who may act. Database errors throw. */
export async function currentUser(claims: SessionClaims): Promise<SessionUser | null> {
  const env = webEnv();
  // Sign-out, a new password and disabling raise the identity's version, which ends every
  // session issued before.
  const sv = typeof claims.sv === 'number' ? claims.sv : 0;
  if (claims.via === 'oidc') {
    if (!env.oidc || !isRole(claims.role)) return null;
    if (typeof claims.actor !== 'string' || typeof claims.sk !== 'string' || claims.iss !== env.oidc.issuer)
      return null;
    if ((await sessionVersion(database(), claims.sk)) !== sv) return null;
    return { email: claims.actor, role: claims.role };
  }
  if (!env.builtinUsers) return null;
  const email = claims.email;
  if (typeof email !== 'string' || !email) return null;
  // One query: the users row and its session version.
  const user = await findUserByEmail(database(), email);
  if (!user || user.disabled || !isRole(user.role) || user.sessionVersion !== sv) return null;
  return { email: user.email, role: user.role };
}
