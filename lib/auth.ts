import 'server-only';
/**
 * Sessions: next-auth credentials against the users table, a JWT carrying the role. Every data
 * access function calls `requireRole`, which reads the session on the server; hiding a button
 * is never the check.
 */
import { getServerSession, type NextAuthOptions } from 'next-auth';
import CredentialsProvider from 'next-auth/providers/credentials';
import { authenticate, findUserByEmail } from '../db/users';
import type { Role } from '../db/schema';
import { database } from './db';
import { DEMO_PASSWORD, webEnv } from './env';
import { AuthError } from './errors';

export interface SessionUser {
  email: string;
  role: Role;
}

const RANK: Record<Role, number> = { viewer: 1, operator: 2, admin: 3 };

export function authOptions(): NextAuthOptions {
  const env = webEnv();
  return {
    secret: env.secret,
    session: { strategy: 'jwt', maxAge: 8 * 3600 },
    pages: { signIn: '/login' },
    providers: [
      CredentialsProvider({
        name: 'Email and password',
        credentials: { email: { label: 'Email', type: 'email' }, password: { label: 'Password', type: 'password' } },
        async authorize(credentials) {
          const email = String(credentials?.email ?? '').slice(0, 254);
          const password = String(credentials?.password ?? '').slice(0, 200);
          if (!email || !password) return null;
          // Demo passwords only open the demo: anywhere else they are refused.
          if (!env.demo && password === DEMO_PASSWORD) return null;
          const user = await authenticate(database(), email, password);
          return user ? { id: user.id, email: user.email, name: user.email, role: user.role } : null;
        },
      }),
    ],
    callbacks: {
      jwt({ token, user }) {
        if (user) token.role = (user as { role?: Role }).role;
        return token;
      },
      session({ session, token }) {
        if (session.user) (session.user as { role?: unknown }).role = token.role;
        return session;
      },
    },
  };
}

/**
 * The signed-in user as the database says now: a user disabled or demoted since signing in
 * loses access at once, not when the session expires.
 */
export async function currentUser(): Promise<SessionUser | null> {
  const session = await getServerSession(authOptions());
  const email = session?.user?.email;
  if (!email) return null;
  const user = await findUserByEmail(database(), email);
  if (!user || user.disabled || !(user.role in RANK)) return null;
  return { email: user.email, role: user.role };
}

export function allows(user: SessionUser, role: Role): boolean {
  return RANK[user.role] >= RANK[role];
}

/** The signed-in user if their role is at least `role`; otherwise AuthError (401 or 403). */
export async function requireRole(role: Role): Promise<SessionUser> {
  const user = await currentUser();
  if (!user) throw new AuthError(401, 'Please sign in.');
  if (!allows(user, role)) throw new AuthError(403, `This needs the ${role} role; you are signed in as ${user.role}.`);
  return user;
}
