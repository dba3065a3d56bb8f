/**
 * The policy's text: nonce-based scripts with no unsafe-inline or unsafe-eval outside `next dev`,
 * no framing, forms only to the dashboard and the identity provider, upgrades and HSTS only
 * over https. The e2e (e2e/headers.spec.ts) checks that pages run under it.
 */
import { describe, expect, it } from 'vitest';
import { baseSecurityHeaders, contentSecurityPolicy, newNonce, originOf } from './security-headers.ts';

const directives = (policy: string) =>
  Object.fromEntries(
    policy.split(';').map((d) => {
      const [name, ...values] = d.trim().split(/\s+/);
      return [name!, values.join(' ')];
    }),
  );

describe('contentSecurityPolicy', () => {
  const production = directives(
    contentSecurityPolicy({ nonce: 'abc123==', dev: false, formActions: ['https://login.example.com'], https: true }),
  );

  it('lets scripts run by nonce only, with nothing inline or evaluated', () => {
    expect(production['script-src']).toBe("'self' 'nonce-abc123==' 'strict-dynamic'");
    expect(production['style-src']).toBe("'self' 'nonce-abc123=='");
    expect(production['frame-ancestors']).toBe("'none'");
    expect(production['object-src']).toBe("'none'");
    expect(production['form-action']).toBe("'self' https://login.example.com");
    expect(production).toHaveProperty('upgrade-insecure-requests');
  });

  it('allows eval and inline styles only in development, and no upgrade over http', () => {
    const dev = directives(contentSecurityPolicy({ nonce: 'n', dev: true, formActions: [], https: false }));
    expect(dev['script-src']).toContain("'unsafe-eval'");
    expect(dev['style-src']).toContain("'unsafe-inline'");
    expect(dev['form-action']).toBe("'self'");
    expect(dev).not.toHaveProperty('upgrade-insecure-requests');
  });
});

describe('the other headers', () => {
  it('send HSTS only over https', () => {
    expect(baseSecurityHeaders(true)).toMatchObject({
      'strict-transport-security': 'max-age=31536000',
      'x-content-type-options': 'nosniff',
    });
    expect(baseSecurityHeaders(false)).not.toHaveProperty('strict-transport-security');
  });

  it('take the origin of an http(s) setting and nothing else', () => {
    expect(originOf('https://login.example.com/realms/ops/')).toBe('https://login.example.com');
    expect(originOf('javascript:alert(1)')).toBeNull();
    expect(originOf('not a url')).toBeNull();
    expect(originOf(undefined)).toBeNull();
  });

  it('make a new nonce each time', () => {
    const a = newNonce();
    expect(a).toMatch(/^[A-Za-z0-9+/]{22}==$/);
    expect(newNonce()).not.toBe(a);
  });
});
