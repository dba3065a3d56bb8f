import { describe, expect, it } from 'vitest';
import { claimWithoutReadyGuard } from '../db/queue/transitions/unguarded-claim.ts';
import {
  armFailpoints,
  FailpointSpecError,
  Failpoints,
  parseFailpoints,
  UNGUARDED_CLAIM_ABSENT,
} from './failpoints.ts';

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
  it('are armed only by a spec that names them', async () => {
    expect(new Failpoints().claimSkippingGuard()).toBeNull();
    expect(new Failpoints(parseFailpoints(undefined)).guardSkips()).toEqual([]);
    const crashes = await armFailpoints('after_claim:0.05,before_ack');
    expect(crashes.guardSkips()).toEqual([]);
    expect(crashes.claimSkippingGuard()).toBeNull();
  });

  it('run the guard-skipping claim with their probability once named, loaded from the sources', async () => {
    const armed = await armFailpoints('unguarded_claim');
    expect(armed.guardSkips()).toEqual(['unguarded_claim']);
    expect(armed.claimSkippingGuard()).toBe(claimWithoutReadyGuard);
    expect((await armFailpoints('unguarded_claim:0')).claimSkippingGuard()).toBeNull();
  });

  it('cannot be armed without the statement: where it is absent, the point is refused with a sentence', async () => {
    expect(() => new Failpoints(parseFailpoints('unguarded_claim'))).toThrow(FailpointSpecError);
    const absent = new URL('./no-such-claim.ts', import.meta.url);
    await expect(armFailpoints('unguarded_claim', absent)).rejects.toThrow(FailpointSpecError);
    await expect(armFailpoints('unguarded_claim', absent)).rejects.toThrow(UNGUARDED_CLAIM_ABSENT);
    // Crash points need no statement: they arm anywhere.
    expect((await armFailpoints('after_claim', absent)).guardSkips()).toEqual([]);
  });
});
