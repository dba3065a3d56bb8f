import { describe, expect, it } from 'vitest';
import { MASK, redact } from './redaction';

describe('payload redaction', () => {
  it('masks the kind’s paths and well-known secret keys at any depth, and names them', () => {
    const { payload, redacted } = redact('receipt.send', {
      orderId: 'o1',
      email: 'a@b.c',
      meta: { apiKey: 'k', list: [{ password: 'p' }] },
    });
    expect(payload).toEqual({ orderId: 'o1', email: MASK, meta: { apiKey: MASK, list: [{ password: MASK }] } });
    expect(redacted.sort()).toEqual(['email', 'meta.apiKey', 'meta.list[0].password']);
  });

  it('leaves other kinds’ fields alone', () => {
    expect(redact('other.kind', { email: 'a@b.c' })).toEqual({ payload: { email: 'a@b.c' }, redacted: [] });
  });
});
