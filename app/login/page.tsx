import { LoginForm } from '../../components/login-form';
import { demoLogins } from '../../lib/auth';

export const dynamic = 'force-dynamic';

export default function LoginPage() {
  // From db/users.ts through lib/: the client form cannot import db/, and copies drift.
  return <LoginForm demoLogins={demoLogins()} />;
}
