import { describe, expect, it } from 'vitest';
import {
  absoluteTime,
  dayLabel,
  durationText,
  INVALID_TIME,
  offsetLabel,
  relativeTime,
  timeOfDay,
  whenText,
  zoneOf,
} from './time-format.ts';

const AT = '2026-12-07T01:03:27.456Z';
const ms = (iso: string) => Date.parse(iso);

describe('absoluteTime', () => {
  it('words an instant in UTC, labelled UTC, to the second', () => {
    expect(absoluteTime(AT, 'UTC')).toBe('2026-12-07 01:03:27 UTC');
    expect(absoluteTime(AT, 'Etc/UTC', { zoneName: true })).toBe('2026-12-07 01:03:27 UTC');
  });

  it('words the same instant in another zone with its offset, and its IANA name when asked', () => {
    expect(absoluteTime(AT, 'Pacific/Auckland')).toBe('2026-12-07 14:03:27 UTC+13');
    expect(absoluteTime(AT, 'Pacific/Auckland', { zoneName: true })).toBe(
      '2026-12-07 14:03:27 UTC+13 (Pacific/Auckland)',
    );
    expect(absoluteTime(AT, 'America/New_York')).toBe('2026-12-06 20:03:27 UTC-5');
    expect(absoluteTime(AT, 'Asia/Kolkata')).toBe('2026-12-07 06:33:27 UTC+5:30');
    expect(absoluteTime(AT, 'America/St_Johns')).toBe('2026-12-06 21:33:27 UTC-3:30');
  });

  it('names a zone at offset 0 that is not UTC by its offset and name (London in winter)', () => {
    expect(absoluteTime(AT, 'Europe/London', { zoneName: true })).toBe('2026-12-07 01:03:27 UTC+0 (Europe/London)');
  });

  it('follows daylight saving time: the offset changes across the switch', () => {
    // Europe/Berlin leaves summer time at 01:00 UTC on 2026-10-25 (03:00 CEST becomes 02:00 CET).
    expect(absoluteTime('2026-10-25T00:59:59Z', 'Europe/Berlin')).toBe('2026-10-25 02:59:59 UTC+2');
    expect(absoluteTime('2026-10-25T01:00:00Z', 'Europe/Berlin')).toBe('2026-10-25 02:00:00 UTC+1');
    // Auckland starts summer time at 14:00 UTC on 2026-09-26 (02:00 NZST becomes 03:00 NZDT).
    expect(absoluteTime('2026-09-26T13:59:59Z', 'Pacific/Auckland')).toBe('2026-09-27 01:59:59 UTC+12');
    expect(absoluteTime('2026-09-26T14:00:00Z', 'Pacific/Auckland')).toBe('2026-09-27 03:00:00 UTC+13');
    // New York in summer.
    expect(absoluteTime('2026-07-01T12:00:00Z', 'America/New_York')).toBe('2026-07-01 08:00:00 UTC-4');
  });

  it('takes a Date and epoch milliseconds as well as ISO text', () => {
    expect(absoluteTime(new Date(AT), 'UTC')).toBe('2026-12-07 01:03:27 UTC');
    expect(absoluteTime(ms(AT), 'UTC')).toBe('2026-12-07 01:03:27 UTC');
  });

  it('words input that is not a time as invalid, never as Invalid Date', () => {
    expect(absoluteTime('yesterday-ish', 'UTC')).toBe(INVALID_TIME);
    expect(absoluteTime(new Date(Number.NaN), 'Pacific/Auckland')).toBe(INVALID_TIME);
    expect(absoluteTime(Number.POSITIVE_INFINITY, 'UTC')).toBe(INVALID_TIME);
    expect(absoluteTime('', 'UTC')).toBe(INVALID_TIME);
  });

  it('takes a zone Intl does not know as UTC and labels it UTC', () => {
    expect(zoneOf('Mars/Olympus_Mons')).toBe('UTC');
    expect(zoneOf('Pacific/Auckland')).toBe('Pacific/Auckland');
    expect(absoluteTime(AT, 'Mars/Olympus_Mons', { zoneName: true })).toBe('2026-12-07 01:03:27 UTC');
  });
});

describe('relativeTime', () => {
  const now = ms(AT);
  const ago = (seconds: number) => relativeTime(now - seconds * 1000, now);
  const ahead = (seconds: number) => relativeTime(now + seconds * 1000, now);

  it('says just now within a minute before, and rounds down past it', () => {
    expect(ago(0)).toBe('just now');
    expect(ago(59.9)).toBe('just now');
    expect(ago(60)).toBe('1 min ago');
    expect(ago(3 * 60 + 59)).toBe('3 min ago');
    expect(ago(59 * 60 + 59)).toBe('59 min ago');
  });

  it('moves to hours at an hour, to days at two days, to months at sixty days, to years at two years', () => {
    expect(ago(3600)).toBe('1 h ago');
    expect(ago(47 * 3600 + 3599)).toBe('47 h ago');
    expect(ago(48 * 3600)).toBe('2 d ago');
    expect(ago(59 * 86_400)).toBe('59 d ago');
    expect(ago(61 * 86_400)).toBe('2 mo ago');
    expect(ago(729 * 86_400)).toBe('23 mo ago');
    expect(ago(3 * 365.25 * 86_400)).toBe('3 y ago');
  });

  it('words future times with "in"', () => {
    expect(ahead(0.5)).toBe('just now');
    expect(ahead(30)).toBe('in under 1 min');
    expect(ahead(5 * 60)).toBe('in 5 min');
    expect(ahead(2 * 3600 + 1)).toBe('in 2 h');
    expect(ahead(3 * 86_400)).toBe('in 3 d');
  });

  it('does not depend on the zone: a relative text is the same everywhere', () => {
    expect(relativeTime('2026-12-07T00:00:00+13:00', '2026-12-06T11:05:00Z')).toBe('5 min ago');
  });

  it('words input that is not a time as invalid', () => {
    expect(relativeTime('not a time', now)).toBe(INVALID_TIME);
    expect(relativeTime(AT, Number.NaN)).toBe(INVALID_TIME);
  });
});

describe('the short labels', () => {
  it('words a clock time and a day in the zone asked', () => {
    expect(timeOfDay(AT, 'UTC')).toBe('01:03');
    expect(timeOfDay(AT, 'Pacific/Auckland')).toBe('14:03');
    expect(dayLabel('2026-12-06T20:00:00Z', 'UTC')).toBe('6 Dec');
    expect(dayLabel('2026-12-06T20:00:00Z', 'Pacific/Auckland')).toBe('7 Dec');
    expect(timeOfDay('nope', 'UTC')).toBe(INVALID_TIME);
    expect(dayLabel('nope', 'UTC')).toBe(INVALID_TIME);
  });

  it('words offsets and durations', () => {
    expect(offsetLabel(780)).toBe('UTC+13');
    expect(offsetLabel(-210)).toBe('UTC-3:30');
    expect(offsetLabel(0)).toBe('UTC+0');
    expect(durationText(42.9)).toBe('42 s');
    expect(durationText(-5)).toBe('0 s');
  });
});

describe('whenText (the CLI)', () => {
  it('prints the absolute time in the zone, then the relative one; a dash for none', () => {
    expect(whenText(new Date(AT), 'UTC', ms(AT) + 180_000)).toBe('2026-12-07 01:03:27 UTC (3 min ago)');
    expect(whenText(new Date(AT), 'Pacific/Auckland', ms(AT) - 300_000)).toBe('2026-12-07 14:03:27 UTC+13 (in 5 min)');
    expect(whenText(null, 'UTC', ms(AT))).toBe('-');
    expect(whenText(new Date(Number.NaN), 'UTC', ms(AT))).toBe(INVALID_TIME);
  });
});
