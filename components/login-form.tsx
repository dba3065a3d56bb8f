'use client';
import { signIn } from 'next-auth/react';
import { useRouter } from 'next/navigation';
import { useEffect, useState } from 'react';
import { throttledMessage, throttledSeconds, type LoginOptionsDTO } from '../lib/dto.ts';
import { withBasePath } from './base-path.ts';

/**
 * The ways in the server switched on: the email and password form for built-in users, and a
 * button for single sign-on (a redirect to the identity provider and back).
 */
export function LoginForm({ options, error: initialError }: { options: LoginOptionsDTO; error: string | null }) {
  const router = useRouter();
  const [error, setError] = useState<string | null>(initialError);
  const [busy, setBusy] = useState(false);
  // A throttled guess (429): when the form may be sent again, counted down to the second.
  const [retryAt, setRetryAt] = useState<number | null>(null);
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (retryAt === null) return;
    const timer = setInterval(() => {
      const t = Date.now();
      setNow(t);
      if (t >= retryAt) {
        setRetryAt(null);
        setError(null);
      }
    }, 1000);
    return () => clearInterval(timer);
  }, [retryAt]);
  const waiting = retryAt !== null && retryAt > now ? Math.ceil((retryAt - now) / 1000) : null;
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
    const seconds = throttledSeconds(result?.error);
    if (result?.status === 429 && seconds !== null) {
      const t = Date.now();
      setNow(t);
      setRetryAt(t + seconds * 1000);
      return setError(throttledMessage(seconds));
    }
    if (!result || result.error) return setError('Those credentials did not work. Check the email and password.');
    router.push('/');
    router.refresh();
  };
  const sso = options.sso;
  return (
    <main id="main" className="login">
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
          <button type="submit" disabled={busy || waiting !== null}>
            {waiting !== null ? `Sign in (wait ${waiting} s)` : 'Sign in'}
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
    </main>
  );
}
