import 'server-only';
/**
 * The signed-in user, looked up once per request. The console layout and every data-access
 * function of a render ask for it; React `cache` gives them one session read and one users
 * query between them. Outside a React request (route handlers without a render scope, tests)
 * `cache` calls through, so each call looks the user up afresh: never a stale or shared user.
 */
import { getServerSession } from 'next-auth';
import { cache } from 'react';
import { ROLES, type Role } from '../../db/schema.ts';
import { findUserByEmail, sessionVersion } from '../../db/users.ts';
import { authOptions } from '../auth.ts';
import { database } from '../db.ts';
import { webEnv } from '../env.ts';

export interface SessionUser {
  /** Who the audit log names: a built-in user's email, or a single sign-on identity's (lib/sso.ts). */
  email: string;
  role: Role;
}

const isRole = (role: unknown): role is Role => typeof role === 'string' && (ROLES as readonly string[]).includes(role);

/**
 * The signed-in user. A built-in user as the database says now: one disabled or demoted since
 * signing in loses access at once, not when the session expires. A single sign-on user has no
 * users row: the identity provider vouched for the role at sign-in, and the session (8 hours at
 * most) carries it. Either kind ends at once when its way in is switched off, and when its
 * session version moved on (sign-out, a password change, disabling). Null without a session.
 */
export const getViewer = cache(async (): Promise<SessionUser | null> => {
  const session = await getServerSession(authOptions());
  const signedIn = session?.user as
    | { email?: string | null; role?: unknown; via?: unknown; actor?: unknown; sv?: unknown }
    | undefined;
  if (!signedIn) return null;
  const env = webEnv();
  // The session version it was issued under (none before versions existed: 0). Sign-out, a
  // new password and disabling raise the identity's, which ends every session issued before.
  const sv = typeof signedIn.sv === 'number' ? signedIn.sv : 0;
  if (signedIn.via === 'oidc') {
    if (!env.oidc || typeof signedIn.actor !== 'string' || !isRole(signedIn.role)) return null;
    if ((await sessionVersion(database(), signedIn.actor)) !== sv) return null;
    return { email: signedIn.actor, role: signedIn.role };
  }
  if (!env.builtinUsers) return null;
  const email = signedIn.email;
  if (!email) return null;
  // One query: the users row and its session version.
  const user = await findUserByEmail(database(), email);
  if (!user || user.disabled || !isRole(user.role) || user.sessionVersion !== sv) return null;
  return { email: user.email, role: user.role };
});
