import 'server-only';
/**
 * Sessions: next-auth, a JWT carrying the role. Two ways in: built-in users (credentials
 * against the users table, unless LEASEHOLD_BUILTIN_USERS=false) and single sign-on through
 * an OpenID Connect provider (lib/sso.ts, when configured), whose role claim is checked at
 * sign-in. The token records which way a session came in (`via`): lib/dal/session.ts trusts
 * each kind only while that way is still switched on. Every data access function checks its
 * row in lib/dal/policy.ts, which reads the session on the server; hiding a button is never
 * the check.
 */
import type { NextAuthOptions } from 'next-auth';
import CredentialsProvider from 'next-auth/providers/credentials';
import type { Role } from '../db/schema.ts';
import { authenticate, DEMO_PASSWORD, DEMO_USERS } from '../db/users.ts';
import { database } from './db.ts';
import type { LoginOptionsDTO } from './dto.ts';
import { webEnv } from './env.ts';
import { OIDC_PROVIDER_ID, oidcProvider, type OidcUser } from './sso.ts';

/** How a session came in: the token's `via`. */
export type SignInVia = 'credentials' | 'oidc';

const LOGIN_BASE = process.env.NEXT_PUBLIC_LEASEHOLD_BASE_PATH ?? '';

export function authOptions(): NextAuthOptions {
  const env = webEnv();
  const providers: NextAuthOptions['providers'] = [];
  // Switched off, the provider is not registered at all: /api/auth/callback/credentials then
  // has nothing to call and refuses every request.
  if (env.builtinUsers) {
    providers.push(
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
    );
  }
  if (env.oidc) providers.push(oidcProvider(env.oidc));
  return {
    secret: env.secret,
    session: { strategy: 'jwt', maxAge: 8 * 3600 },
    // Errors (a refused single sign-on among them) come back to the login page as ?error=…,
    // which says them in a sentence.
    // next-auth builds its redirects to these pages from the origin: the base path the build
    // was made for (next.config.ts) goes in front, or an error under /leasehold lands on /login.
    pages: { signIn: `${LOGIN_BASE}/login`, error: `${LOGIN_BASE}/login` },
    providers,
    callbacks: {
      signIn({ user, account }) {
        if (account?.provider !== OIDC_PROVIDER_ID) return true;
        // No role claim (or none that names a role), or nobody to name in the audit log:
        // refused here, so no session is ever issued (next-auth answers ?error=AccessDenied).
        const sso = user as unknown as OidcUser;
        return sso.role !== null && sso.actor !== null;
      },
      jwt({ token, user, account }) {
        if (user) {
          const via: SignInVia = account?.provider === OIDC_PROVIDER_ID ? 'oidc' : 'credentials';
          token.via = via;
          token.role = (user as { role?: Role }).role;
          if (via === 'oidc') token.actor = (user as unknown as OidcUser).actor;
        }
        return token;
      },
      session({ session, token }) {
        if (session.user) {
          const u = session.user as { role?: unknown; via?: unknown; actor?: unknown };
          u.role = token.role;
          u.via = token.via ?? 'credentials';
          if (token.actor) u.actor = token.actor;
        }
        return session;
      },
    },
  };
}

/** What the login page offers: the form for built-in users, the SSO button, the demo logins. */
export function loginOptions(): LoginOptionsDTO {
  const env = webEnv();
  return {
    builtinUsers: env.builtinUsers,
    sso: env.oidc ? { providerId: OIDC_PROVIDER_ID, name: env.oidc.name } : null,
    demo:
      env.demoLogins && env.builtinUsers ? { emails: DEMO_USERS.map((u) => u.email), password: DEMO_PASSWORD } : null,
  };
}
