import { LoginForm } from '../../components/login-form.tsx';
import { loginOptions } from '../../lib/auth.ts';
import { webEnv } from '../../lib/env.ts';
import { signInErrorMessage } from '../../lib/present.ts';

// Read at run time: the ways in are the deployment's environment, not the build's.
export const dynamic = 'force-dynamic';

export default async function LoginPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const { error } = await searchParams;
  const code = typeof error === 'string' ? error.slice(0, 100) : null;
  // From lib/ (db/users.ts, the environment): the client form cannot import either, and copies drift.
  return (
    <LoginForm
      options={loginOptions()}
      error={code ? signInErrorMessage(code, webEnv().oidc?.roleClaim ?? null) : null}
    />
  );
}
