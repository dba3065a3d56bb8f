import { headers } from 'next/headers';
import { connection } from 'next/server';
import type { ReactNode } from 'react';
import { Providers } from '../components/providers.tsx';
import { THEME_SCRIPT } from '../components/theme.ts';
import './globals.css';

export const metadata = { title: 'Leasehold', description: 'Job queue operations' };

export default async function RootLayout({ children }: { children: ReactNode }) {
  // Every page is rendered per request, the not-found page too: Next.js puts the request's CSP
  // nonce (proxy.ts) on the scripts it renders, and a page built ahead of time has none.
  await connection();
  // The theme script runs inline before the body is parsed (no flash of the other theme): the
  // policy allows it by the same nonce, no 'unsafe-inline'.
  const nonce = (await headers()).get('x-nonce') ?? undefined;
  return (
    // The script sets data-theme on <html> before React hydrates: not a mismatch to report.
    <html lang="en" suppressHydrationWarning>
      <head>
        <script nonce={nonce} dangerouslySetInnerHTML={{ __html: THEME_SCRIPT }} />
      </head>
      <body>
        <a className="skip" href="#main">
          Skip to content
        </a>
        <Providers>{children}</Providers>
      </body>
    </html>
  );
}
