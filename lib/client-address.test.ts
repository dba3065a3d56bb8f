/**
 * The client address the sign-in throttle keys on: X-Forwarded-For counts only when the peer
 * (the socket, recorded by lib/peer-address.ts) is a configured trusted proxy.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  clientAddress,
  NO_TRUSTED_PROXIES,
  normalizeAddress,
  parseTrustedProxies,
  PEER_HEADER,
  UNKNOWN_CLIENT,
} from './client-address.ts';
import { recordPeerAddresses } from './peer-address.ts';
import { parseWebEnv } from './settings.ts';

const trusted = parseTrustedProxies('10.0.0.1, 10.1.0.0/16, fd00::/8');

describe('the client address', () => {
  it('is the peer when no proxy is trusted, whatever X-Forwarded-For says', () => {
    for (const forwarded of ['203.0.113.9', '10.0.0.1', '198.51.100.1, 10.0.0.1', 'nonsense'])
      expect(clientAddress({ [PEER_HEADER]: '192.0.2.7', 'x-forwarded-for': forwarded }, NO_TRUSTED_PROXIES)).toBe(
        '192.0.2.7',
      );
  });

  it('ignores X-Forwarded-For from a peer that is not a trusted proxy', () => {
    expect(clientAddress({ [PEER_HEADER]: '192.0.2.7', 'x-forwarded-for': '203.0.113.9' }, trusted)).toBe('192.0.2.7');
  });

  it('takes the rightmost untrusted hop when the peer is a trusted proxy', () => {
    expect(clientAddress({ [PEER_HEADER]: '10.0.0.1', 'x-forwarded-for': '203.0.113.9' }, trusted)).toBe('203.0.113.9');
    // A client's own X-Forwarded-For entry left of the proxies' is not believed.
    expect(
      clientAddress({ [PEER_HEADER]: '10.0.0.1', 'x-forwarded-for': '1.2.3.4, 203.0.113.9, 10.1.4.4' }, trusted),
    ).toBe('203.0.113.9');
    expect(
      clientAddress({ [PEER_HEADER]: '::ffff:10.0.0.1', 'x-forwarded-for': 'fd00::1, 2001:db8::5' }, trusted),
    ).toBe('2001:db8::5');
  });

  it('stops at a hop that is no address, and falls back to the peer without a header', () => {
    expect(clientAddress({ [PEER_HEADER]: '10.0.0.1', 'x-forwarded-for': '203.0.113.9, junk' }, trusted)).toBe(
      '10.0.0.1',
    );
    expect(clientAddress({ [PEER_HEADER]: '10.0.0.1' }, trusted)).toBe('10.0.0.1');
    expect(clientAddress(new Headers({ 'x-forwarded-for': '203.0.113.9' }), trusted)).toBe(UNKNOWN_CLIENT);
  });

  it('normalizes IPv4-mapped and bracketed addresses', () => {
    expect(normalizeAddress('::FFFF:192.0.2.1')).toBe('192.0.2.1');
    expect(normalizeAddress('[2001:DB8::1]')).toBe('2001:db8::1');
    expect(normalizeAddress('example.com')).toBeNull();
  });
});

describe('LEASEHOLD_TRUSTED_PROXIES', () => {
  const BASE = { DATABASE_URL: 'postgres://x', LEASEHOLD_DEMO: 'true' };
  it('takes addresses and CIDR ranges', () => {
    const env = parseWebEnv({ ...BASE, LEASEHOLD_TRUSTED_PROXIES: '127.0.0.1, 10.0.0.0/8' });
    expect(env.trustedProxies.contains('10.200.3.4')).toBe(true);
    expect(env.trustedProxies.contains('127.0.0.1')).toBe(true);
    expect(env.trustedProxies.contains('11.0.0.1')).toBe(false);
    expect(parseWebEnv(BASE).trustedProxies.contains('127.0.0.1')).toBe(false);
  });
  it('refuses what is not an address, with a sentence', () => {
    expect(() => parseWebEnv({ ...BASE, LEASEHOLD_TRUSTED_PROXIES: 'proxy.internal' })).toThrow(
      /LEASEHOLD_TRUSTED_PROXIES: "proxy.internal" is not an IP address or CIDR range/,
    );
    expect(() => parseWebEnv({ ...BASE, LEASEHOLD_TRUSTED_PROXIES: '10.0.0.0/33' })).toThrow(
      /"10.0.0.0\/33" has no prefix length between 0 and 32/,
    );
  });
});

describe('the peer address', () => {
  it('is the socket’s, replacing a header of that name the client sent', async () => {
    recordPeerAddresses();
    const server = http.createServer((req, res) => res.end(String(req.headers[PEER_HEADER])));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const answer = await fetch(`http://127.0.0.1:${port}/`, { headers: { [PEER_HEADER]: '203.0.113.9' } });
      expect(await answer.text()).toBe('127.0.0.1');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
