import { describe, expect, it } from 'vitest';
import { redactedValues } from './error-detail.ts';
import { isSecretKey, keyWords, MASK, pathMatcher, scrubSecretPatterns } from './redaction-rules.ts';

describe('a secret key', () => {
  it.each([
    'password',
    'Password',
    'PASSWORD',
    'passwd',
    'userPassword',
    'userpassword',
    'accessToken',
    'access_token',
    'refresh-token',
    'ACCESS_TOKEN',
    'accesstoken',
    'token',
    'apiKey',
    'api_key',
    'x-api-key',
    'APIKey',
    'APIKEY',
    'apikey',
    'clientSecret',
    'client_secret',
    'Authorization',
    'cardNumber',
    'card_number',
    'card',
    'credit_card',
    'creditcard',
    'cvv',
    'CVC',
    'iban',
    'IBAN',
    'ssn',
    'pin',
    'pinCode',
    'privateKey',
    'private_key',
    'Cookie',
    'credentials',
  ])('%s is masked', (key) => {
    expect(isSecretKey(key)).toBe(true);
  });

  it.each([
    'orderId',
    'email',
    'name',
    'className',
    'businessName',
    'discard',
    'scorecard',
    'shipping',
    'spinner',
    'subject',
    'keyboard',
  ])('%s is not', (key) => {
    expect(isSecretKey(key)).toBe(false);
  });

  it('is split into words at separators, case changes and digits', () => {
    expect(keyWords('X-API-Key')).toEqual(['x', 'api', 'key']);
    expect(keyWords('accessToken2')).toEqual(['access', 'token', '2']);
    expect(keyWords('card_number')).toEqual(['card', 'number']);
    expect(keyWords('HTTPSProxy')).toEqual(['https', 'proxy']);
  });
});

describe('a configured path', () => {
  it('matches case-insensitively, nested, and through arrays', () => {
    const masked = pathMatcher(['customer.email', 'recipients[].email', 'to[1].name', 'lines.sku']);
    expect(masked('customer.email')).toBe(true);
    expect(masked('Customer.Email')).toBe(true);
    expect(masked('recipients[0].email')).toBe(true);
    expect(masked('recipients[7].EMAIL')).toBe(true);
    expect(masked('to[1].name')).toBe(true);
    expect(masked('to[0].name')).toBe(false);
    // Without brackets a path reaches into arrays too.
    expect(masked('lines[3].sku')).toBe(true);
    expect(masked('customer.name')).toBe(false);
    expect(masked('email')).toBe(false);
  });

  it('gives error text the values under every matching key, whatever its spelling', () => {
    const payload = {
      Customer: { EMAIL: 'ada@example.com' },
      accessToken: 'tok_live_1234',
      billing: { cardNumber: '4111111111111111', credit_card: { cvv: '987' } },
      recipients: [{ email: 'bob@example.com' }],
      subject: 'hello there',
    };
    const values = redactedValues(payload, ['customer.email', 'recipients.email']);
    for (const v of ['ada@example.com', 'tok_live_1234', '4111111111111111', '987', 'bob@example.com'])
      expect(values).toContain(v);
    expect(values).not.toContain('hello there');
  });
});

describe('secret-looking pairs in text', () => {
  it('masks the value of a secret key spelled as JSON, escaped JSON, key=value or an HTTP credential', () => {
    expect(scrubSecretPatterns('refused {"accessToken":"tok_abc","id":7}')).toBe(
      `refused {"accessToken":"${MASK}","id":7}`,
    );
    expect(scrubSecretPatterns(`body "{\\"api_key\\": \\"k-1\\"}"`)).toBe(`body "{\\"api_key\\": \\"${MASK}\\"}"`);
    expect(scrubSecretPatterns("{'password': 'hunter22'}")).toBe(`{'password': '${MASK}'}`);
    expect(scrubSecretPatterns('GET /cb?code=1&access_token=abc123&state=x')).toBe(
      `GET /cb?code=1&access_token=${MASK}&state=x`,
    );
    expect(scrubSecretPatterns('Authorization: Bearer eyJhbGciOi.x.y')).toBe(`Authorization: Bearer ${MASK}`);
    expect(scrubSecretPatterns('{"cardNumber": 4111111111111111}')).toBe(`{"cardNumber": ${MASK}}`);
  });

  it('leaves prose and other keys alone', () => {
    for (const text of ['invalid token: expired', '{"orderId":"o-1"}', 'retry=3 queue=mail', 'card declined'])
      expect(scrubSecretPatterns(text)).toBe(text);
  });
});
