/**
 * Which address a request came from, for the sign-in throttle and the audit log. The direct
 * peer is the socket's address: `next start` puts it in no header a client cannot set (Next.js
 * fills X-Forwarded-For with it only when the request has none, so a direct client chooses its
 * own), so lib/peer-address.ts records it in PEER_HEADER, overwriting whatever a client sent.
 * X-Forwarded-For counts only when that peer is one of LEASEHOLD_TRUSTED_PROXIES: then its
 * entries are read from the right, past every trusted proxy, and the first other address is
 * the client's. A guesser who connects directly cannot rotate addresses by header. Pure: no
 * `server-only`, so lib/settings.ts parses the setting with it.
 */
import { BlockList, isIP } from 'node:net';

/** Set by lib/peer-address.ts on every request, from the socket; a client's own value is replaced. */
export const PEER_HEADER = 'x-leasehold-peer';

/** What the throttle keys on when the peer is unknown (no lib/peer-address.ts in this process). */
export const UNKNOWN_CLIENT = 'unknown';

/** `::ffff:10.0.0.1` is 10.0.0.1; brackets and zone ids go; null for what is not an address. */
export function normalizeAddress(raw: string): string | null {
  let text = raw.trim();
  if (text.startsWith('[') && text.includes(']')) text = text.slice(1, text.indexOf(']'));
  const zone = text.indexOf('%');
  if (zone > 0) text = text.slice(0, zone);
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(text);
  if (mapped) text = mapped[1]!;
  const family = isIP(text);
  if (family === 0) return null;
  return family === 6 ? text.toLowerCase() : text;
}

export interface TrustedProxies {
  /** As configured, for messages. */
  entries: string[];
  contains(address: string): boolean;
}

/** `10.0.0.1, 10.1.0.0/16, fd00::/8`: addresses and CIDR ranges; an Error names a bad entry. */
export function parseTrustedProxies(text: string): TrustedProxies {
  const list = new BlockList();
  const entries = text
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  for (const entry of entries) {
    const slash = entry.indexOf('/');
    const address = normalizeAddress(slash >= 0 ? entry.slice(0, slash) : entry);
    if (!address)
      throw new Error(`LEASEHOLD_TRUSTED_PROXIES: "${entry}" is not an IP address or CIDR range (e.g. 10.0.0.0/8)`);
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (slash < 0) {
      list.addAddress(address, family);
      continue;
    }
    const prefixText = entry.slice(slash + 1);
    const prefix = Number(prefixText);
    const max = family === 'ipv6' ? 128 : 32;
    if (!/^\d{1,3}$/.test(prefixText) || prefix > max)
      throw new Error(`LEASEHOLD_TRUSTED_PROXIES: "${entry}" has no prefix length between 0 and ${max}`);
    list.addSubnet(address, prefix, family);
  }
  return {
    entries,
    contains: (address) => {
      const normalized = normalizeAddress(address);
      if (!normalized) return false;
      return list.check(normalized, isIP(normalized) === 6 ? 'ipv6' : 'ipv4');
    },
  };
}

export const NO_TRUSTED_PROXIES: TrustedProxies = { entries: [], contains: () => false };

/** Longest address kept (leasehold.sign_in_throttle.client allows 100 characters). */
const MAX_CLIENT = 100;

/**
 * The client's address: the peer, or (when the peer is a trusted proxy) the rightmost
 * X-Forwarded-For entry that is not a trusted proxy. An entry that is no address stops the
 * walk at the hop that appended it.
 */
export function clientAddress(headers: Headers | Record<string, string | undefined>, trusted: TrustedProxies): string {
  const header = (name: string) =>
    headers instanceof Headers ? (headers.get(name) ?? undefined) : (headers[name] ?? undefined);
  const peer = normalizeAddress(header(PEER_HEADER) ?? '');
  if (!peer) return UNKNOWN_CLIENT;
  if (!trusted.contains(peer)) return peer.slice(0, MAX_CLIENT);
  const hops = (header('x-forwarded-for') ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  let client = peer;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = normalizeAddress(hops[i]!);
    if (!hop) break;
    client = hop;
    if (!trusted.contains(hop)) break;
  }
  return client.slice(0, MAX_CLIENT);
}
