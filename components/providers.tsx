'use client';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { SessionProvider } from 'next-auth/react';
import { useState, type ReactNode } from 'react';
import { withBasePath } from './base-path.ts';
import { isSignedOut } from './queries.ts';

/** One retry of a failed read, none of a 401: the session ended, asking again cannot help. */
const retry = (failures: number, error: Error) => !isSignedOut(error) && failures < 1;

export function Providers({ children }: { children: ReactNode }) {
  const [client] = useState(
    () => new QueryClient({ defaultOptions: { queries: { retry, refetchOnWindowFocus: true } } }),
  );
  // The SessionProvider is here for its basePath: next-auth's client (signIn, signOut) posts to
  // `<basePath>/api/auth/…`, and without it to /api/auth, outside a base path. No component reads
  // useSession (pages read the session on the server), so it starts empty and never polls.
  return (
    <SessionProvider basePath={withBasePath('/api/auth')} session={null} refetchOnWindowFocus={false}>
      <QueryClientProvider client={client}>{children}</QueryClientProvider>
    </SessionProvider>
  );
}
