import { LoginForm } from '../../components/login-form';
import { webEnv } from '../../lib/env';

export const dynamic = 'force-dynamic';

export default function LoginPage() {
  const demo = webEnv().demo;
  return <LoginForm demoLogins={demo ? ['viewer@example.com', 'operator@example.com', 'admin@example.com'] : null} />;
}
