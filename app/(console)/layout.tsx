import { redirect } from 'next/navigation';
import type { ReactNode } from 'react';
import { SignOut } from '../../components/sign-out';
import { getViewer } from '../../lib/dal';

export const dynamic = 'force-dynamic';

export default async function ConsoleLayout({ children }: { children: ReactNode }) {
  // The same cached lookup the page's data-access calls make: one users query per request.
  const user = await getViewer();
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
