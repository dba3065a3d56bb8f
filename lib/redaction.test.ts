import { describe, expect, it } from 'vitest';
import { MASK, redact } from './redaction.ts';

describe('payload redaction', () => {
  it('masks the registered paths and well-known secret keys at any depth, and names them', () => {
    const { payload, redacted, hidden } = redact(
      { orderId: 'o1', email: 'a@b.c', meta: { apiKey: 'k', list: [{ password: 'p' }] } },
      ['email'],
    );
    expect(payload).toEqual({ orderId: 'o1', email: MASK, meta: { apiKey: MASK, list: [{ password: MASK }] } });
    expect(redacted.sort()).toEqual(['email', 'meta.apiKey', 'meta.list[0].password']);
    expect(hidden).toBe(false);
  });

  it('masks a key in every element of an array for a path with [], and one element for [n]', () => {
    const payload = {
      to: [
        { email: 'a@b.c', name: 'A' },
        { email: 'd@e.f', name: 'D' },
      ],
    };
    expect(redact(payload, ['to[].email']).payload).toEqual({
      to: [
        { email: MASK, name: 'A' },
        { email: MASK, name: 'D' },
      ],
    });
    expect(redact(payload, ['to[1].name']).redacted).toEqual(['to[1].name']);
  });

  it('matches secret keys by pattern and paths in any case, nested and through arrays', () => {
    const { payload, redacted } = redact(
      {
        Customer: { Email: 'a@b.c', name: 'A' },
        accessToken: 't',
        billing: { cardNumber: '4111', credit_card: { cvv: '1' }, iban: 'DE00' },
        recipients: [{ email: 'd@e.f' }],
        discard: false,
      },
      ['customer.email', 'recipients.email'],
    );
    expect(payload).toEqual({
      Customer: { Email: MASK, name: 'A' },
      accessToken: MASK,
      billing: { cardNumber: MASK, credit_card: MASK, iban: MASK },
      recipients: [{ email: MASK }],
      discard: false,
    });
    expect(redacted.sort()).toEqual(
      [
        'Customer.Email',
        'accessToken',
        'billing.cardNumber',
        'billing.credit_card',
        'billing.iban',
        'recipients[0].email',
      ].sort(),
    );
  });

  it('leaves fields alone that a registered kind does not name', () => {
    expect(redact({ email: 'a@b.c' }, [])).toEqual({ payload: { email: 'a@b.c' }, redacted: [], hidden: false });
  });

  it('hides the whole payload of a kind version nobody registered', () => {
    expect(redact({ orderId: 'o1', note: 'hello' }, null)).toEqual({ payload: MASK, redacted: [], hidden: true });
  });
});
