'use client';
import Link from 'next/link';
import { usePathname } from 'next/navigation';
import { useState } from 'react';
import { SignOut } from './sign-out.tsx';
import { ThemeToggle } from './theme-toggle.tsx';
import { UtcToggle } from './utc-toggle.tsx';

const LINKS = [
  { href: '/', label: 'Overview' },
  { href: '/jobs', label: 'Jobs' },
  { href: '/failures', label: 'Failures' },
  { href: '/kinds', label: 'Kinds' },
  { href: '/limits', label: 'Limits' },
  { href: '/schedules', label: 'Schedules' },
  { href: '/workers', label: 'Workers' },
  { href: '/health', label: 'Health' },
  { href: '/audit', label: 'Audit log' },
];

function current(pathname: string, href: string) {
  return href === '/' ? pathname === '/' : pathname === href || pathname.startsWith(`${href}/`);
}

/**
 * The signed-in header: the pages, who is signed in, the theme, the UTC setting for times and sign-out. On a narrow window
 * (globals.css) the navigation collapses behind a menu button (aria-expanded), which a page
 * change closes again.
 */
export function ConsoleNav({ who }: { who: string }) {
  const pathname = usePathname() ?? '/';
  // Open on the page it was opened on: moving to another page closes it.
  const [openOn, setOpenOn] = useState<string | null>(null);
  const open = openOn === pathname;
  return (
    <header className="top">
      <Link className="brand" href="/">
        Leasehold
      </Link>
      <button
        type="button"
        className="menu-button"
        aria-expanded={open}
        aria-controls="console-nav"
        onClick={() => setOpenOn(open ? null : pathname)}
      >
        Menu
      </button>
      <nav id="console-nav" aria-label="Dashboard" data-open={open ? 'true' : 'false'}>
        <ul>
          {LINKS.map((l) => (
            <li key={l.href}>
              <Link href={l.href} aria-current={current(pathname, l.href) ? 'page' : undefined}>
                {l.label}
              </Link>
            </li>
          ))}
        </ul>
        <span className="who" data-testid="who">
          {who}
        </span>
        <ThemeToggle />
        <UtcToggle />
        <SignOut />
      </nav>
    </header>
  );
}
