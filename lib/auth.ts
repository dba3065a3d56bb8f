import 'server-only';
/**
 * Sessions: next-auth credentials against the users table, a JWT carrying the role. Every data
 * access function checks its row in lib/dal/policy.ts, which reads the session on the server
 * (lib/dal/session.ts); hiding a button is never the check.
 */
import type { NextAuthOptions } from 'next-auth';
import CredentialsProvider from 'next-auth/providers/credentials';
import type { Role } from '../db/schema.ts';
import { authenticate, DEMO_PASSWORD, DEMO_USERS } from '../db/users.ts';
import { database } from './db.ts';
import type { DemoLoginsDTO } from './dto.ts';
import { webEnv } from './env.ts';

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

/** The demo users and their password for the login page: in demo mode only, else null. */
export function demoLogins(): DemoLoginsDTO | null {
  if (!webEnv().demo) return null;
  return { emails: DEMO_USERS.map((u) => u.email), password: DEMO_PASSWORD };
}
