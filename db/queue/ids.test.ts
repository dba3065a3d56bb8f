import { describe, expect, it } from 'vitest';
import { newJobId } from './ids.ts';

describe('job ids', () => {
  it('are distinct UUIDv7s that increase within a process, across many per millisecond', () => {
    const ids = Array.from({ length: 50_000 }, () => newJobId());
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
  });

  it('carry the creation time in their first 48 bits', () => {
    const before = Date.now();
    const id = newJobId();
    const ms = parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(Date.now() + 1);
  });
});
