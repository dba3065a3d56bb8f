import { describe, expect, it } from 'vitest';
import { judge, parseRule } from './judge.ts';

describe('judge', () => {
  it('= N holds only at N', () => {
    expect(judge('= 0', 0)).toBe(true);
    expect(judge('= 0', 1)).toBe(false);
    expect(judge('= 0', -1)).toBe(false);
    expect(judge('= 3', 3)).toBe(true);
    expect(judge('= 3', 2)).toBe(false);
  });

  it('> N holds only above N', () => {
    expect(judge('> 0', 1)).toBe(true);
    expect(judge('> 0', 0)).toBe(false);
    expect(judge('> 0', -5)).toBe(false);
  });

  it('< N holds only below N', () => {
    expect(judge('< 2000', 1999)).toBe(true);
    expect(judge('< 2000', 2000)).toBe(false);
  });

  it('≥ N and >= N hold at N and above', () => {
    for (const rule of ['≥ 1', '>= 1']) {
      expect(judge(rule, 1)).toBe(true);
      expect(judge(rule, 7)).toBe(true);
      expect(judge(rule, 0)).toBe(false);
    }
  });

  it('≤ N and <= N hold at N and below', () => {
    for (const rule of ['≤ 5800', '<= 5800']) {
      expect(judge(rule, 5800)).toBe(true);
      expect(judge(rule, 0)).toBe(true);
      expect(judge(rule, 5801)).toBe(false);
    }
  });

  it('A..B holds inside the range, ends included', () => {
    expect(judge('0..1999', 0)).toBe(true);
    expect(judge('0..1999', 1999)).toBe(true);
    expect(judge('0..1999', -1)).toBe(false);
    expect(judge('0..1999', 2000)).toBe(false);
  });

  it('a note in parentheses after the rule changes nothing', () => {
    expect(judge('> 0 (the fault happened)', 1)).toBe(true);
    expect(judge('> 0 (the fault happened)', 0)).toBe(false);
    expect(judge('0..25000 (poll is 60000)', 30_000)).toBe(false);
  });

  it('decimal bounds compare as numbers', () => {
    expect(judge('≤ 0.5', 0.5)).toBe(true);
    expect(judge('≤ 0.5', 0.51)).toBe(false);
  });

  it('an unknown rule fails, whatever the value', () => {
    for (const rule of [
      'reported',
      'no error',
      '',
      '= ',
      '=0x',
      '= 3 of 3',
      'reported (> 0: the flood was on)',
      '5..1',
    ])
      for (const value of [0, 1, -1]) {
        expect(parseRule(rule), rule).toBeNull();
        expect(judge(rule, value), `${rule} with ${value}`).toBe(false);
      }
  });

  it('a missing, NaN or infinite value fails, whatever the rule', () => {
    for (const rule of ['= 0', '> 0', '≤ 5800', '≥ 0', '< 1', '-1..1'])
      for (const value of [Number.NaN, undefined, null, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
        expect(judge(rule, value), `${rule} with ${value}`).toBe(false);
      }
  });

  it('parses each form once into its comparison', () => {
    expect(parseRule('= 0')).toEqual({ op: '=', bound: 0 });
    expect(parseRule('>= 2')).toEqual({ op: '≥', bound: 2 });
    expect(parseRule('<= 5800')).toEqual({ op: '≤', bound: 5800 });
    expect(parseRule('-1..1')).toEqual({ op: 'range', low: -1, high: 1 });
  });
});
