'use client';
import { signIn } from 'next-auth/react';
import { useRouter } from 'next/navigation';
import { useState } from 'react';
import type { DemoLoginsDTO } from '../lib/dto.ts';

export function LoginForm({ demoLogins }: { demoLogins: DemoLoginsDTO | null }) {
  const router = useRouter();
  const [error, setError] = useState<string | null>(null);
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
  return (
    <form action={(form) => void submit(form)} className="login">
      <h1>Leasehold</h1>
      <label>
        Email <input name="email" type="email" autoComplete="username" required />
      </label>
      <label>
        Password <input name="password" type="password" autoComplete="current-password" required />
      </label>
      <button type="submit" disabled={busy}>
        Sign in
      </button>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {demoLogins && (
        <p className="muted">
          Demo logins (password <code>{demoLogins.password}</code>): {demoLogins.emails.join(', ')}
        </p>
      )}
    </form>
  );
}
