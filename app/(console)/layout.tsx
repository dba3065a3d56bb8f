import { redirect } from 'next/navigation';
import type { ReactNode } from 'react';
import { ConsoleNav } from '../../components/console-nav.tsx';
import { SessionEnded } from '../../components/session-ended.tsx';
import { getViewer } from '../../lib/dal/index.ts';

export const dynamic = 'force-dynamic';

export default async function ConsoleLayout({ children }: { children: ReactNode }) {
  // The same cached lookup the page's data-access calls make: one users query per request.
  const user = await getViewer();
  if (!user) redirect('/login');
  return (
    <>
      <ConsoleNav who={`${user.email} · ${user.role}`} />
      <main id="main" tabIndex={-1}>
        <SessionEnded />
        {children}
      </main>
    </>
  );
}
