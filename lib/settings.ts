/**
 * The web process's settings as a pure function of the environment: no `server-only`, so a
 * launcher (`leasehold dashboard`) can check them before it starts the server, and the same
 * sentence comes from both. Outside demo mode a real session secret and an https public URL
 * (NEXTAUTH_URL; plain http only on a loopback host) are required, and a metrics token must be
 * long enough to be one (docs/dashboard.md, "Production settings"). Single sign-on
 * is all or nothing: a partial OpenID Connect configuration is refused, not a login page whose
 * button fails later. lib/env.ts reads them once per server process.
 */
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { z } from 'zod';
import { type AlertThresholds, parseAlertConfig } from '../db/queue/alerts.ts';
import { LeaseholdInputError } from '../db/queue/errors.ts';
import { redactedPathSchema } from '../db/queue/kinds.ts';
import { ROLES, type Role } from '../db/schema.ts';
import { NO_TRUSTED_PROXIES, parseTrustedProxies, type TrustedProxies } from './client-address.ts';

/** Demo mode's old fixed secret: public, so refused everywhere (a session signed with it can be forged). */
const PUBLIC_DEMO_SECRET = 'leasehold-demo-secret-not-for-production';

/** The shortest LEASEHOLD_METRICS_TOKEN taken: a scraper's token is guessed as a password would be. */
export const MIN_METRICS_TOKEN_LENGTH = 32;

/** A secret or token with fewer different characters (`xxxx…`, `abcabc…`) is a placeholder. */
const MIN_DISTINCT_CHARACTERS = 10;

const DEMO_SECRET_KEY = Symbol.for('leasehold.demoSecret');

/**
 * Demo mode's secret when none is given: random, one per process. Kept on globalThis, since the
 * server's bundles may each hold their own copy of this module, and a session signed by the
 * sign-in route must be read by the pages.
 */
function processDemoSecret(): string {
  const store = globalThis as { [DEMO_SECRET_KEY]?: string };
  store[DEMO_SECRET_KEY] ??= randomBytes(32).toString('base64url');
  return store[DEMO_SECRET_KEY];
}

/**
 * Whether `hostname` (as URL.hostname gives it) is this machine: localhost, *.localhost, an
 * address in 127.0.0.0/8, or ::1. Only there may the dashboard be served over plain http.
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1' || host === '0:0:0:0:0:0:0:1';
}

/** The claim the role is read from when LEASEHOLD_OIDC_ROLE_CLAIM is not set. */
export const DEFAULT_ROLE_CLAIM = 'leasehold_role';
export const DEFAULT_OIDC_SCOPE = 'openid email profile';
export const DEFAULT_OIDC_NAME = 'single sign-on';

/** A variable of the dashboard, its launchers (`leasehold dashboard`, `npm run web`) or the connection. */
export interface WebSetting {
  /** The default as docs/dashboard.md says it (— for none). */
  readonly default: string;
  readonly help: string;
  /** Listed under "Single sign-on" too. */
  readonly sso?: boolean;
}

/**
 * Every variable the web process and its launchers read, once: docs/dashboard.md's settings
 * tables are made of this list (`npm run docs:settings`), and lib/settings.test.ts fails when
 * lib/, app/, cli/ (but the worker command's, workers/settings.ts), scripts/web.ts,
 * instrumentation.ts, proxy.ts or next.config.ts read a variable that is not here, or one here
 * is read nowhere.
 */
export const WEB_SETTINGS = {
  DATABASE_URL: {
    default: '— (required)',
    help: 'the PostgreSQL the dashboard reads and writes, as a login with the role `leasehold_dashboard` (`--embedded`: the embedded server)',
  },
  LEASEHOLD_DATA_DIR: {
    default: '`./.leasehold/postgres`',
    help: 'with `--embedded` (any command): the embedded PostgreSQL’s data folder',
  },
  PORT: { default: '3000', help: 'the port the dashboard listens on (`--port` wins)' },
  LEASEHOLD_DASHBOARD_HOSTNAME: {
    default: '`127.0.0.1`',
    help: 'the address it listens on (`--hostname` wins): this machine only, `0.0.0.0` for every interface (a container)',
  },
  LEASEHOLD_DASHBOARD_DIR: {
    default: '`./.leasehold/dashboard`',
    help: '`leasehold dashboard`’s build folder (`--dir` wins)',
  },
  LEASEHOLD_BASE_PATH: {
    default: 'none',
    help: 'the path prefix behind your proxy, e.g. `/leasehold`, fixed at build time (`--base-path` wins; Behind your proxy)',
  },
  LEASEHOLD_DASHBOARD_ROOT: {
    default: 'set by the launcher',
    help: 'the project whose packages the build uses: `leasehold dashboard` sets it for `next build`, not you',
  },
  NEXTAUTH_SECRET: {
    default: '— (required outside demo mode)',
    help: 'signs the sessions: at least 32 random characters (`openssl rand -base64 32`)',
  },
  NEXTAUTH_URL: {
    default: '— (required outside demo mode)',
    help: 'the public URL (under a base path, with it and `/api/auth`); `https://` except on this machine',
  },
  LEASEHOLD_DEMO: {
    default: '`false`',
    help: 'demo mode (this repository’s demo): one machine, a random secret per data folder',
  },
  LEASEHOLD_DEMO_USERS: { default: '`true`', help: 'in demo mode, whether the login page offers the demo users' },
  LEASEHOLD_METRICS_TOKEN: {
    default: 'none (`/api/metrics` off)',
    help: 'the bearer token `/api/metrics` takes: at least 32 random characters',
  },
  LEASEHOLD_QUEUE_ALERTS: {
    default: 'none',
    help: 'backlog-alert thresholds per queue (`*`: every queue), as JSON: `{"*": {"oldestReadyAge": "5m", "dead": 100, "waitingForKind": 1}}`; an admin’s run-time threshold wins (docs/operations.md)',
  },
  LEASEHOLD_REDACT_PATHS: {
    default: 'none',
    help: 'comma-separated paths masked in every kind’s payload (Redaction rules)',
  },
  LEASEHOLD_TRUSTED_PROXIES: {
    default: 'none',
    help: 'the proxies whose `X-Forwarded-For` names the client: addresses or ranges (`127.0.0.1, 10.0.0.0/8`)',
  },
  LEASEHOLD_OIDC_ISSUER: {
    default: 'none (no single sign-on)',
    help: 'the issuer URL, e.g. `https://login.example.com/realms/ops`; the dashboard reads `<issuer>/.well-known/openid-configuration`',
    sso: true,
  },
  LEASEHOLD_OIDC_CLIENT_ID: { default: 'none', help: 'the client registered for the dashboard', sso: true },
  LEASEHOLD_OIDC_CLIENT_SECRET: {
    default: 'none',
    help: 'its secret (a confidential client; the flow is the authorization code flow with PKCE and state)',
    sso: true,
  },
  LEASEHOLD_OIDC_NAME: {
    default: `\`${DEFAULT_OIDC_NAME}\``,
    help: 'what the login button says: "Sign in with _name_"',
    sso: true,
  },
  LEASEHOLD_OIDC_SCOPE: {
    default: `\`${DEFAULT_OIDC_SCOPE}\``,
    help: 'the scopes asked for (must include `openid`)',
    sso: true,
  },
  LEASEHOLD_OIDC_ROLE_CLAIM: {
    default: `\`${DEFAULT_ROLE_CLAIM}\``,
    help: 'the ID token claim that carries the role',
    sso: true,
  },
  LEASEHOLD_OIDC_ROLE_MAP: {
    default: 'none',
    help: 'claim values to roles, `ops-admins=admin,ops=operator,support=viewer`',
    sso: true,
  },
  LEASEHOLD_OIDC_EMAIL_VERIFIED: {
    default: '`required`',
    help: '`required`, or `not-sent` for a provider that never sends `email_verified` (below)',
    sso: true,
  },
  LEASEHOLD_BUILTIN_USERS: { default: '`true`', help: '`false`: single sign-on only', sso: true },
} as const satisfies Record<string, WebSetting>;

export type WebSettingName = keyof typeof WEB_SETTINGS;

/**
 * Variables read in the web code that are not settings: Node's and Next.js's own, and the one
 * next.config.ts writes into the bundles from LEASEHOLD_BASE_PATH.
 */
export const NOT_WEB_SETTINGS = ['NODE_ENV', 'NEXT_RUNTIME', 'NEXT_PUBLIC_LEASEHOLD_BASE_PATH'] as const;

/** docs/dashboard.md's settings table (scripts/settings-docs.ts writes it); `sso`: the single sign-on section's. */
export function webSettingsRows(only: 'all' | 'sso' = 'all'): { header: string[]; rows: string[][] } {
  const all: Record<string, WebSetting> = WEB_SETTINGS;
  const rows = Object.entries(all)
    .filter(([, s]) => only === 'all' || s.sso)
    .map(([name, s]) => [`\`${name}\``, s.default, s.help]);
  return { header: ['variable', 'default', 'meaning'], rows };
}

/** The variables that must be set together (or not at all) for single sign-on. */
const OIDC_REQUIRED = ['LEASEHOLD_OIDC_ISSUER', 'LEASEHOLD_OIDC_CLIENT_ID', 'LEASEHOLD_OIDC_CLIENT_SECRET'] as const;
const OIDC_OPTIONAL = [
  'LEASEHOLD_OIDC_NAME',
  'LEASEHOLD_OIDC_SCOPE',
  'LEASEHOLD_OIDC_ROLE_CLAIM',
  'LEASEHOLD_OIDC_ROLE_MAP',
  'LEASEHOLD_OIDC_EMAIL_VERIFIED',
] as const;

const flag = z.enum(['true', 'false', '1', '0', '']).optional();
const isOn = (value: string | undefined, fallback: boolean) =>
  value === undefined || value === '' ? fallback : value === 'true' || value === '1';

/** `group=role,other=role`: claim values to roles; every role must be one of ROLES. */
const roleMapSchema = z
  .string()
  .max(10_000)
  .transform((text, ctx) => {
    const map: Record<string, Role> = {};
    for (const entry of text
      .split(',')
      .map((e) => e.trim())
      .filter(Boolean)) {
      const at = entry.lastIndexOf('=');
      const value = entry.slice(0, at).trim();
      const role = entry.slice(at + 1).trim();
      if (at <= 0 || !value) {
        ctx.addIssue({ code: 'custom', message: `LEASEHOLD_OIDC_ROLE_MAP: "${entry}" is not claim-value=role` });
        return z.NEVER;
      }
      if (!(ROLES as readonly string[]).includes(role)) {
        ctx.addIssue({
          code: 'custom',
          message: `LEASEHOLD_OIDC_ROLE_MAP: "${role}" is not a role (expected ${ROLES.join(', ')})`,
        });
        return z.NEVER;
      }
      map[value] = role as Role;
    }
    return map;
  });

const pathListSchema = z
  .string()
  .max(20_000)
  .transform((text) =>
    text
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean),
  )
  .pipe(z.array(redactedPathSchema).max(100, 'at most 100 paths'));

/** The rule of each setting read here (a name not in WEB_SETTINGS does not compile). */
const schema = z.object({
  DATABASE_URL: z
    .string()
    .min(1, 'DATABASE_URL is required: set it to your PostgreSQL’s URL (postgres://user:password@host:5432/dbname)'),
  LEASEHOLD_DEMO: flag,
  NEXTAUTH_SECRET: z.string().optional(),
  NEXTAUTH_URL: z.string().max(2000).optional(),
  LEASEHOLD_METRICS_TOKEN: z
    .string()
    .min(
      MIN_METRICS_TOKEN_LENGTH,
      `LEASEHOLD_METRICS_TOKEN must be at least ${MIN_METRICS_TOKEN_LENGTH} random characters (for example: openssl rand -hex 32)`,
    )
    .max(1000)
    .optional(),
  LEASEHOLD_DEMO_USERS: flag,
  LEASEHOLD_BUILTIN_USERS: flag,
  LEASEHOLD_REDACT_PATHS: pathListSchema.optional(),
  LEASEHOLD_QUEUE_ALERTS: z.string().max(100_000).optional(),
  LEASEHOLD_OIDC_ISSUER: z
    .url({ protocol: /^https?$/, error: 'LEASEHOLD_OIDC_ISSUER must be an http(s) URL' })
    .optional(),
  LEASEHOLD_OIDC_CLIENT_ID: z.string().max(1000).optional(),
  LEASEHOLD_OIDC_CLIENT_SECRET: z.string().max(10_000).optional(),
  LEASEHOLD_OIDC_NAME: z.string().max(100).optional(),
  LEASEHOLD_OIDC_SCOPE: z
    .string()
    .max(1000)
    .refine((s) => s.split(/\s+/).includes('openid'), 'LEASEHOLD_OIDC_SCOPE must include openid')
    .optional(),
  LEASEHOLD_OIDC_ROLE_CLAIM: z.string().max(200).optional(),
  LEASEHOLD_OIDC_ROLE_MAP: roleMapSchema.optional(),
  LEASEHOLD_OIDC_EMAIL_VERIFIED: z
    .enum(['required', 'not-sent'], {
      error: 'LEASEHOLD_OIDC_EMAIL_VERIFIED must be required (the default) or not-sent',
    })
    .optional(),
  LEASEHOLD_TRUSTED_PROXIES: z.string().max(10_000).optional(),
} satisfies Partial<Record<WebSettingName, z.ZodType>>);

/** Single sign-on through one OpenID Connect provider (lib/sso.ts). */
export interface OidcEnv {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** What the login page's button says: "Sign in with <name>". */
  name: string;
  scope: string;
  /** The ID token claim that carries the role (a string, or an array of strings). */
  roleClaim: string;
  /** Claim values to roles; null: the claim's value is the role's name itself. */
  roleMap: Record<string, Role> | null;
  /**
   * `required`: an ID token with an email claim must say `email_verified: true`. `not-sent`: the
   * provider never sends the claim (Entra ID, for one), so its absence is accepted; false is not.
   */
  emailVerified: 'required' | 'not-sent';
}

export interface WebEnv {
  databaseUrl: string;
  demo: boolean;
  secret: string;
  /** NEXTAUTH_URL: the dashboard's public URL (with its base path and /api/auth); null only in demo mode. */
  publicUrl: URL | null;
  /** Demo mode: the login page offers the demo users (npm start wrote them into the database). */
  demoLogins: boolean;
  metricsToken: string | null;
  /** Email and password sign-in against leasehold.users; off: only single sign-on. */
  builtinUsers: boolean;
  oidc: OidcEnv | null;
  /** Paths masked in every kind's payload, besides what workers and admins declared. */
  redactPaths: string[];
  /** Peers whose X-Forwarded-For names the client (lib/client-address.ts); none by default. */
  trustedProxies: TrustedProxies;
  /** LEASEHOLD_QUEUE_ALERTS: the configured backlog-alert thresholds, by queue (`*`: every queue). */
  queueAlerts: Map<string, AlertThresholds>;
}

/** The settings in `env` (process.env), or an Error whose message says every problem. */
export function parseWebEnv(env: Record<string, string | undefined>): WebEnv {
  // An empty variable is an unset one: `FOO= leasehold dashboard` must not half-configure SSO.
  const given = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = schema.safeParse(given);
  if (!parsed.success) {
    // Named after the variable, so the sentence says what to fix.
    const said = parsed.error.issues.map((i) => {
      const name = String(i.path[0] ?? '');
      return i.message.includes(name) ? i.message : `${name}: ${i.message}`;
    });
    throw new Error(`Leasehold dashboard: ${said.join('; ')}`);
  }
  const e = parsed.data;
  const demo = isOn(e.LEASEHOLD_DEMO, false);
  if (e.NEXTAUTH_SECRET === PUBLIC_DEMO_SECRET) {
    throw new Error(
      'Leasehold dashboard: NEXTAUTH_SECRET is the old demo secret, which is public: set it to a random string of at least 32 characters (for example: openssl rand -base64 32)',
    );
  }
  // Demo mode without a secret (npm start passes one kept beside its data folder): a random
  // one for this process, never a fixed one anybody could sign sessions with.
  const secret = e.NEXTAUTH_SECRET ?? (demo ? processDemoSecret() : '');
  if (!demo && secret.length < 32) {
    throw new Error(
      'Leasehold dashboard: set NEXTAUTH_SECRET to a random string of at least 32 characters (outside demo mode)',
    );
  }
  for (const [name, value] of [
    ['NEXTAUTH_SECRET', e.NEXTAUTH_SECRET],
    ['LEASEHOLD_METRICS_TOKEN', e.LEASEHOLD_METRICS_TOKEN],
  ] as const) {
    if (value !== undefined && new Set(value).size < MIN_DISTINCT_CHARACTERS) {
      throw new Error(
        `Leasehold dashboard: ${name} has fewer than ${MIN_DISTINCT_CHARACTERS} different characters, so it is a placeholder, not a random string: make one with openssl rand -base64 32`,
      );
    }
  }
  const publicUrl = parsePublicUrl(e.NEXTAUTH_URL, demo);
  const oidc = parseOidc(e);
  const trustedProxies = trustedProxiesOf(e.LEASEHOLD_TRUSTED_PROXIES);
  const builtinUsers = isOn(e.LEASEHOLD_BUILTIN_USERS, true);
  let queueAlerts: Map<string, AlertThresholds>;
  try {
    queueAlerts = parseAlertConfig(e.LEASEHOLD_QUEUE_ALERTS);
  } catch (error) {
    const problems = error instanceof LeaseholdInputError ? error.problems.join('; ') : String(error);
    throw new Error(`Leasehold dashboard: LEASEHOLD_QUEUE_ALERTS: ${problems}`);
  }
  if (!builtinUsers && !oidc) {
    throw new Error(
      'Leasehold dashboard: LEASEHOLD_BUILTIN_USERS=false leaves no way to sign in: configure single sign-on (LEASEHOLD_OIDC_ISSUER, LEASEHOLD_OIDC_CLIENT_ID, LEASEHOLD_OIDC_CLIENT_SECRET) or turn built-in users back on',
    );
  }
  return {
    databaseUrl: e.DATABASE_URL,
    demo,
    secret,
    publicUrl,
    demoLogins: demo && isOn(e.LEASEHOLD_DEMO_USERS, true),
    metricsToken: e.LEASEHOLD_METRICS_TOKEN || null,
    builtinUsers,
    oidc,
    redactPaths: [...new Set(e.LEASEHOLD_REDACT_PATHS ?? [])],
    trustedProxies,
    queueAlerts,
  };
}

/**
 * NEXTAUTH_URL, required outside demo mode: without it next-auth takes http://localhost:3000 as
 * its origin, so the session cookie loses `Secure` and sign-out sends users to localhost. It
 * must be https, except on a loopback host (a dashboard reached on this machine only).
 */
function parsePublicUrl(value: string | undefined, demo: boolean): URL | null {
  const example = 'for example NEXTAUTH_URL=https://ops.example.com';
  if (!value) {
    if (demo) return null;
    throw new Error(
      `Leasehold dashboard: set NEXTAUTH_URL to the dashboard's public URL (${example}; under a base path, https://ops.example.com/leasehold/api/auth): without it sessions are not marked Secure and sign-out goes to localhost`,
    );
  }
  if (!URL.canParse(value)) throw new Error(`Leasehold dashboard: NEXTAUTH_URL is not a URL (${example})`);
  const url = new URL(value);
  if (url.protocol === 'https:') return url;
  if (url.protocol === 'http:' && (demo || isLoopbackHost(url.hostname))) return url;
  throw new Error(
    url.protocol === 'http:'
      ? `Leasehold dashboard: NEXTAUTH_URL must be https:// (${url.host} is not this machine, so sessions would travel in the clear); only localhost and 127.0.0.1 may use http://`
      : `Leasehold dashboard: NEXTAUTH_URL must be an https:// URL (${example}), not ${url.protocol}`,
  );
}

function trustedProxiesOf(text: string | undefined): TrustedProxies {
  if (!text) return NO_TRUSTED_PROXIES;
  try {
    return parseTrustedProxies(text);
  } catch (error) {
    throw new Error(`Leasehold dashboard: ${(error as Error).message}`);
  }
}

function parseOidc(e: z.infer<typeof schema>): OidcEnv | null {
  const missing = OIDC_REQUIRED.filter((name) => !e[name]);
  const anySet = [...OIDC_REQUIRED, ...OIDC_OPTIONAL].some((name) => e[name] !== undefined);
  if (!anySet) return null;
  if (missing.length > 0) {
    throw new Error(
      `Leasehold dashboard: single sign-on is half configured: set ${missing.join(', ')} too (${OIDC_REQUIRED.join(', ')} go together), or unset every LEASEHOLD_OIDC_* variable`,
    );
  }
  // Like NEXTAUTH_URL: the client secret and the ID token travel to and from the issuer, so
  // plain http only to this machine.
  const issuerUrl = new URL(e.LEASEHOLD_OIDC_ISSUER!);
  if (issuerUrl.protocol === 'http:' && !isLoopbackHost(issuerUrl.hostname)) {
    throw new Error(
      `Leasehold dashboard: LEASEHOLD_OIDC_ISSUER must be https:// (${issuerUrl.host} is not this machine, so the client secret and ID tokens would travel in the clear); only localhost and 127.0.0.1 may use http://`,
    );
  }
  return {
    // The issuer as the provider states it in its discovery document, without a trailing slash
    // (the well-known URL is appended to it).
    issuer: e.LEASEHOLD_OIDC_ISSUER!.replace(/\/+$/, ''),
    clientId: e.LEASEHOLD_OIDC_CLIENT_ID!,
    clientSecret: e.LEASEHOLD_OIDC_CLIENT_SECRET!,
    name: e.LEASEHOLD_OIDC_NAME?.trim() || DEFAULT_OIDC_NAME,
    scope: e.LEASEHOLD_OIDC_SCOPE ?? DEFAULT_OIDC_SCOPE,
    roleClaim: e.LEASEHOLD_OIDC_ROLE_CLAIM ?? DEFAULT_ROLE_CLAIM,
    roleMap:
      e.LEASEHOLD_OIDC_ROLE_MAP && Object.keys(e.LEASEHOLD_OIDC_ROLE_MAP).length > 0 ? e.LEASEHOLD_OIDC_ROLE_MAP : null,
    emailVerified: e.LEASEHOLD_OIDC_EMAIL_VERIFIED ?? 'required',
  };
}
