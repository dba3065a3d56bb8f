/** Demo mode's session secret: random per data folder, kept beside it, readable by its owner only. */
import { mkdtempSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { demoSecret, demoSecretFile } from './demo-secret.ts';

describe('the demo secret', () => {
  it('is made once per data folder, kept (mode 0600) and reused, and differs between folders', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'leasehold-demo-secret-'));
    const one = demoSecretFile({ embedded: true, url: 'postgres://x@127.0.0.1:1/leasehold' }, path.join(dir, 'a'));
    const two = demoSecretFile({ embedded: true, url: 'postgres://x@127.0.0.1:1/leasehold' }, path.join(dir, 'b'));
    expect(one).not.toBe(two);
    const secret = demoSecret(one);
    expect(secret.length).toBeGreaterThanOrEqual(32);
    expect(secret).not.toBe('leasehold-demo-secret-not-for-production');
    expect(demoSecret(one)).toBe(secret);
    expect(statSync(one).mode & 0o777).toBe(0o600);
    expect(demoSecret(two)).not.toBe(secret);
  });

  it('names a DATABASE_URL database by server and database, not by its password', () => {
    const at = (url: string) => demoSecretFile({ embedded: false, url }, '/unused');
    expect(at('postgres://a:one@db:5432/app')).toBe(at('postgres://a:two@db:5432/app'));
    expect(at('postgres://a@db:5432/app')).not.toBe(at('postgres://a@db:5432/other'));
  });
});
