import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../../test/db.ts';
import { addJob, claimOne, getJob, uniqueQueue } from '../../test/factories.ts';
import {
  boundedScrub,
  errorDetail,
  MASK,
  MAX_CAUSE_MESSAGE_CHARS,
  MAX_DETAIL_CHARS,
  redactedValues,
  scrubText,
} from './error-detail.ts';
import { failIfLeaseHeld } from './settle.ts';

const t = useTestDatabase();

describe('the secrets of a payload', () => {
  it('are the values at the redacted paths and under the well-known keys, longest first, in their encoded forms', () => {
    const payload = {
      to: [{ email: 'a@example.com' }, { email: 'b"q@example.com' }],
      profile: { Password: 'hunter22', card: { number: 4111111111111111, cvc: '123' } },
      subject: 'hello there',
      n: 7,
    };
    const values = redactedValues(payload, ['to[].email']);
    expect(new Set(values)).toEqual(
      new Set([
        'a@example.com',
        'a%40example.com',
        'b"q@example.com',
        'b\\"q@example.com',
        'b%22q%40example.com',
        'hunter22',
        '4111111111111111',
        '123',
      ]),
    );
    expect(values.map((v) => v.length)).toEqual(values.map((v) => v.length).sort((a, b) => b - a));
    // Not redacted: the subject; too short to scrub: nothing under 3 characters.
    expect(values).not.toContain('hello there');
  });

  it('are every value when the kind version has no known paths', () => {
    expect(redactedValues({ subject: 'hello there', n: 12345, x: 'ab' }, null).sort()).toEqual(
      ['12345', 'hello there', 'hello%20there'].sort(),
    );
  });

  it('are scrubbed before the text is cut, so one across the cut leaves no prefix', () => {
    const secret = 'sk_live_0123456789';
    const text = `${'x'.repeat(95)}${secret} and more`;
    const { text: cut } = boundedScrub(text, 100, [secret]);
    expect(cut).toBe(`${'x'.repeat(95)}${MASK.slice(0, 4)}…`);
    expect(cut).not.toContain('sk_l');
    expect(scrubText(`a ${secret} b ${secret}`, [secret])).toBe(`a ${MASK} b ${MASK}`);
  });
});

describe('the detail of a thrown value', () => {
  it('survives getters that throw and causes that are not errors', () => {
    const hostile = new Error('outer', { cause: 'a plain string' });
    Object.defineProperty(hostile, 'stack', {
      get() {
        throw new Error('no stack for you');
      },
    });
    expect(errorDetail(hostile)).toEqual({
      stack: null,
      causes: [{ name: 'thrown', message: 'a plain string', stack: null }],
      truncated: false,
    });
    const objectCause = errorDetail(new Error('outer', { cause: { status: 503 } }))!;
    expect(objectCause.causes).toEqual([{ name: 'thrown', message: '{"status":503}', stack: null }]);
  });

  it('is null for a thrown string and for an error with neither stack nor cause', () => {
    expect(errorDetail('boom')).toBeNull();
    const bare = new Error('bare');
    bare.stack = '';
    expect(errorDetail(bare)).toBeNull();
  });

  it('stops a chain that runs out of room, and never exceeds its budget', () => {
    let error: Error = new Error('root');
    for (let i = 0; i < 4; i += 1) {
      error = new Error('m'.repeat(5000), { cause: error });
      error.stack = `Error\n${'    at f (/x.js:1:1)\n'.repeat(49)}    at g (/${'y'.repeat(400)}.js:1:1)`;
    }
    const detail = errorDetail(new Error('top', { cause: error }))!;
    expect(detail.causes.every((c) => c.message.length <= MAX_CAUSE_MESSAGE_CHARS)).toBe(true);
    const chars = [detail.stack ?? '', ...detail.causes.flatMap((c) => [c.name, c.message, c.stack ?? ''])].join(
      '',
    ).length;
    expect(chars).toBeLessThanOrEqual(MAX_DETAIL_CHARS);
    expect(detail.truncated).toBe(true);
  });
});

describe('failIfLeaseHeld with a detail', () => {
  it('refuses one beyond the bounds, naming the field, and writes nothing', async () => {
    const queue = uniqueQueue('detail-refused');
    const job = await addJob(t.db, { queue });
    const lease = await claimOne(t.db, queue);
    await expect(
      failIfLeaseHeld(t.db, lease, {
        error: 'x',
        failureClass: 'permanent',
        detail: { stack: 's'.repeat(MAX_DETAIL_CHARS + 1), causes: [], truncated: false },
      }),
    ).rejects.toThrow(/detail\.stack/);
    expect((await getJob(t.db, job.id)).state).toBe('running');
  });

  it('stores U+0000 in it as U+FFFD (jsonb refuses it)', async () => {
    const queue = uniqueQueue('detail-nul');
    const job = await addJob(t.db, { queue });
    const lease = await claimOne(t.db, queue);
    await failIfLeaseHeld(t.db, lease, {
      error: 'x',
      failureClass: 'permanent',
      detail: { stack: '    at a\u0000b', causes: [], truncated: false },
    });
    const { rows } = await t.pool.query<{ d: { stack: string } }>(
      'SELECT error_detail AS d FROM leasehold.job_attempts WHERE job_id = $1',
      [job.id],
    );
    expect(rows[0]!.d.stack).toBe('    at a\uFFFDb');
  });
});
