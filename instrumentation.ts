/**
 * Runs once when a dashboard server process starts (Next.js instrumentation): from then on each
 * request carries its socket's address for the sign-in throttle (lib/peer-address.ts).
 */
export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME === 'nodejs') {
    const { recordPeerAddresses } = await import('./lib/peer-address.ts');
    recordPeerAddresses();
  }
}
