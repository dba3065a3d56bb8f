import Link from 'next/link';

/**
 * Ours rather than Next.js's built-in one, which renders an inline <style> element the
 * Content-Security-Policy (proxy.ts) refuses: it carries no nonce.
 */
export default function NotFound() {
  return (
    <main id="main">
      <h1>Not found</h1>
      <p className="muted">
        Nothing is at this address: the job may have been deleted by retention, or the link is wrong.{' '}
        <Link href="/">Back to the overview</Link>
      </p>
    </main>
  );
}
