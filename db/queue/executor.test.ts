import { describe, expect, it } from 'vitest';
import { toDate } from './executor';

describe('toDate', () => {
  it('reads PostgreSQL timestamptz text exactly as the Date parser does, with or without a fraction and in any offset', () => {
    for (const text of [
      '2026-11-29 14:10:22.498759+00',
      '2026-11-29 14:10:22+00',
      '2026-11-29 14:10:22.4+00',
      '2026-11-29 14:10:22.45+00',
      '1999-12-31 23:59:59.999999+00',
      '2026-11-29 14:10:22.498759+05:30',
      '2026-11-29 14:10:22.498759-08',
    ]) {
      const iso = text.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00');
      expect(toDate(text).getTime(), text).toBe(new Date(iso).getTime());
    }
  });

  it('refuses text that is not a timestamp', () => {
    expect(() => toDate('2026-11-29 xx:10:22+00')).toThrow(/expected a timestamp/);
    expect(() => toDate('yesterday')).toThrow(/expected a timestamp/);
  });
});
