import { LoginForm } from '../../components/login-form.tsx';
import { demoLogins } from '../../lib/auth.ts';

export const dynamic = 'force-dynamic';

export default function LoginPage() {
  // From db/users.ts through lib/: the client form cannot import db/, and copies drift.
  return <LoginForm demoLogins={demoLogins()} />;
}
