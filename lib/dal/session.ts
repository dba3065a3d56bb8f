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
import { findUserByEmail } from '../../db/users.ts';
import { authOptions } from '../auth.ts';
import { database } from '../db.ts';

export interface SessionUser {
  email: string;
  role: Role;
}

const isRole = (role: string): role is Role => (ROLES as readonly string[]).includes(role);

/**
 * The signed-in user as the database says now: a user disabled or demoted since signing in
 * loses access at once, not when the session expires. Null without a session.
 */
export const getViewer = cache(async (): Promise<SessionUser | null> => {
  const session = await getServerSession(authOptions());
  const email = session?.user?.email;
  if (!email) return null;
  const user = await findUserByEmail(database(), email);
  if (!user || user.disabled || !isRole(user.role)) return null;
  return { email: user.email, role: user.role };
});
