import type { ReactNode } from 'react';
import { Providers } from '../components/providers.tsx';
import './globals.css';

export const metadata = { title: 'Leasehold', description: 'Job queue operations' };

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>
        <Providers>{children}</Providers>
      </body>
    </html>
  );
}
