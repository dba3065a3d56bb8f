import { describe, expect, it } from 'vitest';
import { FailpointSpecError, Failpoints, parseFailpoints } from './failpoints.ts';

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

describe('guard-skipping failpoints', () => {
  it('are armed only by a spec that names them', () => {
    expect(new Failpoints().skips('unguarded_claim')).toBe(false);
    expect(new Failpoints(parseFailpoints(undefined)).guardSkips()).toEqual([]);
    expect(new Failpoints(parseFailpoints('after_claim:0.05,before_ack')).guardSkips()).toEqual([]);
    expect(new Failpoints(parseFailpoints('after_claim:0.05,before_ack')).skips('unguarded_claim')).toBe(false);
  });

  it('skip with their probability once named', () => {
    const armed = new Failpoints(parseFailpoints('unguarded_claim'));
    expect(armed.guardSkips()).toEqual(['unguarded_claim']);
    expect(armed.skips('unguarded_claim')).toBe(true);
    expect(new Failpoints(parseFailpoints('unguarded_claim:0')).skips('unguarded_claim')).toBe(false);
  });
});
