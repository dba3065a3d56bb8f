import 'server-only';
/**
 * The signed-in user, looked up once per request. The console layout and every data-access
 * function of a render ask for it; React `cache` gives them one session read and one users
 * query between them. Outside a React request (route handlers without a render scope, tests)
 * `cache` calls through, so each call looks the user up afresh: never a stale or shared user.
 */
import { getServerSession } from 'next-auth';
import { cache } from 'react';
import { authOptions } from '../auth.ts';
import { currentUser, type SessionClaims, type SessionUser } from '../identity.ts';

export type { SessionUser } from '../identity.ts';

/**
 * The signed-in user. A built-in user as the database says now: one disabled or demoted since
 * signing in loses access at once, not when the session expires. A single sign-on user has no
 * users row: the identity provider vouched for the role at sign-in, and the session (8 hours
 * from sign-in at most, lib/auth.ts) carries it. Either kind ends at once when its way in is
 * switched off, and when its session version moved on (sign-out, a password change,
 * disabling): lib/identity.ts. Null without a session.
 */
export const getViewer = cache(async (): Promise<SessionUser | null> => {
  const session = await getServerSession(authOptions());
  const signedIn = session?.user as SessionClaims | undefined;
  if (!signedIn) return null;
  return currentUser(signedIn);
});
