/** A limit's rate as text: what parses, what is refused (in a sentence), and that printing round-trips. */
import { describe, expect, it } from 'vitest';
import { parseRate, rateText } from './limit-rate.ts';

describe('a rate as text', () => {
  it('reads N/INTERVAL with ms, s, m, h or plain milliseconds', () => {
    expect(parseRate('100/1s')).toEqual({ max: 100, perMs: 1000 });
    expect(parseRate('5/500ms')).toEqual({ max: 5, perMs: 500 });
    expect(parseRate('10/1m')).toEqual({ max: 10, perMs: 60_000 });
    expect(parseRate('1/24h')).toEqual({ max: 1, perMs: 86_400_000 });
    expect(parseRate('7/250')).toEqual({ max: 7, perMs: 250 });
    expect(parseRate('1000000/1ms')).toEqual({ max: 1_000_000, perMs: 1 });
  });

  it('refuses anything else in a sentence that starts with what it is called', () => {
    for (const bad of [
      '',
      '100',
      '100/',
      '/1s',
      '0/1s',
      '1000001/1s',
      '5/0s',
      '5/25h',
      '5/1d',
      '1.5/1s',
      ' 5/1s',
      '5 / 1s',
    ]) {
      expect(parseRate(bad), bad).toBe(
        `the rate must be N/INTERVAL (100/1s, 5/500ms): N a whole number from 1 to 1000000, INTERVAL from 1ms to 24h, not ${JSON.stringify(bad)}`,
      );
    }
    expect(parseRate('fast', '--rate')).toMatch(/^--rate must be N\/INTERVAL/);
  });

  it('prints the largest whole unit, and reads back what it prints', () => {
    expect(rateText({ max: 100, perMs: 1000 })).toBe('100/1s');
    expect(rateText({ max: 5, perMs: 500 })).toBe('5/500ms');
    expect(rateText({ max: 3, perMs: 90_000 })).toBe('3/90s');
    expect(rateText({ max: 1, perMs: 7_200_000 })).toBe('1/2h');
    expect(rateText(null)).toBe('-');
    for (const rate of [
      { max: 1, perMs: 1 },
      { max: 42, perMs: 1500 },
      { max: 9, perMs: 3_600_000 },
      { max: 1_000_000, perMs: 86_400_000 },
    ]) {
      expect(parseRate(rateText(rate))).toEqual(rate);
    }
  });
});
