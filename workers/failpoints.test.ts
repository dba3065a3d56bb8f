import { describe, expect, it } from 'vitest';
import { FailpointSpecError, parseFailpoints } from './failpoints';

describe('LEASEHOLD_FAILPOINTS', () => {
  it('reads points with and without a probability', () => {
    expect([...parseFailpoints('after_claim:0.05, before_ack')]).toEqual([
      ['after_claim', 0.05],
      ['before_ack', 1],
    ]);
    expect(parseFailpoints(undefined).size).toBe(0);
  });

  it('refuses an unknown point or a probability outside 0..1 with a FailpointSpecError naming it', () => {
    expect(() => parseFailpoints('after_lunch')).toThrow(FailpointSpecError);
    expect(() => parseFailpoints('after_lunch')).toThrow('unknown failpoint "after_lunch"');
    expect(() => parseFailpoints('in_reap:2')).toThrow('failpoint in_reap: probability must be 0..1, got 2');
    expect(() => parseFailpoints('in_reap:often')).toThrow(FailpointSpecError);
  });
});
