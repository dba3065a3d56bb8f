import 'server-only';
/**
 * Sessions: next-auth, a JWT carrying the role. Two ways in: built-in users (credentials
 * against the users table, unless LEASEHOLD_BUILTIN_USERS=false) and single sign-on through
 * an OpenID Connect provider (lib/sso.ts, when configured), whose role claim is checked at
 * sign-in. The token records which way a session came in (`via`): lib/identity.ts trusts
 * each kind only while that way is still switched on. Every data access function checks its
 * row in lib/dal/policy.ts, which reads the session on the server; hiding a button is never
 * the check.
 *
 * A session lasts SESSION_MAX_SECONDS (8 hours) from sign-in, however often it is refreshed:
 * the token carries its sign-in time (`signedInAt`), its own expiry never passes that plus 8
 * hours, and every read of it (the jwt callback) refuses one past it and one without a sign-in
 * time. A refused token is no session: /api/auth/session answers `{}` and clears the cookie.
 * One whose identity signed out, was disabled or was switched off since is refused by the
 * database check (lib/identity.ts): on every data read (lib/dal/session.ts), and for
 * /api/auth/session by checkedSessionAnswer, so a copied cookie gets no session there either.
 */
import type { NextAuthOptions } from 'next-auth';
import { encode, type JWT } from 'next-auth/jwt';
import CredentialsProvider from 'next-auth/providers/credentials';
import { LeaseholdError } from '../db/errors.ts';
import type { Role } from '../db/schema.ts';
import { clearSignInFailures, recordSignIn, recordSignInFailure, signInWait, throttleAccount } from '../db/sign-in.ts';
import { authenticate, DEMO_PASSWORD, DEMO_USERS, raiseSessionVersion, sessionVersion } from '../db/users.ts';
import { safeRedirect } from './callback-url.ts';
import { database } from './db.ts';
import type { LoginOptionsDTO } from './dto.ts';
import { type WebEnv, webEnv } from './env.ts';
import { currentUser, type SessionClaims } from './identity.ts';
import { signInRequest } from './sign-in-context.ts';
import { throttledCode } from './sign-in-wait.ts';
import { OIDC_PROVIDER_ID, oidcProvider, type OidcUser } from './sso.ts';

/** How a session came in: the token's `via`. */
export type SignInVia = 'credentials' | 'oidc';

const LOGIN_BASE = process.env.NEXT_PUBLIC_LEASEHOLD_BASE_PATH ?? '';

/** The longest a session lasts, counted from sign-in: refreshing it does not move the limit. */
export const SESSION_MAX_SECONDS = 8 * 3600;

const nowSeconds = () => Math.floor(Date.now() / 1000);

/**
 * Thrown by the jwt callback for a token that is no longer a session. next-auth catches it:
 * /api/auth/session answers `{}` and clears the cookie; getServerSession answers null.
 */
export class SessionEnded extends LeaseholdError {
  override name = 'SessionEnded';
  readonly code = 'session_ended';
}

/**
 * Why `token` is past its absolute limit at `now` (seconds), or null while it is within it. A
 * token without a sign-in time (issued before tokens carried one) is past it: everyone signs in
 * once after the upgrade.
 */
export function sessionLimitReason(token: JWT, now: number): string | null {
  const at = token.signedInAt;
  if (typeof at !== 'number' || !Number.isFinite(at)) return 'the token has no sign-in time';
  // A minute of skew between dashboard processes is tolerated; more is not a real sign-in.
  if (at > now + 60) return 'the token was signed in the future';
  if (now - at >= SESSION_MAX_SECONDS) return `signed in more than ${SESSION_MAX_SECONDS / 3600} hours ago`;
  return null;
}

/** What is left of the token's 8 hours at `now`, in seconds (0 without a sign-in time). */
export function sessionSecondsLeft(token: JWT, now: number): number {
  const at = token.signedInAt;
  if (typeof at !== 'number' || !Number.isFinite(at)) return 0;
  return Math.max(0, Math.min(SESSION_MAX_SECONDS, at + SESSION_MAX_SECONDS - now));
}

/** next-auth's session cookie, plain or `__Secure-`, whole or in chunks (`.0`, `.1`, …). */
const SESSION_COOKIE = /^(?:__Secure-)?next-auth\.session-token(?:\.\d+)?$/;

/**
 * next-auth's answer to `GET /api/auth/session`, checked against the database (lib/identity.ts):
 * a session whose identity signed out, was disabled or was switched off since is answered `{}`
 * with its cookie cleared, as next-auth answers an expired one, instead of the user and a fresh
 * cookie. next-auth itself only decodes the token. A database that cannot be asked leaves the
 * answer as it is: it says who the cookie was issued to, and every data route asks again.
 */
export async function checkedSessionAnswer(response: Response): Promise<Response> {
  if (response.status !== 200) return response;
  let body: unknown;
  try {
    body = await response.clone().json();
  } catch {
    return response;
  }
  const user = (body as { user?: SessionClaims } | null)?.user;
  if (!user) return response;
  if ((await currentUser(user).catch(() => undefined)) !== null) return response;
  const headers = new Headers(response.headers);
  headers.delete('set-cookie');
  headers.delete('content-length');
  for (const cookie of response.headers.getSetCookie()) {
    const name = cookie.slice(0, cookie.indexOf('='));
    if (!SESSION_COOKIE.test(name)) headers.append('set-cookie', cookie);
    else
      headers.append(
        'set-cookie',
        `${name}=; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; HttpOnly; SameSite=Lax${name.startsWith('__Secure-') ? '; Secure' : ''}`,
      );
  }
  return new Response('{}', { status: 200, headers });
}

/** Ended sessions are routine: next-auth would log each one as an error with its stack. */
const logger: NonNullable<NextAuthOptions['logger']> = {
  error(code, metadata) {
    const error = metadata instanceof Error ? metadata : null;
    if (code === 'JWT_SESSION_ERROR' && (error?.name === 'SessionEnded' || error?.name === 'JWTExpired')) return;
    console.error(`[next-auth][error][${code}]`, error ? `${error.name}: ${error.message}` : '', metadata);
  },
  warn(code) {
    console.warn(`[next-auth][warn][${code}]`);
  },
  debug() {},
};

export function authOptions(): NextAuthOptions {
  const env = webEnv();
  const providers: NextAuthOptions['providers'] = [];
  // Switched off, the provider is not registered at all: /api/auth/callback/credentials then
  // has nothing to call and refuses every request.
  if (env.builtinUsers) providers.push(credentialsProvider(env));
  if (env.oidc) providers.push(oidcProvider(env.oidc));
  return {
    secret: env.secret,
    // next-auth signs the token with `jwt.maxAge` (30 days unless set) at sign-in and with
    // `session.maxAge` on each refresh; both are the 8 hours, and `encode` caps the expiry at
    // sign-in plus 8 hours, so a refresh never carries a token past it.
    session: { strategy: 'jwt', maxAge: SESSION_MAX_SECONDS },
    jwt: {
      maxAge: SESSION_MAX_SECONDS,
      encode: (params) => encode({ ...params, maxAge: sessionSecondsLeft(params.token ?? {}, nowSeconds()) }),
    },
    logger,
    // Errors (a refused single sign-on among them) come back to the login page as ?error=…,
    // which says them in a sentence.
    // next-auth builds its redirects to these pages from the origin: the base path the build
    // was made for (next.config.ts) goes in front, or an error under /leasehold lands on /login.
    pages: { signIn: `${LOGIN_BASE}/login`, error: `${LOGIN_BASE}/login` },
    providers,
    callbacks: sessionCallbacks(),
    events: {
      // Sign-out ends every session of the identity, a copied cookie among them: the version
      // each was issued under is behind from now on (lib/identity.ts). Single sign-on
      // identities are keyed by issuer and subject (lib/sso.ts), built-in users by email.
      async signOut({ token }) {
        const key = token?.via === 'oidc' ? token.sk : token?.email;
        if (typeof key === 'string' && key) await raiseSessionVersion(database(), key);
      },
    },
  };
}

/** Built-in users: email and password against the users table. */
function credentialsProvider(env: WebEnv) {
  return CredentialsProvider({
    name: 'Email and password',
    credentials: { email: { label: 'Email', type: 'email' }, password: { label: 'Password', type: 'password' } },
    async authorize(credentials) {
      const email = String(credentials?.email ?? '').slice(0, 254);
      const password = String(credentials?.password ?? '').slice(0, 200);
      if (!email || !password) return null;
      return signInWithPassword(env, email, password);
    },
  });
}

/**
 * One password sign-in, throttled and recorded in the audit log: the user to sign in, or null
 * for a wrong email or password. A throttled guess throws `throttledCode(wait)`.
 */
async function signInWithPassword(env: WebEnv, email: string, password: string) {
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
}

/** next-auth's callbacks: the redirect check, the single sign-on refusals, the token and the session. */
function sessionCallbacks(): NonNullable<NextAuthOptions['callbacks']> {
  return {
    // next-auth's own throws on a callbackUrl that is not a URL (a 500 with no body).
    redirect: safeRedirect,
    async signIn({ user, account }) {
      if (account?.provider !== OIDC_PROVIDER_ID) return true;
      // No role claim (or none that names a role), nobody to name in the audit log, or an
      // email the provider does not vouch for: refused here, so no session is ever issued
      // (the login page says why: ?error=AccessDenied or ?error=EmailUnverified).
      const sso = user as unknown as OidcUser;
      await recordSignIn(database(), {
        actor: sso.actor ?? sso.email ?? '-',
        outcome: sso.refusal ? 'refused' : 'succeeded',
        via: 'oidc',
        client: signInRequest().client,
      });
      if (sso.refusal === 'EmailUnverified') return `${LOGIN_BASE}/login?error=EmailUnverified`;
      return sso.refusal === null;
    },
    async jwt({ token, user, account }) {
      if (user) {
        const via: SignInVia = account?.provider === OIDC_PROVIDER_ID ? 'oidc' : 'credentials';
        token.via = via;
        token.role = (user as { role?: Role }).role;
        token.signedInAt = nowSeconds();
        if (via === 'oidc') {
          const sso = user as unknown as OidcUser;
          token.actor = sso.actor;
          token.iss = sso.issuer;
          token.sk = sso.sessionKey;
          token.sv = sso.sessionKey ? await sessionVersion(database(), sso.sessionKey) : 0;
        } else {
          token.sv = (user as { sessionVersion?: number }).sessionVersion ?? 0;
        }
        return token;
      }
      // Every later read: past its 8 hours, the token is no session. (Whether its identity
      // signed out or was disabled since is the database's to say: lib/dal/session.ts asks
      // on every data read, the route asks for /api/auth/session, checkedSessionAnswer.)
      const limit = sessionLimitReason(token, nowSeconds());
      if (limit) throw new SessionEnded(limit);
      return token;
    },
    session({ session, token }) {
      if (session.user) {
        const u = session.user as Record<string, unknown>;
        u.role = token.role;
        u.via = token.via ?? 'credentials';
        u.sv = token.sv ?? 0;
        if (token.actor) u.actor = token.actor;
        if (token.iss) u.iss = token.iss;
        if (token.sk) u.sk = token.sk;
      }
      // What the client is told: the end of the 8 hours, not 8 hours from this refresh.
      const at = token.signedInAt;
      if (typeof at === 'number') {
        const end = new Date((at + SESSION_MAX_SECONDS) * 1000);
        if (end < new Date(session.expires)) session.expires = end.toISOString();
      }
      return session;
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
