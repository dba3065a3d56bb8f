/**
 * A local OpenID Connect provider for the single sign-on tests (e2e/oidc.spec.ts, the package
 * consumer test): `oidc-provider` with its development login form (any login, any password),
 * consent granted for the one first-party client, and fixed accounts whose ID tokens carry the
 * role claim, or do not. An identity provider the test starts and stops, not a mock: discovery,
 * PKCE, state, signed ID tokens and the token endpoint are the library's own.
 */
import { createServer, type Server } from 'node:http';
import Provider, { type Configuration } from 'oidc-provider';

export interface TestAccount {
  /** What the provider's login form takes as the login. */
  login: string;
  email?: string;
  /** What the ID token's email_verified says (default true); null: the claim is left out. */
  emailVerified?: boolean | null;
  name?: string;
  /** The configured role claim's value; absent: the ID token has no such claim. */
  role?: string | string[];
}

export interface TestOidcProvider {
  /** The issuer URL (LEASEHOLD_OIDC_ISSUER). */
  issuer: string;
  clientId: string;
  clientSecret: string;
  stop(): Promise<void>;
}

/**
 * Starts the provider on 127.0.0.1:`port` for one client whose callback is
 * `<dashboard>/api/auth/callback/oidc`. `roleClaim` names the claim the accounts' roles go in.
 */
export async function startOidcProvider(options: {
  port: number;
  dashboardUrls: string[];
  accounts: TestAccount[];
  roleClaim?: string;
}): Promise<TestOidcProvider> {
  const issuer = `http://127.0.0.1:${options.port}`;
  const clientId = 'leasehold-dashboard';
  const clientSecret = 'leasehold-test-client-secret';
  const roleClaim = options.roleClaim ?? 'leasehold_role';
  const accounts = new Map(options.accounts.map((a) => [a.login, a]));
  const configuration: Configuration = {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: options.dashboardUrls.map((url) => `${url}/api/auth/callback/oidc`),
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    // The role claim comes with the openid scope, and every granted claim goes into the ID
    // token (not only the userinfo answer): the dashboard reads the verified ID token.
    claims: {
      openid: ['sub', roleClaim],
      email: ['email', 'email_verified'],
      profile: ['name', 'preferred_username'],
    },
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: true } },
    async findAccount(_ctx, sub) {
      const account = accounts.get(sub);
      if (!account) return undefined;
      return {
        accountId: sub,
        async claims() {
          return {
            sub,
            preferred_username: account.login,
            ...(account.email ? { email: account.email } : {}),
            ...(account.email && account.emailVerified !== null
              ? { email_verified: account.emailVerified ?? true }
              : {}),
            ...(account.name ? { name: account.name } : {}),
            ...(account.role !== undefined ? { [roleClaim]: account.role } : {}),
          };
        },
      };
    },
    // The dashboard is a first-party client: consent is implied, as a company's provider does
    // for its own tools, so the flow is the login form and back.
    async loadExistingGrant(ctx) {
      const grantId = ctx.oidc.result?.consent?.grantId ?? ctx.oidc.session!.grantIdFor(ctx.oidc.client!.clientId);
      if (grantId) return ctx.oidc.provider.Grant.find(grantId);
      const grant = new ctx.oidc.provider.Grant({
        clientId: ctx.oidc.client!.clientId,
        accountId: ctx.oidc.session!.accountId!,
      });
      grant.addOIDCScope('openid email profile');
      await grant.save();
      return grant;
    },
    cookies: { keys: ['leasehold-test-cookie-key-0123456789'] },
  };
  const provider = new Provider(issuer, configuration);
  // Quiet: the library warns about development-only settings, which these are on purpose.
  provider.on('server_error', (_ctx, error) => console.error('[oidc-provider]', error));
  const server: Server = createServer(provider.callback());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => resolve());
  });
  return {
    issuer,
    clientId,
    clientSecret,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
