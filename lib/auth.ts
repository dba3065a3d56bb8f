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
import { clearSignInFailures, recordSignIn, recordSignInFailure, signInWait, throttleAccount } from '../db/sign-in.ts';
import { authenticate, DEMO_PASSWORD, DEMO_USERS, raiseSessionVersion, sessionVersion } from '../db/users.ts';
import { database } from './db.ts';
import type { LoginOptionsDTO } from './dto.ts';
import { webEnv } from './env.ts';
import { signInRequest } from './sign-in-context.ts';
import { throttledCode } from './sign-in-wait.ts';
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
          const db = database();
          const request = signInRequest();
          const account = throttleAccount(email);
          const audit = { actor: account, via: 'credentials' as const, client: request.client };
          // Asked before the guess queues for a hash slot and again once it has one (a guess
          // that waited may have been overtaken by failures): a throttled guess never hashes.
          const refuseIfThrottled = async () => {
            const wait = await signInWait(db, account, request.client);
            if (wait === 0) return;
            request.throttled = { seconds: wait };
            await recordSignIn(db, { ...audit, outcome: 'throttled', retryAfter: wait });
            throw new Error(throttledCode(wait));
          };
          await refuseIfThrottled();
          // Demo passwords only open the demo: anywhere else they are refused (and counted).
          const user =
            !env.demo && password === DEMO_PASSWORD ? null : await authenticate(db, email, password, refuseIfThrottled);
          if (!user) {
            const { wait } = await recordSignInFailure(db, account, request.client);
            await recordSignIn(db, { ...audit, outcome: 'failed', ...(wait > 0 ? { retryAfter: wait } : {}) });
            return null;
          }
          await clearSignInFailures(db, account, request.client);
          await recordSignIn(db, { ...audit, actor: user.email, outcome: 'succeeded' });
          return {
            id: user.id,
            email: user.email,
            name: user.email,
            role: user.role,
            sessionVersion: user.sessionVersion,
          };
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
      async signIn({ user, account }) {
        if (account?.provider !== OIDC_PROVIDER_ID) return true;
        // No role claim (or none that names a role), or nobody to name in the audit log:
        // refused here, so no session is ever issued (next-auth answers ?error=AccessDenied).
        const sso = user as unknown as OidcUser;
        const allowed = sso.role !== null && sso.actor !== null;
        await recordSignIn(database(), {
          actor: sso.actor ?? sso.email ?? '-',
          outcome: allowed ? 'succeeded' : 'refused',
          via: 'oidc',
          client: signInRequest().client,
        });
        return allowed;
      },
      async jwt({ token, user, account }) {
        if (user) {
          const via: SignInVia = account?.provider === OIDC_PROVIDER_ID ? 'oidc' : 'credentials';
          token.via = via;
          token.role = (user as { role?: Role }).role;
          if (via === 'oidc') {
            const actor = (user as unknown as OidcUser).actor;
            token.actor = actor;
            token.sv = actor ? await sessionVersion(database(), actor) : 0;
          } else {
            token.sv = (user as { sessionVersion?: number }).sessionVersion ?? 0;
          }
        }
        return token;
      },
      session({ session, token }) {
        if (session.user) {
          const u = session.user as { role?: unknown; via?: unknown; actor?: unknown; sv?: unknown };
          u.role = token.role;
          u.via = token.via ?? 'credentials';
          u.sv = token.sv ?? 0;
          if (token.actor) u.actor = token.actor;
        }
        return session;
      },
    },
    events: {
      // Sign-out ends every session of the identity, a copied cookie among them: the version
      // each was issued under is behind from now on (lib/dal/session.ts).
      async signOut({ token }) {
        const actor = token?.via === 'oidc' ? token.actor : token?.email;
        if (typeof actor === 'string' && actor) await raiseSessionVersion(database(), actor);
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
