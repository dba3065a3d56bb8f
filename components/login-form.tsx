'use client';
import { signIn } from 'next-auth/react';
import { useRouter } from 'next/navigation';
import { useState } from 'react';
import type { LoginOptionsDTO } from '../lib/dto.ts';
import { withBasePath } from './base-path.ts';

/**
 * The ways in the server switched on: the email and password form for built-in users, and a
 * button for single sign-on (a redirect to the identity provider and back).
 */
export function LoginForm({ options, error: initialError }: { options: LoginOptionsDTO; error: string | null }) {
  const router = useRouter();
  const [error, setError] = useState<string | null>(initialError);
  const [busy, setBusy] = useState(false);
  const field = (form: FormData, name: string) => {
    const value = form.get(name);
    return typeof value === 'string' ? value : '';
  };
  const submit = async (form: FormData) => {
    setBusy(true);
    setError(null);
    const result = await signIn('credentials', {
      email: field(form, 'email'),
      password: field(form, 'password'),
      redirect: false,
    });
    setBusy(false);
    if (!result || result.error) return setError('Those credentials did not work. Check the email and password.');
    router.push('/');
    router.refresh();
  };
  const sso = options.sso;
  return (
    <div className="login">
      <h1>Leasehold</h1>
      {sso && (
        <p>
          <button
            type="button"
            disabled={busy}
            onClick={() => {
              setBusy(true);
              void signIn(sso.providerId, { callbackUrl: withBasePath('/') });
            }}
          >
            Sign in with {sso.name}
          </button>
        </p>
      )}
      {options.builtinUsers && (
        <form action={(form) => void submit(form)}>
          <label>
            Email <input name="email" type="email" autoComplete="username" required />
          </label>
          <label>
            Password <input name="password" type="password" autoComplete="current-password" required />
          </label>
          <button type="submit" disabled={busy}>
            Sign in
          </button>
        </form>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {options.demo && (
        <p className="muted">
          Demo logins (password <code>{options.demo.password}</code>): {options.demo.emails.join(', ')}
        </p>
      )}
    </div>
  );
}
