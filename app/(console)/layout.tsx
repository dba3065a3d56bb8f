import Link from 'next/link';
import { redirect } from 'next/navigation';
import type { ReactNode } from 'react';
import { SignOut } from '../../components/sign-out.tsx';
import { getViewer } from '../../lib/dal/index.ts';

export const dynamic = 'force-dynamic';

export default async function ConsoleLayout({ children }: { children: ReactNode }) {
  // The same cached lookup the page's data-access calls make: one users query per request.
  const user = await getViewer();
  if (!user) redirect('/login');
  return (
    <>
      <header className="top">
        <Link className="brand" href="/">
          Leasehold
        </Link>
        <Link href="/">Overview</Link>
        <Link href="/jobs">Jobs</Link>
        <Link href="/failures">Failures</Link>
        <Link href="/kinds">Kinds</Link>
        <Link href="/audit">Audit log</Link>
        <span className="who" data-testid="who">
          {user.email} · {user.role}
        </span>
        <SignOut />
      </header>
      <main>{children}</main>
    </>
  );
}
