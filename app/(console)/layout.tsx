import { redirect } from 'next/navigation';
import type { ReactNode } from 'react';
import { SignOut } from '../../components/sign-out';
import { currentUser } from '../../lib/auth';

export const dynamic = 'force-dynamic';

export default async function ConsoleLayout({ children }: { children: ReactNode }) {
  const user = await currentUser();
  if (!user) redirect('/login');
  return (
    <>
      <header className="top">
        <a className="brand" href="/">
          Leasehold
        </a>
        <a href="/">Overview</a>
        <a href="/jobs">Jobs</a>
        <a href="/failures">Failures</a>
        <a href="/audit">Audit log</a>
        <span className="who" data-testid="who">
          {user.email} · {user.role}
        </span>
        <SignOut />
      </header>
      <main>{children}</main>
    </>
  );
}
