import { connection } from 'next/server';
import type { ReactNode } from 'react';
import { Providers } from '../components/providers.tsx';
import './globals.css';

export const metadata = { title: 'Leasehold', description: 'Job queue operations' };

export default async function RootLayout({ children }: { children: ReactNode }) {
  // Every page is rendered per request, the not-found page too: Next.js puts the request's CSP
  // nonce (proxy.ts) on the scripts it renders, and a page built ahead of time has none.
  await connection();
  return (
    <html lang="en">
      <body>
        <Providers>{children}</Providers>
      </body>
    </html>
  );
}
