/**
 * Runs once when a dashboard server process starts (Next.js instrumentation): from then on each
 * request carries its socket's address for the sign-in throttle (lib/peer-address.ts), and a
 * request whose path cannot be decoded is answered 400 before Next.js fails on it with a 500
 * (lib/undecodable-path.ts).
 */
export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME === 'nodejs') {
    const { recordPeerAddresses } = await import('./lib/peer-address.ts');
    recordPeerAddresses();
    const { refuseUndecodablePaths } = await import('./lib/undecodable-path.ts');
    refuseUndecodablePaths();
  }
}
